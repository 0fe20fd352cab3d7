/* check.c: one table row per TPU worker group of every Ray manifest. */
#include "wh/check.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp, strncmp */

#include "wh/decision.h"      /* WH_WARNINGS_MAX */
#include "wh/json.h"          /* wh_json_* */
#include "wh/kuberay.h"       /* wh_kuberay_cluster_of, wh_kuberay_apply_defaults */
#include "wh/podspec.h"       /* wh_container_tpu, wh_slice_topology, WH_SEL_* */
#include "wh/render.h"        /* wh_render_validate */
#include "wh/validate.h"      /* struct wh_validation */
#include "wh/topology.h"      /* wh_topology_parse, wh_topology_hosts */
#include "wh/kinds.h"         /* wh_kind_find, wh_kind_pods_by */
#include "wh/workload_pods.h" /* wh_workload_template_requests_tpu */
#include "wh/doctor.h"        /* wh_doctor_service_warnings, wh_doctor_collect_services */
#include "wh/strict.h"        /* wh_strict_object */
#include "wh/yaml.h"          /* wh_yaml_load_at */

/* Where the row is from. */
struct origin {
    const char *file;
    unsigned line;
    const char *kind, *name, *cluster;
};

static cJSON *new_row(const struct origin *o, const char *group)
{
    cJSON *r = cJSON_CreateObject();
    if (!r || wh_json_set_str(r, "file", o->file) ||
        wh_json_set(r, "line", cJSON_CreateNumber(o->line)) ||
        wh_json_set_str(r, "kind", o->kind ? o->kind : "") ||
        wh_json_set_str(r, "name", o->name ? o->name : "") ||
        wh_json_set_str(r, "cluster", o->cluster ? o->cluster : "") ||
        wh_json_set_str(r, "group", group)) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

/* Row r gets "notes" (copies of notes' strings) when there are any: what
 * the row's object does that is no warning (a suspended object's pods). */
static enum wh_err add_notes(cJSON *r, const cJSON *notes)
{
    if (!r || !cJSON_IsArray(notes) || !notes->child)
        return WH_OK;
    cJSON *copy = cJSON_Duplicate(notes, 1);
    return copy ? wh_json_set(r, "notes", copy) : WH_ERR_NOMEM;
}

static enum wh_err finish_row(cJSON *rows, cJSON *r, struct wh_check_stats *st, const char *verdict,
                              const char *message, cJSON *warnings)
{
    if (!r) {
        cJSON_Delete(warnings);
        return WH_ERR_NOMEM;
    }
    if (wh_json_set_str(r, "verdict", verdict) || wh_json_set_str(r, "message", message) ||
        wh_json_set(r, "warnings", warnings ? warnings : cJSON_CreateArray())) {
        cJSON_Delete(r);
        return WH_ERR_NOMEM;
    }
    st->rows++;
    st->rejected += !strcmp(verdict, "rejected");
    st->errors += !strcmp(verdict, "error");
    st->strict += !strcmp(verdict, "strict");
    st->unchecked += !strcmp(verdict, "not-checked");
    return wh_json_add(rows, r);
}

enum wh_err wh_check_error_row(cJSON *rows, struct wh_check_stats *st, const char *file,
                               unsigned line, const char *message)
{
    struct origin o = {file, line, "", "", ""};
    return finish_row(rows, new_row(&o, "-"), st, "error", message, NULL);
}

/* ---- fixes ------------------------------------------------------------ */

/* One edit of a fix as data: {"field", "pointer", "value"} ("value" a
 * number or a string), with "tpuChipsPerPod": true when the pointer is a
 * pod template whose TPU containers' google.com/tpu (requests and limits,
 * split evenly over them) make value chips per pod. root: the pointer of
 * the RayCluster spec in the document ("/spec/rayClusterSpec" in a RayJob),
 * NULL when the pointers are the document's already. */
static cJSON *edit_json(const struct wh_edit *e, const char *root)
{
    char ptr[320];
    if (root && !strncmp(e->pointer, "/spec", 5))
        snprintf(ptr, sizeof(ptr), "%s%s", root, e->pointer + 5);
    else
        snprintf(ptr, sizeof(ptr), "%s", e->pointer);
    cJSON *x = cJSON_CreateObject();
    if (!x || wh_json_set_str(x, "field", e->field) || wh_json_set_str(x, "pointer", ptr) ||
        wh_json_set(x, "value",
                    e->kind == WH_EDIT_STRING ? cJSON_CreateString(e->text)
                                              : cJSON_CreateNumber((double)e->number)) ||
        (e->kind == WH_EDIT_CHIPS && wh_json_set(x, "tpuChipsPerPod", cJSON_CreateTrue()))) {
        cJSON_Delete(x);
        return NULL;
    }
    return x;
}

/* A denial's fix (violations.h) as a row shows it: {"problem": message,
 * "options": [[edit, ...], ...]}: each option's edits change together; any
 * one option answers the problem. */
static enum wh_err add_fix(cJSON *fixes, const struct wh_suggestion *s, const char *message,
                           const char *root)
{
    cJSON *f = cJSON_CreateObject(), *opts = cJSON_CreateArray();
    enum wh_err err = f && opts && !wh_json_set_str(f, "problem", message) ? WH_OK : WH_ERR_NOMEM;
    for (size_t o = 0; !err && o < s->n; o++) {
        cJSON *edits = cJSON_CreateArray();
        err = edits ? WH_OK : WH_ERR_NOMEM;
        for (size_t k = 0; !err && k < s->options[o].n; k++)
            err = wh_json_add(edits, edit_json(&s->options[o].edits[k], root));
        if (err)
            cJSON_Delete(edits);
        else
            err = wh_json_add(opts, edits);
    }
    if (err) {
        cJSON_Delete(opts);
        cJSON_Delete(f);
        return err;
    }
    if (wh_json_set(f, "options", opts)) { /* took opts */
        cJSON_Delete(f);
        return WH_ERR_NOMEM;
    }
    return wh_json_add(fixes, f);
}

/* Row r gets "fixes" when fixes holds any (else fixes is freed). */
static enum wh_err set_fixes(cJSON *r, cJSON *fixes)
{
    if (!fixes || !fixes->child) {
        cJSON_Delete(fixes);
        return WH_OK;
    }
    return wh_json_set(r, "fixes", fixes);
}

/* The pointer of the RayCluster spec in a document of kind ("spec" in a
 * RayCluster: NULL, the pointers are its own), into out. */
static const char *cluster_root(const char *kind, char *out, size_t n)
{
    const struct wh_kind_def *def = wh_kind_find(kind);
    if (!def || !def->cluster_spec || !strcmp(def->cluster_spec, "spec"))
        return NULL;
    snprintf(out, n, "/%s", def->cluster_spec);
    for (char *c = out; *c; c++)
        if (*c == '.')
            *c = '/';
    return out;
}

/* The findings by group: group i's are items[order[start[i]]] up to
 * items[order[start[i + 1]]], in the order found (a counting sort, so that
 * the rows of G groups cost G + findings, not G x findings: issue 22). */
struct by_group {
    const struct wh_validation *f;
    size_t *order, *start; /* n_groups + 1 starts */
    int n_groups;
    int own_warnings; /* of every group */
};

static enum wh_err by_group_init(struct by_group *bg, const struct wh_validation *f, int n_groups)
{
    *bg = (struct by_group){.f = f, .n_groups = n_groups};
    bg->order = calloc(f->n ? f->n : 1, sizeof(size_t));
    bg->start = calloc((size_t)n_groups + 2, sizeof(size_t));
    if (!bg->order || !bg->start)
        return WH_ERR_NOMEM;
    for (size_t k = 0; k < f->n; k++) {
        int i = f->items[k].index;
        bg->own_warnings += f->items[k].warning;
        if (i >= 0 && i < n_groups)
            bg->start[i + 2]++;
    }
    for (int i = 0; i < n_groups; i++)
        bg->start[i + 2] += bg->start[i + 1];
    for (size_t k = 0; k < f->n; k++) {
        int i = f->items[k].index;
        if (i >= 0 && i < n_groups)
            bg->order[bg->start[i + 1]++] = k;
    }
    return WH_OK;
}

static void by_group_free(struct by_group *bg)
{
    free(bg->order);
    free(bg->start);
}

/* Group index's k-th finding, NULL past its last. */
static const struct wh_group_finding *finding(const struct by_group *bg, int index, size_t k)
{
    if (index < 0 || index >= bg->n_groups || bg->start[index] + k >= bg->start[index + 1])
        return NULL;
    return &bg->f->items[bg->order[bg->start[index] + k]];
}

static size_t group_problems(const struct by_group *bg, int index)
{
    size_t problems = 0;
    const struct wh_group_finding *x;
    for (size_t k = 0; (x = finding(bg, index, k)); k++)
        problems += !x->warning;
    return problems;
}

/* The denial's text about group index, from the validation's findings:
 * "worker group "g" (spec.workerGroupSpecs[i]): problem[; problem...]". */
static enum wh_err group_message(const struct by_group *bg, int index, struct wh_buf *out)
{
    enum wh_err err = WH_OK;
    bool first = true;
    const struct wh_group_finding *x;
    for (size_t k = 0; !err && (x = finding(bg, index, k)); k++) {
        if (x->warning)
            continue;
        if (first)
            err = wh_buf_addf(out, "worker group \"%s\" (spec.workerGroupSpecs[%d]): %s", x->group,
                              index, x->message);
        else
            err = wh_buf_addf(out, "; %s", x->message);
        first = false;
    }
    return err;
}

/* The fixes of group index's problems, on row r. */
static enum wh_err group_fixes(const struct by_group *bg, int index, const char *root, cJSON *r)
{
    cJSON *fixes = cJSON_CreateArray();
    enum wh_err err = fixes ? WH_OK : WH_ERR_NOMEM;
    const struct wh_group_finding *x;
    for (size_t k = 0; !err && (x = finding(bg, index, k)); k++)
        if (!x->warning && x->suggest)
            err = add_fix(fixes, x->suggest, x->message, root);
    if (err) {
        cJSON_Delete(fixes);
        return err;
    }
    return set_fixes(r, fixes);
}

/* The warnings of group index: its own findings, then those the verdict
 * carries beyond the validation's (a failed render, which concerns every
 * group). */
static cJSON *group_warnings(const struct wh_render_verdict *v, const struct by_group *bg, int index)
{
    cJSON *out = cJSON_CreateArray();
    enum wh_err err = out ? WH_OK : WH_ERR_NOMEM;
    int own = bg->own_warnings;
    const struct wh_group_finding *x;
    for (size_t k = 0; !err && (x = finding(bg, index, k)); k++)
        if (x->warning)
            err = wh_json_add(out, cJSON_CreateString(x->message));
    /* The validation's own in the verdict: WH_WARNINGS_MAX at most, then
     * the "and N more" line. */
    int listed = own > WH_WARNINGS_MAX ? WH_WARNINGS_MAX + 1 : own;
    for (const cJSON *w = cJSON_GetArrayItem(v->warnings, listed); !err && w; w = w->next)
        if (cJSON_IsString(w))
            err = wh_json_add(out, cJSON_CreateString(w->valuestring));
    if (err) {
        cJSON_Delete(out);
        return NULL;
    }
    return out;
}

/* Derived columns of one worker group. */
static enum wh_err group_columns(cJSON *r, const cJSON *group)
{
    const cJSON *tmpl = wh_json_get(group, "template");
    const cJSON *tspec = wh_json_get(tmpl, "spec");
    const cJSON *sel = wh_json_get(tspec, "nodeSelector");
    bool from_annotation;
    const char *topo = wh_slice_topology(tmpl, tspec, &from_annotation);
    long chips = 0;
    const cJSON *cs = wh_json_get(tspec, "containers");
    for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next) {
        struct wh_tpu_request t;
        char ignored[WH_ERRBUF_LEN];
        if (!wh_container_tpu(c, &t, ignored) && t.requests_tpu)
            chips += t.chips;
    }
    struct wh_topology t;
    char ignored[WH_ERRBUF_LEN];
    long expected = topo && !wh_topology_parse(topo, &t, ignored) ? wh_topology_hosts(&t, chips)
                                                                  : -1;
    long replicas, hosts;
    wh_kuberay_group_size(group, &replicas, &hosts);
    const cJSON *noh = wh_json_get(group, "numOfHosts");
    if (wh_json_set_str(r, "accelerator", wh_json_str0(sel, WH_SEL_ACCELERATOR)) ||
        wh_json_set_str(r, "topology", topo ? topo : "") ||
        wh_json_set(r, "chipsPerHost", cJSON_CreateNumber((double)chips)) ||
        wh_json_set(r, "hostsExpected", cJSON_CreateNumber((double)expected)) ||
        wh_json_set(r, "numOfHosts",
                    cJSON_IsNumber(noh) ? cJSON_CreateNumber(noh->valuedouble) : cJSON_CreateNull()) ||
        wh_json_set(r, "replicas", cJSON_CreateNumber((double)replicas)))
        return WH_ERR_NOMEM;
    return WH_OK;
}

