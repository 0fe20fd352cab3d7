/* render.c: a RayCluster (or a Job, JobSet, LWS) through the engine, then
 * its pods, offline.
 *
 * Each object goes to the engine's policy for its route in process (as
 * wh_engine_decide dispatches it) inside the same AdmissionReview request
 * the API server would send; the decision comes back as data (the patch a
 * cJSON array, a RayCluster's problems and warnings per group), so nothing
 * is printed and parsed again. Only the response encoding (base64 JSON
 * Patch) is left out, which the engine's own tests cover. */
#include "wh/render.h"

#include <stdint.h> /* INT32_MIN, INT32_MAX */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp, strdup */

#include "wh/decision.h"          /* struct wh_decision */
#include "wh/engine.h"            /* enum wh_route */
#include "wh/json.h"              /* wh_json_* */
#include "wh/kinds.h"             /* wh_kinds, wh_kind_find, wh_kind_pods_by */
#include "wh/jsonpatch.h"         /* wh_jsonpatch_apply */
#include "wh/mutate.h"            /* wh_mutate_pod */
#include "wh/review.h"            /* wh_review_of_request, wh_review_free */
#include "wh/podspec.h"           /* wh_env_lookup, wh_container_requests_tpu */
#include "wh/render_env.h"        /* wh_render_env_origin */
#include "wh/state.h"             /* wh_memstate */
#include "wh/utf8.h"              /* wh_utf8_trim_cut */
#include "wh/validate.h"          /* wh_validate_raycluster_report */
#include "wh/workload.h"          /* wh_mutate_workload */
#include "wh/workload_validate.h" /* wh_validate_workload_report */
#include "wh/workload_pods.h"     /* wh_workload_pods */

/* What an AdmissionReview says about its object. */
struct kind_info {
    char group[128], version[64];
    const char *kind, *resource;
};

/* From the object's apiVersion and kind; the resource is the API's plural. */
static void kind_info_of(const cJSON *obj, bool pod, struct kind_info *k)
{
    const char *api = pod ? "v1" : wh_json_str0(obj, "apiVersion");
    const char *slash = strchr(api, '/');
    snprintf(k->group, sizeof(k->group), "%.*s", slash ? (int)(slash - api) : 0, api);
    snprintf(k->version, sizeof(k->version), "%s", slash ? slash + 1 : api);
    k->kind = pod ? wh_kinds[WH_ROW_POD].kind : wh_json_str0(obj, "kind");
    /* What is neither a Pod nor a workload is a KubeRay kind's RayCluster. */
    const struct wh_kind_def *def = pod ? &wh_kinds[WH_ROW_POD]
                                    : wh_kind_pods_by(k->kind, WH_PODS_WORKLOAD)
                                        ? wh_kind_find(k->kind)
                                        : &wh_kinds[WH_ROW_RAYCLUSTER];
    k->resource = def->resource;
    if (!pod && !strcmp(k->kind, wh_kinds[WH_ROW_RAYCLUSTER].kind)) {
        snprintf(k->group, sizeof(k->group), "%s", def->group);
        snprintf(k->version, sizeof(k->version), "%s", def->version);
    }
}

/* The request of an AdmissionReview CREATE for obj, as the API server would
 * send it; its "object" refers to obj's members (not a copy), so obj (a JSON
 * object) must outlive it. *out is the caller's (cJSON_Delete). */
static enum wh_err request_of(const cJSON *obj, bool pod, long seq, cJSON **out)
{
    struct kind_info ki;
    kind_info_of(obj, pod, &ki);
    cJSON *req = cJSON_CreateObject();
    cJSON *kind = cJSON_CreateObject(), *res = cJSON_CreateObject(), *ui = cJSON_CreateObject();
    char uid[64];
    snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012ld", seq);
    const cJSON *meta = wh_json_get(obj, "metadata");
    *out = NULL;
    if (!req) {
        cJSON_Delete(kind);
        cJSON_Delete(res);
        cJSON_Delete(ui);
        return WH_ERR_NOMEM;
    }
    bool bad = wh_json_set(req, "kind", kind) != WH_OK; /* each takes its item, always */
    bad |= wh_json_set(req, "resource", res) != WH_OK;
    bad |= wh_json_set(req, "userInfo", ui) != WH_OK;
    if (bad || wh_json_set_str(req, "uid", uid) || wh_json_set_str(kind, "group", ki.group) ||
        wh_json_set_str(kind, "version", ki.version) || wh_json_set_str(kind, "kind", ki.kind) ||
        wh_json_set_str(res, "group", ki.group) || wh_json_set_str(res, "version", ki.version) ||
        wh_json_set_str(res, "resource", ki.resource) ||
        wh_json_set_str(ui, "username", "system:serviceaccount:ray-system:kuberay-operator") ||
        wh_json_set_str(req, "name", pod ? "" : wh_json_str0(meta, "name")) ||
        wh_json_set_str(req, "namespace", wh_json_str0(meta, "namespace")) ||
        wh_json_set_str(req, "operation", "CREATE") ||
        wh_json_set(req, "object", cJSON_CreateObjectReference(obj->child)) ||
        wh_json_set(req, "dryRun", cJSON_CreateFalse())) {
        cJSON_Delete(req);
        return WH_ERR_NOMEM;
    }
    *out = req;
    return WH_OK;
}

