/* pipeline.c: a TPU pod's walk through a mutation path: its context, the
 * one skeleton and the guards every kind shares (pipeline.h). Every value
 * is computed before any operation is emitted, and a denial discards the
 * operations, so a patch is never partial. */
#include "wh/pipeline.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf */

#include "wh/podspec.h" /* wh_env_duplicate */
#include "wh/utf8.h"    /* wh_utf8_trim_cut */

void wh_tpu_pod_init(struct wh_tpu_pod *p, const cJSON *pod, enum wh_workload_kind kind,
                     struct wh_decision *d)
{
    *p = (struct wh_tpu_pod){.pod = pod, .spec = wh_json_get(pod, "spec"), .kind = kind, .d = d};
    p->labels = wh_json_get(wh_json_get(pod, "metadata"), "labels");
    p->topology = p->topology_buf;
    /* Every value is part of the patch, which stops at its limit (patch.h). */
    wh_buf_init(&p->hosts, WH_PATCH_MAX_BYTES);
    wh_port_list_init(&p->proc_addrs);
    wh_port_list_init(&p->torch_addrs);
}

void wh_tpu_pod_free(struct wh_tpu_pod *p, enum wh_err err)
{
    wh_buf_free(&p->hosts);
    wh_port_list_free(&p->proc_addrs);
    wh_port_list_free(&p->torch_addrs);
    wh_tpu_containers_free(&p->tc);
    if (err) {
        wh_buf_free(&p->d->patch);
        p->d->n_ops = 0;
    }
}

bool wh_tpu_pod_denied(const struct wh_tpu_pod *p)
{
    return !p->d->allowed;
}

enum wh_err wh_tpu_pod_deny(struct wh_tpu_pod *p, const char *fmt, ...)
{
    struct wh_buf text;
    wh_buf_init(&text, (size_t)-1 / 2); /* wh_decision_deny cuts a long message */
    enum wh_err err = wh_buf_add(&text, p->who);
    if (!err && p->kind == WH_WL_KUBERAY)
        err = wh_buf_addf(&text, " (RayCluster \"%s\", worker group \"%s\")", p->cluster, p->group);
    if (!err)
        err = wh_buf_add(&text, ": ");
    va_list ap;
    va_start(ap, fmt);
    if (!err && p->kind == WH_WL_KUBERAY) {
        err = wh_buf_vaddf(&text, fmt, ap); /* the reference's messages, whole */
    } else if (!err) {
        char msg[2048];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        wh_utf8_trim_cut(msg, sizeof(msg));
        err = wh_buf_add(&text, msg);
    }
    va_end(ap);
    if (!err)
        err = wh_decision_deny(p->d, "%s", text.ptr);
    wh_buf_free(&text);
    return err;
}

enum wh_err wh_tpu_pod_collect(struct wh_tpu_pod *p, const cJSON *containers)
{
    char why[WH_ERRBUF_LEN]; /* under deny's cut: the same text on every kind */
    enum wh_err err = wh_tpu_containers_collect(containers, &p->tc, why);
    if (err == WH_ERR_INVALID)
        return wh_decision_deny(p->d, "%s: %s", p->who, why);
    if (!err)
        p->d->n_tpu_containers = p->tc.n;
    return err;
}

enum wh_err wh_tpu_pod_env_duplicates(struct wh_tpu_pod *p)
{
    for (unsigned i = 0; i < p->tc.n; i++) {
        int first, second;
        const struct wh_tpu_container *c = &p->tc.items[i];
        const char *name = wh_env_duplicate(wh_json_get(c->obj, "env"), &first, &second);
        if (name)
            return wh_tpu_pod_deny(p,
                                   "container \"%s\" sets %s twice (spec.containers[%d].env[%d] "
                                   "and env[%d]); the kubelet uses the last one and the webhook "
                                   "edits one of them, so the value the container gets is "
                                   "ambiguous; keep one %s entry",
                                   wh_json_str0(c->obj, "name"), name, c->index, first, second,
                                   name);
    }
    return WH_OK;
}

enum wh_err wh_tpu_pod_bad_name(struct wh_tpu_pod *p)
{
    if (wh_tpu_pod_denied(p) || !p->d->bad_name)
        return WH_OK;
    return wh_tpu_pod_deny(p, "%s", p->d->bad_name);
}

/* Whether the walk stops after a step: an error, a denial or a skip. */
static bool stop(const struct wh_tpu_pod *p, enum wh_err err, bool skipped)
{
    return err || wh_tpu_pod_denied(p) || skipped;
}

/* The decision's record of the pod's place (logs, notes, the legacy
 * claims): -1 for a worker id that is not ours to give. */
static void record(struct wh_tpu_pod *p)
{
    p->d->replica = p->slice;
    p->d->host = p->host;
    p->d->n_hosts = p->n_hosts;
    p->d->worker_id = p->identity ? wh_tpu_worker_id(p->host, p->tc.n, 0, p->tpu7x) : -1;
}

static enum wh_err walk(struct wh_tpu_pod *p, const struct wh_pod_path *path, wh_pod_step identity,
                        const struct wh_state *st, char *errbuf)
{
    bool skipped = false;
    const cJSON *containers = wh_json_get(p->spec, "containers");
    if (!cJSON_IsArray(containers)) /* the API server refuses it */
        return path->no_containers ? path->no_containers(p, containers) : WH_OK;
    enum wh_err err = wh_tpu_pod_collect(p, containers);
    if (stop(p, err, false) || p->tc.n == 0)
        return err; /* no TPU: admitted unchanged */
    if (path->duplicates_first)
        err = wh_tpu_pod_env_duplicates(p);
    if (stop(p, err, false))
        return err;
    err = path->slice(p, st, &skipped, errbuf);
    if (stop(p, err, skipped))
        return err;
    if (!path->duplicates_first)
        err = wh_tpu_pod_env_duplicates(p);
    if (stop(p, err, false))
        return err;
    err = identity(p, st, &skipped, errbuf);
    if (stop(p, err, skipped))
        return err;
    if (path->settle)
        err = path->settle(p, st, &skipped, errbuf);
    if (stop(p, err, skipped))
        return err;
    record(p);
    err = path->prepare(p, st, &skipped, errbuf);
    for (unsigned i = 0; !stop(p, err, skipped) && i < p->tc.n; i++)
        err = path->container_env(p, i);
    if (!err)
        err = wh_tpu_pod_bad_name(p);
    if (!err && !wh_tpu_pod_denied(p) && path->after)
        err = path->after(p);
    return err;
}

enum wh_err wh_tpu_pod_run(struct wh_tpu_pod *p, const struct wh_pod_path *path,
                           wh_pod_step identity, const struct wh_state *st, char *errbuf)
{
    enum wh_err err = walk(p, path, identity, st, errbuf);
    if (err == WH_ERR_TOOBIG)
        err = path->too_big(p);
    wh_tpu_pod_free(p, err);
    return err;
}
