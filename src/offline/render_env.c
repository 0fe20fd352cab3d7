/* render_env.c: the origin of each TPU variable of a rendered pod (render_env.h). */
#include "wh/render_env.h"

#include <string.h> /* strcmp, strstr */

#include "wh/envtab.h"  /* wh_envtab */
#include "wh/json.h"    /* wh_json_* */
#include "wh/podspec.h" /* wh_container_requests_tpu, wh_meta_has_label */

/* The variables shown (envtab.h, in its order): those the workload path
 * may inject, and those LeaderWorkerSet's own pod webhook sets (TPU_NAME
 * among them, which this path never writes). */
static bool shown(const struct wh_env_def *r)
{
    return r->verb[WH_PATH_WORKLOAD] != WH_VERB_NONE || r->by_lws;
}

static const cJSON *entry(const cJSON *env, const char *name)
{
    for (const cJSON *e = cJSON_IsArray(env) ? env->child : NULL; e; e = e->next)
        if (!strcmp(wh_json_str0(e, "name"), name))
            return e;
    return NULL;
}

static const char *source_of(const cJSON *pod, const cJSON *had, const struct wh_env_def *r)
{
    if (!had)
        return "injected";
    const char *path = wh_json_str0(wh_json_path(had, "valueFrom", "fieldRef", NULL), "fieldPath");
    if (strstr(path, "job-completion-index"))
        return "gke";
    if (r->by_lws && wh_meta_has_label(pod, "leaderworkerset.sigs.k8s.io/name"))
        return "lws";
    return "user";
}

static enum wh_err container_record(const cJSON *pod, const cJSON *cb, const cJSON *ca, cJSON *list)
{
    cJSON *rec = cJSON_CreateObject(), *env = cJSON_CreateArray();
    enum wh_err err = rec && env ? WH_OK : WH_ERR_NOMEM;
    if (!err)
        err = wh_json_set_str(rec, "name", wh_json_str0(ca, "name"));
    for (int i = 0; !err && i < WH_ENV__COUNT; i++) {
        const struct wh_env_def *r = &wh_envtab[i];
        const cJSON *now = shown(r) ? entry(wh_json_get(ca, "env"), r->name) : NULL;
        if (!now)
            continue;
        cJSON *v = cJSON_CreateObject();
        const cJSON *from = wh_json_get(now, "valueFrom");
        err = v ? WH_OK : WH_ERR_NOMEM;
        if (!err)
            err = wh_json_set_str(v, "name", r->name);
        if (!err)
            err = wh_json_set_str(v, "value", from ? "(valueFrom)" : wh_json_str0(now, "value"));
        if (!err)
            err = wh_json_set_str(v, "source",
                                  source_of(pod, entry(wh_json_get(cb, "env"), r->name), r));
        if (err)
            cJSON_Delete(v);
        else
            err = wh_json_add(env, v); /* owns v, failing or not */
    }
    if (!err) {
        err = wh_json_set(rec, "env", env); /* owns env, failing or not */
        env = NULL;
    }
    if (!err) {
        err = wh_json_add(list, rec);
        rec = NULL;
    }
    cJSON_Delete(env);
    cJSON_Delete(rec);
    return err;
}

enum wh_err wh_render_env_origin(const cJSON *before, const cJSON *after, const cJSON *warnings,
                                 cJSON **out)
{
    *out = cJSON_CreateObject();
    cJSON *cs = cJSON_CreateArray();
    cJSON *ws = warnings ? cJSON_Duplicate(warnings, 1) : cJSON_CreateArray();
    enum wh_err err = *out && cs && ws ? WH_OK : WH_ERR_NOMEM;
    if (!err)
        err = wh_json_set_str(*out, "pod", wh_meta_name(wh_json_get(after, "metadata")));
    const cJSON *lb = wh_json_path(before, "spec", "containers", NULL);
    const cJSON *la = wh_json_path(after, "spec", "containers", NULL);
    const cJSON *cb = cJSON_IsArray(lb) ? lb->child : NULL;
    for (const cJSON *ca = cJSON_IsArray(la) ? la->child : NULL; ca && !err;
         ca = ca->next, cb = cb ? cb->next : NULL)
        if (wh_container_requests_tpu(ca))
            err = container_record(after, cb, ca, cs);
    if (!err) {
        err = wh_json_set(*out, "containers", cs);
        cs = NULL;
    }
    if (!err) {
        err = wh_json_set(*out, "contradictions", ws);
        ws = NULL;
    }
    cJSON_Delete(cs);
    cJSON_Delete(ws);
    if (err) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    return err;
}

enum wh_err wh_render_env_text(const cJSON *records, struct wh_buf *out)
{
    enum wh_err err = WH_OK;
    for (const cJSON *r = cJSON_IsArray(records) ? records->child : NULL; r && !err; r = r->next) {
        err = wh_buf_addf(out, "pod %s\n", wh_json_str0(r, "pod"));
        const cJSON *cs = wh_json_get(r, "containers");
        for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c && !err; c = c->next) {
            err = wh_buf_addf(out, "  container %s\n", wh_json_str0(c, "name"));
            const cJSON *env = wh_json_get(c, "env");
            for (const cJSON *v = cJSON_IsArray(env) ? env->child : NULL; v && !err; v = v->next)
                err = wh_buf_addf(out, "    %-34s %-9s %.160s\n", wh_json_str0(v, "name"),
                                  wh_json_str0(v, "source"), wh_json_str0(v, "value"));
        }
        const cJSON *ws = wh_json_get(r, "contradictions");
        for (const cJSON *w = cJSON_IsArray(ws) ? ws->child : NULL; w && !err; w = w->next)
            err = wh_buf_addf(out, "  ! %s\n", cJSON_IsString(w) ? w->valuestring : "");
    }
    return err;
}