/* Decide about obj with the engine's policy for route, as wh_engine_decide
 * does for the same request; report (may be NULL) gets the findings of a
 * RayCluster's validation, wl (may be NULL) a workload's problems. d must be
 * initialised. */
static enum wh_err decide(const cJSON *obj, enum wh_route route, long seq,
                          const struct wh_state *st, struct wh_decision *d,
                          struct wh_validation *report, struct wh_violations *wl, char *errbuf)
{
    cJSON *req = NULL;
    bool pod = route == WH_ROUTE_MUTATE || route == WH_ROUTE_MUTATE_WORKLOAD;
    enum wh_err err = request_of(obj, pod, seq, &req);
    if (err)
        return wh_fail(errbuf, err, "out of memory building the admission request");
    struct wh_review *rv = NULL;
    if ((err = wh_review_of_request(req, &rv))) {
        cJSON_Delete(req);
        return wh_fail(errbuf, err, "out of memory building the admission request");
    }
    switch (route) {
    case WH_ROUTE_MUTATE: err = wh_mutate_pod(rv, st, d, errbuf); break;
    case WH_ROUTE_MUTATE_WORKLOAD: err = wh_mutate_workload(rv, st, d, errbuf); break;
    case WH_ROUTE_VALIDATE_WORKLOAD:
        err = wh_validate_workload_report(rv, st, d, wl, errbuf);
        break;
    default: err = wh_validate_raycluster_report(rv, st, d, report, errbuf); break;
    }
    wh_review_free(rv);
    cJSON_Delete(req);
    return err;
}

/* An empty state for validation (no TPU nodes known, as in a fresh CI run). */
static enum wh_err with_empty_state(struct wh_memstate **ms, struct wh_state *st, char *errbuf)
{
    *ms = wh_memstate_new();
    if (!*ms)
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    *st = wh_memstate_view(*ms);
    return WH_OK;
}

/* ---- CRD schema types ------------------------------------------------ */

/* The API server checks a RayCluster against the CRD's OpenAPI schema
 * before any webhook sees it, so a worker group field of the wrong type
 * ("numOfHosts: \"2\"") never reaches the engine in a cluster. Offline, the
 * engine would read such a field as absent and give a misleading reason
 * ("numOfHosts is 0"); say what the API server would say instead. */

static const char *json_type(const cJSON *v)
{
    return cJSON_IsString(v)   ? "a string"
           : cJSON_IsNumber(v) ? "a number"
           : cJSON_IsBool(v)   ? "a boolean"
           : cJSON_IsArray(v)  ? "a list"
           : cJSON_IsObject(v) ? "a mapping"
                               : "null";
}

/* "spec" or, for a cluster made from a RayJob/RayService, its embedded spec. */
static const char *spec_path(const cJSON *cluster)
{
    const char *from = wh_json_str0(wh_json_path(cluster, "metadata", "labels", NULL),
                                    WH_KIND_ORIGIN_LABEL);
    const struct wh_kind_def *def = wh_kind_find(from);
    return def && def->pods == WH_PODS_KUBERAY && def->cluster_spec ? def->cluster_spec : "spec";
}

static enum wh_err type_error(const cJSON *cluster, const char *field, const cJSON *v,
                              const char *want, const char *fix, char *errbuf)
{
    char *text = cJSON_PrintUnformatted(v);
    enum wh_err err = wh_fail(errbuf, WH_ERR_INVALID,
                              "%s.%s is %.60s (%s) where the RayCluster CRD wants %s; the API "
                              "server would refuse the object: %s",
                              spec_path(cluster), field, text ? text : "?", json_type(v), want, fix);
    cJSON_free(text);
    return err;
}