static bool is_tpu_group(const cJSON *group)
{
    const cJSON *cs = wh_json_path(group, "template", "spec", "containers", NULL);
    if (!cJSON_IsArray(cs) || !cs->child)
        return true; /* the engine checks (and rejects) a group with no containers */
    char why[WH_ERRBUF_LEN];
    for (const cJSON *c = cs->child; c; c = c->next) {
        struct wh_tpu_request rq; /* a bad quantity counts: the engine denies it */
        if (wh_container_tpu(c, &rq, why) != WH_OK || rq.requests_tpu)
            return true;
    }
    return false;
}

/* Does the denial name any worker group of the cluster? */
static bool names_a_group(const struct wh_render_verdict *v)
{
    for (size_t k = 0; k < v->findings.n; k++)
        if (!v->findings.items[k].warning)
            return true;
    return false;
}

/* A worker pod the engine denied while the cluster itself was allowed. */
struct pod_denial {
    const char *group; /* NULL when none */
    const char *message;
};

static enum wh_err cluster_rows(const struct origin *o, const cJSON *cluster,
                                const struct wh_render_verdict *v, const struct pod_denial *pd,
                                const cJSON *notes, cJSON *rows, struct wh_check_stats *st)
{
    const cJSON *groups = wh_json_path(cluster, "spec", "workerGroupSpecs", NULL);
    if (!cJSON_IsArray(groups))
        groups = NULL;
    bool named = !v->allowed && names_a_group(v);
    size_t before = st->rows;
    int i = 0;
    struct wh_buf part;
    wh_buf_init(&part, 64 * 1024);
    struct by_group bg;
    enum wh_err err = by_group_init(&bg, &v->findings, groups ? cJSON_GetArraySize(groups) : 0);
    for (const cJSON *g = groups ? groups->child : NULL; !err && g; g = g->next, i++) {
        if (!is_tpu_group(g))
            continue;
        const char *gname = wh_json_str0(g, "groupName");
        cJSON *r = new_row(o, gname);
        if (!r || group_columns(r, g) || add_notes(r, notes)) {
            cJSON_Delete(r);
            err = WH_ERR_NOMEM;
            break;
        }
        const char *verdict = "ok", *message = "";
        wh_buf_reset(&part);
        if (!v->allowed && !named) {
            verdict = "rejected"; /* a denial that names no group rejects every row */
            message = v->message ? v->message : "";
        } else if (!v->allowed && group_problems(&bg, i)) {
            char root[64];
            verdict = "rejected";
            err = group_message(&bg, i, &part);
            if (!err)
                err = group_fixes(&bg, i, cluster_root(o->kind, root, sizeof(root)), r);
            message = wh_buf_ptr(&part);
        } else if (v->allowed && pd->group && !strcmp(pd->group, gname)) {
            verdict = "rejected";
            message = pd->message;
        }
        if (err)
            cJSON_Delete(r);
        else
            err = finish_row(rows, r, st, verdict, message, group_warnings(v, &bg, i));
    }
    by_group_free(&bg);
    wh_buf_free(&part);
    if (err)
        return err;
    if ((!v->allowed || pd->group) && st->rows == before) {
        cJSON *r = new_row(o, "-");
        if (add_notes(r, notes)) {
            cJSON_Delete(r);
            return WH_ERR_NOMEM;
        }
        return finish_row(rows, r, st, "rejected",
                          !v->allowed && v->message ? v->message
                          : pd->message             ? pd->message
                                                    : "",
                          cJSON_Duplicate(v->warnings, 1));
    }
    return WH_OK;
}

