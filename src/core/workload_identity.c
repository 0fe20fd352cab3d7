/* workload_identity.c: identity per controller kind (workload_identity.h). */
#include "wh/workload_identity.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strncmp, strlen, strchr */

#include "wh/buf.h"     /* wh_buf_* */
#include "wh/json.h"    /* wh_json_str, wh_parse_long */
#include "wh/podspec.h" /* wh_meta_* */
#include "wh/podwarn.h" /* WH_PW_LWS_SUBGROUPS, WH_PW_NOT_INDEXED */

/* A whole number >= 0 from a label/annotation; denial naming it otherwise. */
static enum wh_err index_of(struct wh_tpu_pod *w, const char *key, const char *v, long *out)
{
    if (!wh_parse_long(v, out) || *out < 0)
        return wh_tpu_pod_deny(w,
                               "\"%s\" is \"%s\", not a whole number >= 0; it is set by the "
                               "controller that creates the pod, remove the hand-written value",
                               key, v ? v : "(absent)");
    return WH_OK;
}

/* Peer list "<prefix><k>.<subdomain>" for k < n. */
static enum wh_err dns_list(struct wh_tpu_pod *w, const char *prefix, long n, const char *subdomain)
{
    enum wh_err err = wh_buf_reserve(&w->hosts,
                                     (size_t)n * (strlen(prefix) + strlen(subdomain) + 8));
    for (long k = 0; k < n && !err; k++)
        err = wh_buf_addf(&w->hosts, "%s%s%ld.%s", k ? "," : "", prefix, k, subdomain);
    return err;
}

static const char *subdomain_of(const struct wh_tpu_pod *w)
{
    const char *s = wh_json_str(w->spec, "subdomain");
    return s && *s ? s : NULL;
}

/* One host: "localhost"; the identity is ours except on LWS pods. */
static enum wh_err single_host(struct wh_tpu_pod *w)
{
    w->identity = w->kind != WH_WL_LWS;
    snprintf(w->master, sizeof(w->master), "localhost");
    return wh_buf_add(&w->hosts, "localhost");
}

enum wh_err wh_wl_single_pod(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped,
                             char *errbuf)
{
    (void)st, (void)errbuf;
    if (w->n_hosts == 1)
        return single_host(w);
    char what[256];
    snprintf(what, sizeof(what),
             "%ld of the %ld chips of topology %s is one of %ld hosts or part of one host",
             w->tc.chips, w->topo.chips, w->topology, w->n_hosts);
    return wh_wl_skip(w, skipped, WH_PW_NOT_INDEXED, what);
}

enum wh_err wh_wl_indexed_job(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped,
                              char *errbuf)
{
    (void)st, (void)skipped, (void)errbuf;
    long index;
    const char *v = wh_wl_meta_value(w->pod, WH_KEY_JOB_INDEX, true);
    enum wh_err err = index_of(w, WH_KEY_JOB_INDEX, v, &index);
    if (err || wh_tpu_pod_denied(w))
        return err;
    if (w->n_hosts == 1)
        return single_host(w); /* independent single-host pods */
    const char *job = wh_wl_job_name(w->pod), *sub = subdomain_of(w);
    if (!job || !*job)
        return wh_tpu_pod_deny(w,
                               "label \"%s\" is missing, so the names of the %ld hosts of the "
                               "slice are unknown; let the Job controller create the pod",
                               WH_KEY_JOB_NAME, w->n_hosts);
    if (!sub)
        return wh_tpu_pod_deny(w,
                               "spec.subdomain is empty but topology %s with %ld chips per pod "
                               "needs %ld hosts that reach each other by name; set "
                               "spec.template.spec.subdomain to a headless Service selecting "
                               "job-name=%s",
                               w->topology, w->tc.chips, w->n_hosts, job);
    if (index >= w->n_hosts)
        return wh_tpu_pod_deny(w,
                               "completion index %ld is beyond the %ld hosts of topology %s with "
                               "%ld chips per pod; set parallelism and completions to %ld",
                               index, w->n_hosts, w->topology, w->tc.chips, w->n_hosts);
    w->identity = true;
    w->host = index;
    char prefix[WH_WL_NAME_MAX];
    snprintf(prefix, sizeof(prefix), "%.250s-", job);
    snprintf(w->master, sizeof(w->master), "%.250s-0.%.63s", job, sub);
    return dns_list(w, prefix, w->n_hosts, sub);
}