static enum wh_err group_types(const cJSON *cluster, const cJSON *g, int i, char *errbuf)
{
    char field[96];
    if (!cJSON_IsObject(g)) {
        snprintf(field, sizeof(field), "workerGroupSpecs[%d]", i);
        return type_error(cluster, field, g, "a mapping", "write the group as key: value pairs",
                          errbuf);
    }
    static const char *const ints[] = {"replicas", "minReplicas", "maxReplicas", "numOfHosts"};
    for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++) {
        const cJSON *v = wh_json_get(g, ints[k]);
        if (!v || cJSON_IsNull(v))
            continue;
        long n;
        if (wh_json_whole(v, INT32_MIN, INT32_MAX, &n))
            continue;
        snprintf(field, sizeof(field), "workerGroupSpecs[%d].%s", i, ints[k]);
        return type_error(cluster, field, v, "a whole number (int32)",
                          "write it as a plain number without quotes, e.g. 2", errbuf);
    }
    const cJSON *v = wh_json_get(g, "groupName");
    if (v && !cJSON_IsString(v)) {
        snprintf(field, sizeof(field), "workerGroupSpecs[%d].groupName", i);
        return type_error(cluster, field, v, "a string", "quote the name", errbuf);
    }
    v = wh_json_get(g, "suspend");
    if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v)) {
        snprintf(field, sizeof(field), "workerGroupSpecs[%d].suspend", i);
        return type_error(cluster, field, v, "true or false", "write true or false unquoted",
                          errbuf);
    }
    return WH_OK;
}

static enum wh_err schema_types(const cJSON *cluster, char *errbuf)
{
    const cJSON *spec = wh_json_get(cluster, "spec");
    const cJSON *groups = wh_json_get(spec, "workerGroupSpecs");
    if (!groups || cJSON_IsNull(groups))
        return WH_OK;
    if (!cJSON_IsArray(groups))
        return type_error(cluster, "workerGroupSpecs", groups, "a list",
                          "write each worker group as a list item (- groupName: ...)", errbuf);
    int i = 0;
    for (const cJSON *g = groups->child; g; g = g->next, i++)
        WH_TRY(group_types(cluster, g, i, errbuf));
    return WH_OK;
}

/* The engine's verdict on obj on a validating route. */
static enum wh_err verdict_of(const cJSON *obj, enum wh_route route, struct wh_render_verdict *v,
                              char *errbuf)
{
    struct wh_memstate *ms = NULL;
    struct wh_state st;
    struct wh_decision d;
    wh_decision_init(&d);
    enum wh_err err = with_empty_state(&ms, &st, errbuf);
    if (!err)
        err = decide(obj, route, 0, &st, &d, &v->findings, &v->problems, errbuf);
    if (err)
        goto out;
    v->allowed = d.allowed;
    if (!d.allowed && !(v->message = strdup(d.message ? d.message : "denied")))
        err = WH_ERR_NOMEM;
    v->warnings = d.warnings ? d.warnings : cJSON_CreateArray();
    d.warnings = NULL;
    if (!v->warnings)
        err = WH_ERR_NOMEM;
out:
    if (err) {
        wh_render_verdict_free(v);
        if (err == WH_ERR_NOMEM)
            wh_fail(errbuf, err, "out of memory validating the %s", wh_json_str0(obj, "kind"));
    }
    wh_decision_free(&d);
    wh_memstate_free(ms);
    return err;
}

enum wh_err wh_render_validate(const cJSON *cluster, struct wh_render_verdict *v, char *errbuf)
{
    memset(v, 0, sizeof(*v));
    WH_TRY(schema_types(cluster, errbuf));
    return verdict_of(cluster, WH_ROUTE_VALIDATE, v, errbuf);
}

void wh_render_verdict_free(struct wh_render_verdict *v)
{
    if (!v)
        return;
    free(v->message);
    cJSON_Delete(v->warnings);
    wh_validation_free(&v->findings);
    wh_violations_free(&v->problems);
    memset(v, 0, sizeof(*v));
}

/* Admit every pod in order on route; a denial stops the walk. */
/* Apply the patch of an allowed decision to *pod: its text parsed back into
 * a tree, here offline only (the engine writes it as text, patch.h). */
static enum wh_err apply_patch(cJSON **pod, const struct wh_decision *d, char *errbuf)
{
    cJSON *ops = NULL;
    enum wh_err err = wh_json_parse(wh_buf_ptr(&d->patch), wh_buf_len(&d->patch), &ops, errbuf);
    if (!err)
        err = wh_jsonpatch_apply(pod, ops, errbuf);
    cJSON_Delete(ops);
    return err;
}