/* Check one document. */
static enum wh_err check_doc(struct origin *o, const cJSON *doc, cJSON *rows,
                             struct wh_check_stats *st)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *cluster = NULL, *named = NULL;
    struct wh_render_verdict v = {0};
    st->objects++;
    /* A generateName: judged on a placeholder name, as render does. */
    enum wh_err err = wh_render_generated_name(doc, &named, errbuf);
    if (!err)
        err = wh_kuberay_cluster_of(named ? named : doc, &cluster, errbuf);
    if (!err)
        err = wh_kuberay_apply_defaults(cluster);
    if (!err) {
        o->cluster = wh_json_str0(wh_json_get(cluster, "metadata"), "name");
        err = wh_render_validate(cluster, &v, errbuf);
    }
    /* An allowed cluster's pods go through mutation too: the engine can deny
     * a pod (a hostname over 63 characters, ...) that validation lets by. */
    struct wh_render_result r = {0};
    struct pod_denial pd = {NULL, NULL};
    if (!err && v.allowed) {
        char rerr[WH_ERRBUF_LEN] = "";
        struct wh_kuberay_opts ko;
        wh_kuberay_opts_init(&ko, 1, 6);
        enum wh_err e2 = wh_render_object(doc, &ko, &r, rerr);
        if (e2 == WH_ERR_NOMEM)
            err = e2;
        else if (!e2 && r.pod_denial)
            pd = (struct pod_denial){r.pod_denial_group, r.pod_denial};
        else if (e2 && wh_json_add(v.warnings, cJSON_CreateString(rerr)))
            err = WH_ERR_NOMEM; /* rendering failed: say so, the verdict stands */
    }
    if (!err && named && !r.notes) /* not rendered: the note without the pods */
        err = wh_render_generated_note(named, NULL, &r.notes);
    if (err == WH_ERR_NOMEM) {
        /* nothing more to do */
    } else if (err) {
        err = finish_row(rows, new_row(o, "-"), st, "error", errbuf[0] ? errbuf : wh_strerror(err),
                         NULL);
    } else {
        err = cluster_rows(o, cluster, &v, &pd, r.notes, rows, st);
    }
    wh_render_result_free(&r);
    wh_render_verdict_free(&v);
    cJSON_Delete(cluster);
    cJSON_Delete(named);
    return err;
}