enum wh_err wh_wl_jobset(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped,
                         char *errbuf)
{
    (void)st, (void)skipped, (void)errbuf;
    const char *js = wh_wl_meta_value(w->pod, WH_KEY_JS_NAME, false);
    const char *rj = wh_wl_meta_value(w->pod, WH_KEY_JS_RJOB, false);
    const char *rep_s = wh_wl_meta_value(w->pod, WH_KEY_JS_RJOB_REPLICAS, false);
    const char *glob_s = wh_wl_meta_value(w->pod, WH_KEY_JS_GLOBAL_REPLICAS, false);
    long index, job, replicas = 1, global = -1;
    enum wh_err err = index_of(w, WH_KEY_JOB_INDEX,
                               wh_wl_meta_value(w->pod, WH_KEY_JOB_INDEX, true), &index);
    if (!err && !wh_tpu_pod_denied(w))
        err = index_of(w, WH_KEY_JS_JOB_INDEX, wh_wl_meta_value(w->pod, WH_KEY_JS_JOB_INDEX, false),
                       &job);
    if (!err && !wh_tpu_pod_denied(w) && rep_s)
        err = index_of(w, WH_KEY_JS_RJOB_REPLICAS, rep_s, &replicas);
    if (!err && !wh_tpu_pod_denied(w) && glob_s)
        err = index_of(w, WH_KEY_JS_GLOBAL_REPLICAS, glob_s, &global);
    if (err || wh_tpu_pod_denied(w))
        return err;
    if (!rj || !*rj)
        return wh_tpu_pod_deny(w,
                               "label \"%s\" is missing; let the JobSet controller create the pod",
                               WH_KEY_JS_RJOB);
    if (replicas < 1 || job >= replicas)
        return wh_tpu_pod_deny(w,
                               "\"%s\" is %ld but \"%s\" is %ld; let the JobSet controller create "
                               "the pod",
                               WH_KEY_JS_JOB_INDEX, job, WH_KEY_JS_RJOB_REPLICAS, replicas);
    if (index >= w->n_hosts)
        return wh_tpu_pod_deny(w,
                               "completion index %ld is beyond the %ld hosts of topology %s with "
                               "%ld chips per pod; set parallelism and completions of replicated "
                               "job \"%s\" to %ld",
                               index, w->n_hosts, w->topology, w->tc.chips, rj, w->n_hosts);
    w->identity = true;
    w->host = index;
    w->slice = job;
    w->n_slices = replicas;
    if (w->n_hosts * replicas == 1)
        return single_host(w);
    const char *sub = subdomain_of(w);
    if (!sub)
        return wh_tpu_pod_deny(w,
                               "spec.subdomain is empty but the %ld pods of replicated job \"%s\" "
                               "must reach each other by name; do not set "
                               "spec.network.enableDNSHostnames to false",
                               w->n_hosts * replicas, rj);
    snprintf(w->master, sizeof(w->master), "%.120s-%.60s-0-0.%.63s", js, rj, sub);
    if (w->n_hosts == 1)
        snprintf(w->slice_master, sizeof(w->slice_master), "localhost");
    else
        snprintf(w->slice_master, sizeof(w->slice_master), "%.120s-%.60s-%ld-0.%.63s", js, rj, job,
                 sub);
    /* With other replicated jobs in the JobSet the slice count is ambiguous
     * (per replicated job or global): only a declared MEGASCALE_NUM_SLICES
     * turns MEGASCALE_* on then. */
    w->megascale = replicas > 1 && (global < 0 || global == replicas);
    snprintf(w->coordinator, sizeof(w->coordinator), "%s", w->master);
    if (w->n_hosts == 1)
        return wh_buf_add(&w->hosts, "localhost");
    char prefix[WH_WL_NAME_MAX];
    snprintf(prefix, sizeof(prefix), "%.120s-%.60s-%ld-", js, rj, job);
    return dns_list(w, prefix, w->n_hosts, sub);
}