/* The origins of a workload pod's TPU variables (render_env.h). */
static enum wh_err add_origin(struct wh_render_result *out, const cJSON *before, const cJSON *after,
                              const cJSON *warnings)
{
    if (!out->origins && !(out->origins = cJSON_CreateArray()))
        return WH_ERR_NOMEM;
    cJSON *rec;
    enum wh_err err = wh_render_env_origin(before, after, warnings, &rec);
    return err ? err : wh_json_add(out->origins, rec);
}

static enum wh_err admit_pods(cJSON *pods, enum wh_route route, struct wh_render_result *out,
                              char *errbuf)
{
    struct wh_memstate *ms = wh_memstate_new();
    if (!ms)
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    enum wh_err err = WH_OK;
    long seq = 1;
    for (cJSON *p = pods->child; p && !err; p = p->next, seq++) {
        struct wh_state st = wh_memstate_view(ms);
        struct wh_decision d;
        wh_decision_init(&d);
        err = decide(p, route, seq, &st, &d, NULL, NULL, errbuf);
        if (err) {
            wh_decision_free(&d);
            break;
        }
        if (!d.allowed) {
            char msg[WH_ERRBUF_LEN * 4];
            const cJSON *meta = wh_json_get(p, "metadata");
            const char *who = route == WH_ROUTE_MUTATE
                                  ? wh_json_str0(wh_json_get(meta, "labels"), "ray.io/group")
                                  : wh_meta_name(meta);
            snprintf(msg, sizeof(msg), "%s pod %ld (%s %s) denied: %s",
                     route == WH_ROUTE_MUTATE ? "worker" : "the", seq,
                     route == WH_ROUTE_MUTATE ? "group" : "pod", who,
                     d.message ? d.message : "no reason given");
            wh_utf8_trim_cut(msg, sizeof(msg)); /* snprintf may split a character */
            out->pod_denial = strdup(msg);
            out->pod_denial_group = strdup(who);
            if (!out->pod_denial || !out->pod_denial_group)
                err = WH_ERR_NOMEM;
        } else {
            /* Replace p in the list by its patched copy. */
            cJSON *pod = cJSON_Duplicate(p, 1);
            err = pod ? WH_OK : WH_ERR_NOMEM;
            if (!err && d.n_ops > 0)
                err = apply_patch(&pod, &d, errbuf);
            if (!err && route == WH_ROUTE_MUTATE_WORKLOAD)
                err = add_origin(out, p, pod, d.warnings);
            if (!err)
                err = wh_memstate_add_pods(ms, pod, NULL, errbuf);
            if (!err && !cJSON_ReplaceItemViaPointer(pods, p, pod))
                err = WH_ERR_NOMEM;
            if (err)
                cJSON_Delete(pod);
            else
                p = pod;
        }
        wh_decision_free(&d);
        if (out->pod_denial)
            break;
    }
    wh_memstate_free(ms);
    return err;
}

enum wh_err wh_render_admit_pod(const cJSON *pod, enum wh_route route, const struct wh_state *st,
                                cJSON **out, char **denial, char *errbuf)
{
    *out = NULL;
    *denial = NULL;
    struct wh_decision d;
    wh_decision_init(&d);
    enum wh_err err = decide(pod, route, 1, st, &d, NULL, NULL, errbuf);
    if (!err && !d.allowed) {
        *denial = strdup(d.message ? d.message : "no reason given");
        err = *denial ? WH_OK : WH_ERR_NOMEM;
    } else if (!err) {
        *out = cJSON_Duplicate(pod, 1);
        err = *out ? WH_OK : WH_ERR_NOMEM;
        if (!err && d.n_ops > 0)
            err = apply_patch(out, &d, errbuf);
        if (err) {
            cJSON_Delete(*out);
            *out = NULL;
        }
    }
    wh_decision_free(&d);
    return err;
}

/* ---- generateName ----------------------------------------------------- */

/* The API server names an object with generateName when it stores it:
 * generateName cut to 58 bytes, then 5 random characters. The placeholder
 * has the real name's length, so every rule on the length is judged. */
#define GENERATED_MAX_PREFIX 58
#define GENERATED_PLACEHOLDER "xxxxx"
#define NOTE_FIELDS_MAX 16 /* fields a note names, then "..." */