static bool is_ray_kind(const char *k)
{
    return wh_kind_pods_by(k, WH_PODS_KUBERAY);
}

/* The first pod template of a Job, JobSet or LWS whose containers request
 * TPUs; NULL when none does. */
static const cJSON *tpu_template(const cJSON *doc)
{
    const struct wh_kind_def *def = wh_kind_find(wh_json_str0(doc, "kind"));
    enum wh_kind_identity id = def ? def->identity : WH_IDENTITY_JOBSET;
    const cJSON *spec = wh_json_get(doc, "spec"), *t;
    if (id == WH_IDENTITY_JOB_INDEX) {
        t = wh_json_get(spec, "template");
        return wh_workload_template_requests_tpu(t) ? t : NULL;
    }
    if (id == WH_IDENTITY_LWS) {
        t = wh_json_path(spec, "leaderWorkerTemplate", "workerTemplate", NULL);
        return wh_workload_template_requests_tpu(t) ? t : NULL;
    }
    const cJSON *rjs = wh_json_get(spec, "replicatedJobs");
    for (const cJSON *rj = cJSON_IsArray(rjs) ? rjs->child : NULL; rj; rj = rj->next) {
        t = wh_json_path(rj, "template", "spec", "template", NULL);
        if (wh_workload_template_requests_tpu(t))
            return t;
    }
    return NULL;
}