/* The index after "<leader>-" in a worker pod's name. */
static bool worker_index_from_name(const char *name, const char *leader, long *out)
{
    size_t ll = strlen(leader);
    if (!strcmp(name, leader)) {
        *out = 0;
        return true;
    }
    return !strncmp(name, leader, ll) && name[ll] == '-' && wh_parse_long(name + ll + 1, out) &&
           *out > 0;
}

enum wh_err wh_wl_lws(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped, char *errbuf)
{
    (void)st, (void)errbuf;
    if (wh_meta_has_annotation(w->pod, WH_KEY_LWS_SUBGROUP_SIZE))
        return wh_wl_skip(w, skipped, WH_PW_LWS_SUBGROUPS,
                          "LeaderWorkerSet subgroups are not supported");
    const char *leader = wh_meta_annotation(w->pod, WH_KEY_LWS_LEADER_NAME);
    bool is_leader = !leader;
    if (is_leader)
        leader = w->pod_name;
    const char *tpus = wh_meta_annotation(w->pod, WH_KEY_LWS_LEADER_TPUS);
    bool leader_tpu = is_leader || (tpus && !strcmp(tpus, "true"));
    long size = -1, worker;
    const char *size_s = wh_meta_annotation(w->pod, WH_KEY_LWS_SIZE);
    enum wh_err err = size_s ? index_of(w, WH_KEY_LWS_SIZE, size_s, &size) : WH_OK;
    if (err || wh_tpu_pod_denied(w))
        return err;
    const char *wi = wh_meta_label(w->pod, WH_KEY_LWS_WORKER_INDEX);
    if (wi)
        err = index_of(w, WH_KEY_LWS_WORKER_INDEX, wi, &worker);
    else if (!worker_index_from_name(w->pod_name, leader, &worker))
        return wh_tpu_pod_deny(w,
                               "no label \"%s\" and the pod name \"%s\" is not \"%s-<index>\"; let "
                               "the LeaderWorkerSet controller create the pod",
                               WH_KEY_LWS_WORKER_INDEX, w->pod_name, leader);
    if (err || wh_tpu_pod_denied(w))
        return err;
    long tpu_hosts = size - (leader_tpu ? 0 : 1);
    if (size >= 0 && tpu_hosts != w->n_hosts)
        return wh_tpu_pod_deny(w,
                               "size %ld gives %ld TPU hosts per group but topology %s with %ld "
                               "chips per pod needs %ld; set spec.leaderWorkerTemplate.size to %ld",
                               size, tpu_hosts, w->topology, w->tc.chips, w->n_hosts,
                               w->n_hosts + (leader_tpu ? 0 : 1));
    w->host = worker - (leader_tpu ? 0 : 1);
    if (w->host < 0 || w->host >= w->n_hosts)
        return wh_tpu_pod_deny(w, "worker index %ld is outside the group's %ld TPU hosts", worker,
                               w->n_hosts);
    if (w->n_hosts == 1)
        return single_host(w);
    const char *sub = subdomain_of(w);
    if (!sub)
        return wh_tpu_pod_deny(w,
                               "spec.subdomain is empty but the %ld hosts of the group must reach "
                               "each other by name; let the LeaderWorkerSet controller create "
                               "the pod",
                               w->n_hosts);
    /* LWS's own order: the leader (when it has TPUs), then -1 .. -(size-1). */
    for (long k = 0; k < w->n_hosts && !err; k++) {
        long ord = k + (leader_tpu ? 0 : 1);
        if (ord == 0)
            err = wh_buf_addf(&w->hosts, "%s.%s", leader, sub);
        else
            err = wh_buf_addf(&w->hosts, "%s%s-%ld.%s", k ? "," : "", leader, ord, sub);
    }
    const char *comma = strchr(wh_buf_ptr(&w->hosts), ',');
    size_t first = comma ? (size_t)(comma - wh_buf_ptr(&w->hosts)) : wh_buf_len(&w->hosts);
    snprintf(w->master, sizeof(w->master), "%.*s", (int)(first < WH_WL_NAME_MAX ? first : 0),
             wh_buf_ptr(&w->hosts));
    return err;
}
