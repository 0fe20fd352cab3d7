/* workload_identity.h: a TPU pod's place in its slice and its peers, per
 * controller kind (docs/workloads.md, the decision table): Indexed Job,
 * JobSet, LeaderWorkerSet and a single host. Each reads w->pod's labels and
 * annotations and fills w->identity, w->host, w->slice, w->n_slices,
 * w->hosts (owned by w), w->master, w->slice_master and, for JobSets,
 * w->megascale and w->coordinator; or denies (w->d) naming the label and the
 * fix. w->n_hosts and w->topology must be set. Errors only for OOM. Pure. */
#ifndef WH_WORKLOAD_IDENTITY_H
#define WH_WORKLOAD_IDENTITY_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/err.h"          /* enum wh_err */
#include "wh/state.h"        /* struct wh_state */
#include "wh/workload_pod.h" /* struct wh_tpu_pod */

/* Each a wh_pod_step (pipeline.h), the rows of identity.c; st and errbuf
 * are not read. */
WH_NODISCARD enum wh_err wh_wl_indexed_job(struct wh_tpu_pod *w, const struct wh_state *st,
                                           bool *skipped, char *errbuf);
WH_NODISCARD enum wh_err wh_wl_jobset(struct wh_tpu_pod *w, const struct wh_state *st,
                                      bool *skipped, char *errbuf);
/* With LWS subgroups, each subgroup is the slice (w->tpu_name its name). */
WH_NODISCARD enum wh_err wh_wl_lws(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped,
                                   char *errbuf);
/* An LWS group with subGroupPolicy (docs/workloads.md, "LeaderWorkerSet
 * subgroups"): each subgroup is one slice, and its slices start only when
 * subGroupSize is the slice's hosts and the TPU pods are the workers
 * 1 .. size - 1 in whole subgroups. Strings are borrowed. */
struct wh_lws_subgroup_shape {
    long subgroup;             /* subGroupSize (any value: judged here) */
    const char *subgroup_text; /* how the object or pod writes it */
    long hosts, chips;         /* hosts per slice, chips per pod */
    const char *topology;
    long size;           /* spec.leaderWorkerTemplate.size, < 0 when unknown */
    bool leader_tpu;     /* the leader requests TPUs */
    int leader_template; /* the LWS has a leaderTemplate: 1, none: 0, unknown (a pod): -1 */
};
/* Whether the shape's slices cannot start; then the fix, naming the fields
 * and the values that work, into out (n bytes). Pure. */
bool wh_lws_subgroup_fault(const struct wh_lws_subgroup_shape *sh, char *out, size_t n);

/* A pod of no indexed controller: one host, "localhost", the identity
 * ours; on several hosts *skipped (nothing tells the pod its place). */
WH_NODISCARD enum wh_err wh_wl_single_pod(struct wh_tpu_pod *w, const struct wh_state *st,
                                          bool *skipped, char *errbuf);

#endif