enum wh_err wh_render_generated_name(const cJSON *obj, cJSON **named, char *errbuf)
{
    *named = NULL;
    const cJSON *meta = wh_json_get(obj, "metadata");
    const char *gen = wh_json_str(meta, "generateName");
    if (*wh_json_str0(meta, "name") || !gen || !*gen)
        return WH_OK;
    char name[GENERATED_MAX_PREFIX + sizeof(GENERATED_PLACEHOLDER)];
    snprintf(name, sizeof(name), "%.58s%s", gen, GENERATED_PLACEHOLDER);
    cJSON *copy = cJSON_Duplicate(obj, 1);
    cJSON *m = copy ? cJSON_GetObjectItemCaseSensitive(copy, "metadata") : NULL;
    if (!m || wh_json_set_str(m, "name", name)) {
        cJSON_Delete(copy);
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    }
    *named = copy;
    return WH_OK;
}

/* Add to found (unique, at most NOTE_FIELDS_MAX; *more past that) the
 * field of every string under x that holds needle: path is x's field,
 * array items are [], an env entry is "env NAME". */
static enum wh_err fields_with(const cJSON *x, const char *needle, const char *path, cJSON *found,
                               bool *more)
{
    if (cJSON_IsString(x)) {
        if (!strstr(x->valuestring, needle))
            return WH_OK;
        for (const cJSON *f = found->child; f; f = f->next)
            if (!strcmp(f->valuestring, path))
                return WH_OK;
        if (cJSON_GetArraySize(found) >= NOTE_FIELDS_MAX) {
            *more = true;
            return WH_OK;
        }
        return wh_json_add(found, cJSON_CreateString(path));
    }
    size_t used = strlen(path), dots = 0;
    for (const char *q = path; *q; q++)
        dots += *q == '.';
    bool env = cJSON_IsArray(x) && used >= 3 && !strcmp(path + used - 3, "env");
    /* An env entry, or a field three deep, names all that is under it. */
    bool whole = !strncmp(path, "env ", 4) || (dots >= 2 && !env);
    char sub[512];
    for (const cJSON *c = x ? x->child : NULL; c; c = c->next) {
        const char *name = wh_json_str(c, "name");
        int n = whole              ? snprintf(sub, sizeof(sub), "%s", path)
                : env && name      ? snprintf(sub, sizeof(sub), "env %s", name)
                : cJSON_IsArray(x) ? snprintf(sub, sizeof(sub), "%s[]", path)
                : strpbrk(c->string, "./")
                    ? snprintf(sub, sizeof(sub), "%s[%s]", path, c->string)
                    : snprintf(sub, sizeof(sub), "%s%s%s", path, used ? "." : "", c->string);
        if (n < 0 || (size_t)n >= sizeof(sub))
            continue; /* a field too long to name is left out */
        WH_TRY(fields_with(c, needle, sub, found, more));
    }
    return WH_OK;
}

enum wh_err wh_render_generated_note(const cJSON *named, const cJSON *pods, cJSON **notes)
{
    const cJSON *meta = wh_json_get(named, "metadata");
    const char *name = wh_json_str0(meta, "name");
    cJSON *found = cJSON_CreateArray();
    bool more = false;
    struct wh_buf b;
    wh_buf_init(&b, 64 * 1024);
    enum wh_err err = found ? WH_OK : WH_ERR_NOMEM;
    for (const cJSON *p = pods ? pods->child : NULL; !err && p; p = p->next)
        err = fields_with(p, name, "", found, &more);
    if (!err)
        err = wh_buf_addf(&b,
                          "metadata.generateName is \"%s\": the API server names the %s when "
                          "it is created (kubectl create, not apply), so it is shown as \"%s\", "
                          "a placeholder as long as the name will be; what depends on the name "
                          "is not known yet: ",
                          wh_json_str0(meta, "generateName"), wh_json_str0(named, "kind"), name);
    for (const cJSON *f = found ? found->child : NULL; !err && f; f = f->next)
        err = wh_buf_addf(&b, "%s%s", f == found->child ? "" : ", ", f->valuestring);
    if (!err && (!found->child || more))
        err = wh_buf_add(&b, found->child ? ", ..." : "the names and addresses of its pods");
    if (!err && !*notes && !(*notes = cJSON_CreateArray()))
        err = WH_ERR_NOMEM;
    if (!err)
        err = wh_json_add(*notes, cJSON_CreateString(wh_buf_ptr(&b)));
    wh_buf_free(&b);
    cJSON_Delete(found);
    return err;
}

/* What obj's controller does not create because spec.suspend is true
 * (kinds.h); NULL when it is not suspended. */
static const char *suspended(const cJSON *obj)
{
    const struct wh_kind_def *def = wh_kind_find(wh_json_str(obj, "kind"));
    bool on = def && def->suspended && cJSON_IsTrue(wh_json_path(obj, "spec", "suspend", NULL));
    return on ? def->suspended : NULL;
}