/* A Job, JobSet or LeaderWorkerSet with TPU pods (docs/workloads.md): one
 * row for the whole object (group "-"), with the columns of its TPU pod
 * template; rendered (validation, then its pods through the workload
 * mutation) so that check and the webhook agree. */
static enum wh_err check_workload(struct origin *o, const cJSON *doc, const cJSON *services,
                                  cJSON *rows, struct wh_check_stats *st)
{
    const cJSON *tmpl = tpu_template(doc);
    if (!tmpl)
        return WH_OK; /* no TPU: nothing the webhook would judge */
    st->objects++;
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_render_result r;
    enum wh_err err = wh_render_workload(doc, &r, errbuf);
    if (!err && r.pods) /* the Job's headless Service, as doctor judges it */
        err = wh_doctor_service_warnings(r.cluster, r.pods, services, r.verdict.warnings, errbuf);
    if (err == WH_ERR_NOMEM) {
        wh_render_result_free(&r);
        return err;
    }
    cJSON *row = new_row(o, "-");
    cJSON *group = cJSON_CreateObject();
    enum wh_err cerr = row && group && !wh_json_set(group, "template", cJSON_Duplicate(tmpl, 1))
                           ? group_columns(row, group)
                           : WH_ERR_NOMEM;
    if (!cerr && !err)
        cerr = add_notes(row, r.notes);
    cJSON *fixes = cerr || err ? NULL : cJSON_CreateArray();
    if (!cerr && !err && !fixes)
        cerr = WH_ERR_NOMEM;
    for (size_t k = 0; !cerr && fixes && k < r.verdict.problems.n; k++)
        if (r.verdict.problems.items[k].suggest)
            cerr = add_fix(fixes, r.verdict.problems.items[k].suggest,
                           r.verdict.problems.items[k].message, NULL);
    if (!cerr && fixes) {
        cerr = set_fixes(row, fixes);
        fixes = NULL;
    }
    cJSON_Delete(fixes);
    cJSON_Delete(group);
    if (!cerr) /* a KubeRay worker-group column */
        cJSON_DeleteItemFromObjectCaseSensitive(row, "replicas");
    if (cerr) {
        cJSON_Delete(row);
        wh_render_result_free(&r);
        return cerr;
    }
    const char *verdict = err ? "error" : !r.verdict.allowed || r.pod_denial ? "rejected" : "ok";
    const char *message = err                  ? (errbuf[0] ? errbuf : wh_strerror(err))
                          : !r.verdict.allowed ? r.verdict.message
                          : r.pod_denial       ? r.pod_denial
                                               : "";
    err = finish_row(rows, row, st, verdict, message ? message : "",
                     r.verdict.warnings ? cJSON_Duplicate(r.verdict.warnings, 1) : NULL);
    wh_render_result_free(&r);
    return err;
}

