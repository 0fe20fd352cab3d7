/* workload_identity.c: identity per controller kind (workload_identity.h). */
#include "wh/workload_identity.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strncmp, strlen, strchr */

#include "wh/buf.h"     /* wh_buf_* */
#include "wh/json.h"    /* wh_json_str, wh_parse_long */
#include "wh/podspec.h" /* wh_meta_* */
#include "wh/podwarn.h" /* WH_PW_NOT_INDEXED */

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

bool wh_lws_subgroup_fault(const struct wh_lws_subgroup_shape *sh, char *out, size_t n)
{
    static const char *const leader[3] =
        {"the leader requests google.com/tpu",
         ("spec.leaderWorkerTemplate.leaderTemplate is absent, so the leader is a "
          "workerTemplate pod and requests google.com/tpu"),
         "spec.leaderWorkerTemplate.leaderTemplate requests google.com/tpu"};
    long tpu = sh->size - (sh->leader_tpu ? 0 : 1), g = sh->subgroup;
    long whole = g > 0 && tpu > 0 ? tpu / g * g : 0; /* TPU pods in whole subgroups */
    long want = (whole > 0 ? whole : sh->hosts) + 1; /* a size that works */
    if (g != sh->hosts)
        snprintf(out, n,
                 "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize is %s, expected %ld "
                 "(topology %s with %ld chips per pod needs %ld hosts per slice)",
                 sh->subgroup_text, sh->hosts, sh->topology, sh->chips, sh->hosts);
    else if (sh->leader_tpu)
        snprintf(out, n,
                 "%s: with subGroupPolicy, LWS's pod webhook gives the leader TPU_WORKER_ID -1 "
                 "(LWS v0.9.0), or counts it as one host too many in subgroup 0, so subgroup "
                 "0's slice never starts; give the leader a leaderTemplate without "
                 "google.com/tpu and set spec.leaderWorkerTemplate.size to %ld (%ld subgroups "
                 "of %ld TPU workers after the leader)",
                 leader[sh->leader_template + 1], want, (want - 1) / g, g);
    else if (sh->size >= 0 && tpu % g)
        snprintf(out, n,
                 "spec.leaderWorkerTemplate.size is %ld, expected %ld or %ld: its %ld TPU "
                 "workers after the leader are not whole subgroups of subGroupSize %ld, so the "
                 "last subgroup's slice waits for hosts that never come",
                 sh->size, want, want + g, tpu, g);
    else
        return false;
    return true;
}

/* LWS subgroups (wh_lws_subgroup_fault): each subgroup is a slice. On the
 * shapes that start, subgroup i is the workers i * n + 1 .. (i + 1) * n;
 * the identity is filled as LWS's would be (the same order, whichever
 * webhook runs first), and TPU_NAME, which LWS gives every subgroup alike,
 * is the subgroup's. Sets w->host, w->identity, w->tpu_name,
 * w->lws_tpu_name and *first, the ordinal of the slice's host 0. */
static enum wh_err lws_subgroup(struct wh_tpu_pod *w, const char *leader, bool leader_tpu,
                                long size, long worker, long *first)
{
    long n;
    const char *v = wh_meta_annotation(w->pod, WH_KEY_LWS_SUBGROUP_SIZE);
    enum wh_err err = index_of(w, WH_KEY_LWS_SUBGROUP_SIZE, v, &n);
    if (err || wh_tpu_pod_denied(w))
        return err;
    char fix[640];
    struct wh_lws_subgroup_shape sh = {n,           v,    w->n_hosts, w->tc.chips,
                                       w->topology, size, leader_tpu, -1};
    if (wh_lws_subgroup_fault(&sh, fix, sizeof(fix)))
        return wh_tpu_pod_deny(w, "%s", fix);
    long sg = (worker - 1) / n;
    w->host = (worker - 1) % n;
    *first = sg * n + 1;
    w->identity = true;
    w->lws_tpu_name = leader;
    snprintf(w->tpu_name, sizeof(w->tpu_name), "%.290s-subgroup-%ld", leader, sg);
    return WH_OK;
}

enum wh_err wh_wl_lws(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped, char *errbuf)
{
    (void)st, (void)skipped, (void)errbuf;
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
    long first = leader_tpu ? 0 : 1; /* the ordinal of the slice's host 0 */
    bool subgroups = wh_meta_has_annotation(w->pod, WH_KEY_LWS_SUBGROUP_SIZE);
    if (subgroups) {
        if (w->n_hosts == 1)
            return single_host(w); /* a slice of one host: no peers to get wrong */
        err = lws_subgroup(w, leader, leader_tpu, size, worker, &first);
        if (err || wh_tpu_pod_denied(w))
            return err;
    } else if (size >= 0 && size - first != w->n_hosts) {
        return wh_tpu_pod_deny(w,
                               "size %ld gives %ld TPU hosts per group but topology %s with %ld "
                               "chips per pod needs %ld; set spec.leaderWorkerTemplate.size to %ld",
                               size, size - first, w->topology, w->tc.chips, w->n_hosts,
                               w->n_hosts + first);
    }
    if (!subgroups)
        w->host = worker - first;
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
    /* LWS's own order: the leader (when it has TPUs), then -1 .. -(size-1);
     * a subgroup's from its first worker. */
    for (long k = 0; k < w->n_hosts && !err; k++) {
        long ord = k + first;
        if (ord == 0)
            err = wh_buf_addf(&w->hosts, "%s.%s", leader, sub);
        else
            err = wh_buf_addf(&w->hosts, "%s%s-%ld.%s", k ? "," : "", leader, ord, sub);
    }
    const char *comma = strchr(wh_buf_ptr(&w->hosts), ',');
    size_t len0 = comma ? (size_t)(comma - wh_buf_ptr(&w->hosts)) : wh_buf_len(&w->hosts);
    snprintf(w->master, sizeof(w->master), "%.*s", (int)(len0 < WH_WL_NAME_MAX ? len0 : 0),
             wh_buf_ptr(&w->hosts));
    return err;
}