static enum wh_err add_note(struct wh_render_result *out, const char *text)
{
    if (!out->notes && !(out->notes = cJSON_CreateArray()))
        return WH_ERR_NOMEM;
    return wh_json_add(out->notes, cJSON_CreateString(text));
}

/* A suspended obj's controller creates none of *pods until it is resumed:
 * the pods were judged as created then; render shows none, and says so. */
static enum wh_err drop_suspended(const cJSON *obj, cJSON **pods, struct wh_render_result *out)
{
    const char *what = suspended(obj);
    if (!what)
        return WH_OK;
    char note[512];
    snprintf(note, sizeof(note),
             "spec.suspend is true: %s while it is, and render shows none; it judged the %d "
             "pod(s) created once it is false (as Kueue sets it on admission)",
             what, *pods ? cJSON_GetArraySize(*pods) : 0);
    cJSON *none = cJSON_CreateArray();
    if (!none)
        return WH_ERR_NOMEM;
    cJSON_Delete(*pods);
    *pods = none;
    cJSON_Delete(out->origins);
    out->origins = NULL;
    return add_note(out, note);
}

/* KubeRay 1.1+ (ValidateRayJobSpec) fails a suspended RayJob whose
 * spec.shutdownAfterJobFinishes is not true: the RayJob goes to
 * ValidationFailed, a state its controller never leaves, so no RayCluster
 * is created, now or after a resume. WH_ERR_INVALID saying so. */
static enum wh_err rayjob_never_runs(const cJSON *obj, const struct wh_kuberay_opts *opts,
                                     char *errbuf)
{
    const cJSON *spec = wh_json_get(obj, "spec");
    if (strcmp(wh_json_str0(obj, "kind"), wh_kinds[WH_ROW_RAYJOB].kind) ||
        !cJSON_IsTrue(wh_json_get(spec, "suspend")) ||
        cJSON_IsTrue(wh_json_get(spec, "shutdownAfterJobFinishes")) ||
        (opts->major == 1 && opts->minor < 1))
        return WH_OK;
    return wh_fail(errbuf, WH_ERR_INVALID,
                   "spec.suspend is true and spec.shutdownAfterJobFinishes is not: KubeRay "
                   "1.1+ refuses to suspend such a RayJob (status ValidationFailed, which it "
                   "never leaves) and creates no RayCluster, even once resumed; set "
                   "spec.shutdownAfterJobFinishes to true");
}

enum wh_err wh_render_object(const cJSON *given, const struct wh_kuberay_opts *opts,
                             struct wh_render_result *out, char *errbuf)
{
    memset(out, 0, sizeof(*out));
    cJSON *pods = NULL, *named = NULL;
    bool noted = false;
    enum wh_err err = wh_render_generated_name(given, &named, errbuf);
    const cJSON *obj = named ? named : given;
    if (!err)
        err = wh_kuberay_cluster_of(obj, &out->cluster, errbuf);
    if (!err && (err = wh_kuberay_apply_defaults(out->cluster)))
        wh_fail(errbuf, err, "out of memory");
    if (!err)
        err = wh_render_validate(out->cluster, &out->verdict, errbuf);
    if (err || !out->verdict.allowed)
        goto out;
    /* KubeRay 1.4+ validates the name itself (MaxRayClusterNameLength,
     * sized so "<name>-headless" and "-serve-svc" fit in 63) and creates no
     * pods for a longer one, whatever the webhook said. */
    const char *name = wh_json_str0(wh_json_get(out->cluster, "metadata"), "name");
    if (!strcmp(wh_json_str0(obj, "kind"), wh_kinds[WH_ROW_RAYCLUSTER].kind) &&
        (opts->major > 1 || opts->minor >= 4) && strlen(name) > 53) {
        err = wh_fail(errbuf, WH_ERR_INVALID,
                      "metadata.%s \"%.80s%s\" is %zu characters; KubeRay 1.4+ refuses "
                      "RayCluster names over 53 and creates no pods: shorten the %s",
                      named ? "name (from generateName)" : "name", name,
                      strlen(name) > 80 ? "..." : "", strlen(name),
                      named ? "generateName to at most 48" : "name");
        goto out;
    }
    if ((err = rayjob_never_runs(obj, opts, errbuf)))
        goto out;
    err = wh_kuberay_worker_pods(out->cluster, opts, &pods, errbuf);
    if (!err)
        err = admit_pods(pods, WH_ROUTE_MUTATE, out, errbuf);
    if (!err && named && !out->pod_denial && (noted = true))
        err = wh_render_generated_note(named, pods, &out->notes);
    if (!err)
        err = drop_suspended(obj, &pods, out);
    if (!err && !out->pod_denial) {
        out->pods = pods;
        pods = NULL;
    }
out:
    if (!err && named && !noted)
        err = wh_render_generated_note(named, NULL, &out->notes);
    cJSON_Delete(pods);
    cJSON_Delete(named);
    if (err)
        wh_render_result_free(out);
    return err;
}