/* ---- strict ----------------------------------------------------------- */

/* Where strict findings go: one row each. */
struct strict_rows {
    const struct origin *o;
    cJSON *rows;
    struct wh_check_stats *st;
};

static enum wh_err strict_row(void *ctx, const char *path, const char *message,
                              const char *suggestion)
{
    struct strict_rows *sr = ctx;
    cJSON *r = new_row(sr->o, "-");
    if (r && (wh_json_set_str(r, "field", path) ||
              wh_json_set(r, "suggestion",
                          suggestion ? cJSON_CreateString(suggestion) : cJSON_CreateNull()))) {
        cJSON_Delete(r);
        r = NULL;
    }
    return finish_row(sr->rows, r, sr->st, "strict", message, NULL);
}

static bool is_object(const cJSON *x)
{
    return wh_json_str(x, "apiVersion") && wh_json_str(x, "kind");
}

/* --strict on one document (or List item) of a file that holds objects. */
static enum wh_err strict_doc(const struct origin *o, const cJSON *x, cJSON *rows,
                              struct wh_check_stats *st)
{
    struct strict_rows sr = {o, rows, st};
    if (!is_object(x)) {
        const char *missing = !wh_json_str(x, "apiVersion") ? "apiVersion" : "kind";
        char msg[128];
        snprintf(msg, sizeof(msg), "%s: missing: every Kubernetes object has apiVersion and kind",
                 missing);
        return strict_row(&sr, missing, msg, NULL);
    }
    return wh_strict_object(x, strict_row, &sr, NULL);
}

/* ---- the file ----------------------------------------------------------- */

enum wh_err wh_check_text(const char *file, const char *text, size_t len, cJSON *rows,
                          struct wh_check_stats *st, char *errbuf)
{
    return wh_check_text_opts(file, text, len, NULL, rows, st, errbuf);
}

enum wh_err wh_check_text_opts(const char *file, const char *text, size_t len,
                               const struct wh_check_opts *opts, cJSON *rows,
                               struct wh_check_stats *st, char *errbuf)
{
    cJSON *docs = NULL;
    unsigned *lines = NULL;
    char yerr[WH_ERRBUF_LEN] = "";
    bool strict = opts && opts->strict;
    st->files++;
    struct wh_yaml_pos where;
    enum wh_err err = wh_yaml_load_at(text, len, &docs, &lines, &where, yerr);
    if (err == WH_ERR_NOMEM)
        return wh_fail(errbuf, err, "out of memory reading %s", file);
    if (err)
        return wh_check_error_row(rows, st, file, where.line, yerr);
    bool any_object = false; /* else the file is not checked at all */
    for (const cJSON *d = docs->child; d && !any_object; d = d->next)
        any_object = is_object(d);
    cJSON *services = NULL; /* the file's Services, for its Jobs */
    err = wh_doctor_collect_services(docs, &services);
    int i = 0;
    bool judged_any = false; /* a Ray or TPU workload kind, apiVersion or not */
    for (const cJSON *d = docs->child; !err && d; d = d->next, i++) {
        const cJSON *list = wh_json_get(d, "items");
        bool is_list = !strcmp(wh_json_str0(d, "kind"), "List") && cJSON_IsArray(list);
        for (const cJSON *x = is_list ? list->child : d; !err && x; x = is_list ? x->next : NULL) {
            const char *kind = wh_json_str(x, "kind");
            bool workload = wh_kind_pods_by(kind, WH_PODS_WORKLOAD),
                 judged = workload || is_ray_kind(kind);
            struct origin o = {file, lines[i], kind,
                               wh_json_str0(wh_json_get(x, "metadata"), "name"), ""};
            judged_any |= judged;
            if (strict && (any_object || judged) && (err = strict_doc(&o, x, rows, st)))
                break;
            if (!judged)
                continue; /* a manifest directory holds other kinds too */
            err = workload ? check_workload(&o, x, services, rows, st) : check_doc(&o, x, rows, st);
        }
    }
    if (!err && !any_object && !judged_any) {
        struct origin o = {file, docs->child ? lines[0] : 0, "", "", ""};
        err = finish_row(rows, new_row(&o, "-"), st, "not-checked",
                         "not checked: the file holds no Kubernetes object (no document has "
                         "apiVersion and kind: a Helm values file, a Polyaxonfile, ...)",
                         NULL);
    }
    cJSON_Delete(services);
    cJSON_Delete(docs);
    free(lines);
    if (err)
        wh_fail(errbuf, err, "out of memory checking %s", file);
    return err;
}

