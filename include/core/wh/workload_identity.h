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

#include "wh/err.h"          /* enum wh_err */
#include "wh/state.h"        /* struct wh_state */
#include "wh/workload_pod.h" /* struct wh_tpu_pod */

/* Each a wh_pod_step (pipeline.h), the rows of identity.c; st and errbuf
 * are not read. */
WH_NODISCARD enum wh_err wh_wl_indexed_job(struct wh_tpu_pod *w, const struct wh_state *st,
                                           bool *skipped, char *errbuf);
WH_NODISCARD enum wh_err wh_wl_jobset(struct wh_tpu_pod *w, const struct wh_state *st,
                                      bool *skipped, char *errbuf);
/* Sets *skipped (a warning, admitted unchanged) for LWS subgroups. */
WH_NODISCARD enum wh_err wh_wl_lws(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped,
                                   char *errbuf);
/* A pod of no indexed controller: one host, "localhost", the identity
 * ours; on several hosts *skipped (nothing tells the pod its place). */
WH_NODISCARD enum wh_err wh_wl_single_pod(struct wh_tpu_pod *w, const struct wh_state *st,
                                          bool *skipped, char *errbuf);

#endif