enum wh_err wh_render_workload(const cJSON *obj, struct wh_render_result *out, char *errbuf)
{
    memset(out, 0, sizeof(*out));
    cJSON *pods = NULL, *named = NULL;
    bool noted = false;
    enum wh_err err = wh_render_generated_name(obj, &named, errbuf);
    bool generated = named != NULL; /* out->cluster takes it */
    if (!err && !(out->cluster = named ? named : cJSON_Duplicate(obj, 1)))
        err = WH_ERR_NOMEM;
    cJSON *meta = err ? NULL : cJSON_GetObjectItemCaseSensitive(out->cluster, "metadata");
    if (!err && cJSON_IsObject(meta) && !*wh_json_str0(meta, "namespace"))
        err = wh_json_set_str(meta, "namespace", "default");
    if (err)
        wh_fail(errbuf, err, "out of memory");
    if (!err)
        err = verdict_of(out->cluster, WH_ROUTE_VALIDATE_WORKLOAD, &out->verdict, errbuf);
    if (!err && out->verdict.allowed)
        err = wh_workload_pods(out->cluster, &pods, errbuf);
    if (!err && pods)
        err = admit_pods(pods, WH_ROUTE_MUTATE_WORKLOAD, out, errbuf);
    if (!err && generated && pods && !out->pod_denial && (noted = true))
        err = wh_render_generated_note(out->cluster, pods, &out->notes);
    if (!err && generated && !noted)
        err = wh_render_generated_note(out->cluster, NULL, &out->notes);
    if (!err && pods)
        err = drop_suspended(obj, &pods, out);
    if (!err && pods && !out->pod_denial) {
        out->pods = pods;
        pods = NULL;
    }
    cJSON_Delete(pods);
    if (err)
        wh_render_result_free(out);
    return err;
}

void wh_render_result_free(struct wh_render_result *r)
{
    if (!r)
        return;
    cJSON_Delete(r->origins);
    cJSON_Delete(r->notes);
    cJSON_Delete(r->cluster);
    wh_render_verdict_free(&r->verdict);
    cJSON_Delete(r->pods);
    free(r->pod_denial);
    free(r->pod_denial_group);
    memset(r, 0, sizeof(*r));
}

/* ---- summary ----------------------------------------------------------- */

static size_t list_size(const char *s)
{
    if (!s || !*s || !strcmp(s, "-"))
        return 0;
    size_t n = 1;
    for (; *s; s++)
        n += *s == ',';
    return n;
}

struct pod_facts {
    const char *group, *hostname, *tpu_name;
    char ids[128];
    size_t hostnames, processes;
    bool tpu;
};

static void facts_of(const cJSON *pod, struct pod_facts *f)
{
    memset(f, 0, sizeof(*f));
    f->group = wh_json_str0(wh_json_path(pod, "metadata", "labels", NULL), "ray.io/group");
    f->hostname = wh_json_str(wh_json_get(pod, "spec"), "hostname");
    const cJSON *cs = wh_json_path(pod, "spec", "containers", NULL);
    size_t used = 0;
    for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next) {
        if (!wh_container_requests_tpu(c))
            continue;
        const cJSON *env = wh_json_get(c, "env");
        struct wh_env_lookup id, name, hosts, procs;
        wh_env_lookup(env, "TPU_WORKER_ID", &id);
        wh_env_lookup(env, "TPU_NAME", &name);
        wh_env_lookup(env, "TPU_WORKER_HOSTNAMES", &hosts);
        wh_env_lookup(env, "TPU_PROCESS_ADDRESSES", &procs);
        int n = snprintf(f->ids + used, sizeof(f->ids) - used, "%s%s", f->tpu ? "," : "",
                         id.exists ? id.value : "-");
        if (n > 0 && (size_t)n < sizeof(f->ids) - used)
            used += (size_t)n;
        if (!f->tpu) {
            f->tpu_name = name.exists ? name.value : NULL;
            f->hostnames = list_size(hosts.value);
            f->processes = list_size(procs.value);
        }
        f->tpu = true;
    }
}