/* ---- table ------------------------------------------------------------- */

static const char *const columns[] = {"FILE",     "CLUSTER",    "GROUP", "ACCELERATOR",
                                      "TOPOLOGY", "CHIPS/HOST", "HOSTS", "NUMOFHOSTS",
                                      "VERDICT",  "WARNINGS"};
#define N_COLUMNS (sizeof(columns) / sizeof(columns[0]))

static void cell(const cJSON *r, size_t col, char *out, size_t len)
{
    static const char *const keys[] = {"file",          "cluster",    "group",
                                       "accelerator",   "topology",   "chipsPerHost",
                                       "hostsExpected", "numOfHosts", "verdict"};
    if (col == N_COLUMNS - 1) {
        int n = cJSON_GetArraySize(wh_json_get(r, "warnings"));
        snprintf(out, len, "%d", n);
        return;
    }
    const cJSON *v = wh_json_get(r, keys[col]);
    if (col == 1 && !wh_json_str0(r, "cluster")[0])
        v = wh_json_get(r, "name"); /* not rendered as a cluster: name the object */
    if (cJSON_IsString(v))
        snprintf(out, len, "%s", v->valuestring[0] ? v->valuestring : "-");
    else if (cJSON_IsNumber(v) && v->valuedouble >= 0)
        snprintf(out, len, "%.0f", v->valuedouble);
    else if (cJSON_IsNumber(v))
        snprintf(out, len, "?");
    else
        snprintf(out, len, "-");
    if (col == 0 && cJSON_IsNumber(wh_json_get(r, "line")) &&
        wh_json_get(r, "line")->valuedouble > 0) {
        size_t n = strlen(out);
        snprintf(out + n, len - n, ":%.0f", wh_json_get(r, "line")->valuedouble);
    }
}

/* A row's fixes under its denial: one line per option, its edits joined
 * ("fix g: spec.x = 4, spec.y = 2", "fix g (one of 2): ..." when there are
 * several; google.com/tpu edits say "per pod"). */
static enum wh_err fix_lines(const cJSON *r, const char *where, struct wh_buf *out)
{
    enum wh_err err = WH_OK;
    const cJSON *fixes = wh_json_get(r, "fixes");
    for (const cJSON *f = fixes ? fixes->child : NULL; !err && f; f = f->next) {
        const cJSON *opts = wh_json_get(f, "options");
        int n = cJSON_GetArraySize(opts);
        for (const cJSON *o = opts ? opts->child : NULL; !err && o; o = o->next) {
            err = n > 1 ? wh_buf_addf(out, "\n%s: fix %s (one of %d): ", where,
                                      wh_json_str0(r, "group"), n)
                        : wh_buf_addf(out, "\n%s: fix %s: ", where, wh_json_str0(r, "group"));
            for (const cJSON *e = o->child; !err && e; e = e->next) {
                const cJSON *v = wh_json_get(e, "value");
                const char *sep = e == o->child ? "" : ", ";
                const char *per = cJSON_IsTrue(wh_json_get(e, "tpuChipsPerPod")) ? " per pod" : "";
                err = cJSON_IsString(v)
                          ? wh_buf_addf(out, "%s%s = \"%s\"", sep, wh_json_str0(e, "field"),
                                        v->valuestring)
                          : wh_buf_addf(out, "%s%s = %.0f%s", sep, wh_json_str0(e, "field"),
                                        cJSON_IsNumber(v) ? v->valuedouble : 0.0, per);
            }
        }
    }
    return err;
}