/* Value of env name in the first TPU container of pod, "-" when unset. */
static const char *tpu_env(const cJSON *pod, const char *name)
{
    const cJSON *cs = wh_json_path(pod, "spec", "containers", NULL);
    for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next) {
        if (!wh_container_requests_tpu(c))
            continue;
        struct wh_env_lookup lk;
        wh_env_lookup(wh_json_get(c, "env"), name, &lk);
        return lk.exists && *lk.value ? lk.value : "-";
    }
    return NULL;
}

/* The pods of a Job, JobSet or LWS: one line each with the identity and
 * TorchTPU/torchrun values the webhook gave (or found) in its first TPU
 * container. */
static enum wh_err workload_summary(const struct wh_render_result *r, struct wh_buf *out)
{
    const cJSON *meta = wh_json_get(r->cluster, "metadata");
    enum wh_err err = wh_buf_addf(out, "%s %s/%s: %s, %d pod(s)\n", wh_json_str0(r->cluster, "kind"),
                                  wh_json_str0(meta, "namespace"), wh_json_str0(meta, "name"),
                                  r->verdict.allowed ? "allowed" : "DENIED",
                                  cJSON_GetArraySize(r->pods));
    if (!err)
        err = wh_buf_addf(out, "  %-4s %-32s %-9s %-9s %-9s %-6s %-6s %-10s %s\n", "pod",
                          "hostname", "WORKER_ID", "hostnames", "SLICE_ID", "NNODES", "RANK",
                          "TORCH_TOPO", "slicebuilder");
    int seq = 0;
    for (const cJSON *p = r->pods ? r->pods->child : NULL; p && !err; p = p->next, seq++) {
        const char *id = tpu_env(p, "TPU_WORKER_ID");
        const char *host = wh_json_str(wh_json_get(p, "spec"), "hostname");
        if (!id) {
            err = wh_buf_addf(out, "  %-4d %-32s (no TPU requested: not mutated)\n", seq,
                              host ? host : "-");
            continue;
        }
        err = wh_buf_addf(out, "  %-4d %-32s %-9s %-9zu %-9s %-6s %-6s %-10s %zu\n", seq,
                          host ? host : "-", id, list_size(tpu_env(p, "TPU_WORKER_HOSTNAMES")),
                          tpu_env(p, "MEGASCALE_SLICE_ID"), tpu_env(p, "PET_NNODES"),
                          tpu_env(p, "PET_NODE_RANK"), tpu_env(p, "TORCH_TPU_TOPOLOGY"),
                          list_size(tpu_env(p, "TORCH_TPU_SLICEBUILDER_ADDRESSES")));
    }
    return err;
}

enum wh_err wh_render_summary(const struct wh_render_result *r, struct wh_buf *out)
{
    if (wh_kind_pods_by(wh_json_str(r->cluster, "kind"), WH_PODS_WORKLOAD))
        return workload_summary(r, out);
    const char *name = wh_json_str0(wh_json_get(r->cluster, "metadata"), "name");
    const char *ns = wh_json_str0(wh_json_get(r->cluster, "metadata"), "namespace");
    enum wh_err err = wh_buf_addf(out, "RayCluster %s/%s: %s, %d worker pod(s)\n", ns, name,
                                  r->verdict.allowed ? "allowed" : "DENIED",
                                  cJSON_GetArraySize(r->pods));
    if (err)
        return err;
    const char *last_group = "", *last_name = NULL;
    int seq = 0;
    for (const cJSON *p = r->pods ? r->pods->child : NULL; p && !err; p = p->next, seq++) {
        struct pod_facts f;
        facts_of(p, &f);
        if (strcmp(f.group, last_group)) {
            err = wh_buf_addf(out, "  group %s\n", f.group);
            last_name = NULL;
        }
        if (!err && f.tpu && (!last_name || strcmp(last_name, f.tpu_name ? f.tpu_name : ""))) {
            err = wh_buf_addf(out,
                              "    replica TPU_NAME=%s\n"
                              "      %-4s %-32s %-14s %-10s %s\n",
                              f.tpu_name ? f.tpu_name : "(unset)", "pod", "hostname",
                              "TPU_WORKER_ID", "hostnames", "process-addresses");
        }
        if (!err && f.tpu)
            err = wh_buf_addf(out, "      %-4d %-32s %-14s %-10zu %zu\n", seq,
                              f.hostname ? f.hostname : "-", f.ids, f.hostnames, f.processes);
        else if (!err)
            err = wh_buf_addf(out, "      %-4d (no TPU requested: not mutated)\n", seq);
        last_group = f.group;
        last_name = f.tpu_name ? f.tpu_name : "";
    }
    return err;
}