enum wh_err wh_check_table(const cJSON *rows, const struct wh_check_stats *st, struct wh_buf *out)
{
    int width[N_COLUMNS];
    char text[1024];
    for (size_t c = 0; c < N_COLUMNS; c++)
        width[c] = (int)strlen(columns[c]);
    for (const cJSON *r = rows->child; r; r = r->next) {
        for (size_t c = 0; c < N_COLUMNS; c++) {
            cell(r, c, text, sizeof(text));
            if ((int)strlen(text) > width[c])
                width[c] = (int)strlen(text);
        }
    }
    enum wh_err err = WH_OK;
    for (size_t c = 0; !err && c < N_COLUMNS; c++)
        err = wh_buf_addf(out, "%-*s%s", c + 1 < N_COLUMNS ? width[c] : 0, columns[c],
                          c + 1 < N_COLUMNS ? "  " : "\n");
    for (const cJSON *r = rows->child; !err && r; r = r->next) {
        for (size_t c = 0; !err && c < N_COLUMNS; c++) {
            cell(r, c, text, sizeof(text));
            err = wh_buf_addf(out, "%-*s%s", c + 1 < N_COLUMNS ? width[c] : 0, text,
                              c + 1 < N_COLUMNS ? "  " : "\n");
        }
    }
    /* Then the reasons, one per rejected/erroneous row, and the warnings. */
    for (const cJSON *r = rows->child; !err && r; r = r->next) {
        cell(r, 0, text, sizeof(text));
        const char *verdict = wh_json_str0(r, "verdict");
        if (!strcmp(verdict, "strict"))
            err = wh_buf_addf(out, "\n%s: strict %s/%s: %s", text, wh_json_str0(r, "kind"),
                              wh_json_str0(r, "name"), wh_json_str0(r, "message"));
        else if (!strcmp(verdict, "not-checked"))
            err = wh_buf_addf(out, "\n%s: %s", text, wh_json_str0(r, "message"));
        else if (strcmp(verdict, "ok"))
            err = wh_buf_addf(out, "\n%s: %s %s: %s", text, verdict, wh_json_str0(r, "group"),
                              wh_json_str0(r, "message"));
        if (!err)
            err = fix_lines(r, text, out);
        const cJSON *ws = wh_json_get(r, "warnings");
        for (const cJSON *w = ws ? ws->child : NULL; !err && w; w = w->next)
            err = wh_buf_addf(out, "\n%s: warning %s: %s", text, wh_json_str0(r, "group"),
                              cJSON_IsString(w) ? w->valuestring : "?");
        const cJSON *ns = wh_json_get(r, "notes");
        for (const cJSON *n = ns ? ns->child : NULL; !err && n; n = n->next)
            err = wh_buf_addf(out, "\n%s: note %s: %s", text, wh_json_str0(r, "group"),
                              cJSON_IsString(n) ? n->valuestring : "?");
    }
    /* Rows of group "-" stand for a whole file or object, not a group: a
     * Job, JobSet or LeaderWorkerSet row is one TPU workload. */
    size_t groups = 0, workloads = 0;
    for (const cJSON *r = rows->child; r; r = r->next) {
        const char *kind = wh_json_str0(r, "kind");
        if (strcmp(wh_json_str0(r, "group"), "-"))
            groups++;
        else if (!strcmp(wh_json_str0(r, "verdict"), "strict"))
            continue;
        else if (wh_kind_pods_by(kind, WH_PODS_WORKLOAD))
            workloads++;
    }
    char wl[48] = "", more[96] = "";
    if (workloads)
        snprintf(wl, sizeof(wl), ", %zu TPU workload(s)", workloads);
    if (st->strict || st->unchecked)
        snprintf(more, sizeof(more), ", %zu strict finding(s), %zu file(s) not checked", st->strict,
                 st->unchecked);
    if (!err)
        err = wh_buf_addf(out,
                          "\n%zu file(s), %zu object(s), %zu TPU worker group(s)%s: "
                          "%zu rejected, %zu error(s)%s\n",
                          st->files, st->objects, groups, wl, st->rejected, st->errors, more);
    return err;
}
