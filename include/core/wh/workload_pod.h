/* workload_pod.h: one TPU pod of a workload on the /mutate-workload path
 * (workload.h): the keys its controller puts on it, which controller made
 * it (wh_wl_classify, which doctor reads too), and how the path names it in
 * denials, warnings and Events (docs/workloads.md). The pod's context is
 * struct wh_tpu_pod (pipeline.h). Pure. */
#ifndef WH_WORKLOAD_POD_H
#define WH_WORKLOAD_POD_H

#include <stdbool.h> /* bool */

#include "wh/err.h"      /* enum wh_err */
#include "wh/json.h"     /* cJSON */
#include "wh/pipeline.h" /* struct wh_tpu_pod, enum wh_workload_kind */
#include "wh/podwarn.h"  /* enum wh_pod_warning */

/* Keys the controllers put on the pods they create (docs/workloads.md). */
#define WH_KEY_LWS_NAME "leaderworkerset.sigs.k8s.io/name"
#define WH_KEY_LWS_WORKER_INDEX "leaderworkerset.sigs.k8s.io/worker-index"
#define WH_KEY_LWS_SIZE "leaderworkerset.sigs.k8s.io/size"
#define WH_KEY_LWS_LEADER_NAME "leaderworkerset.sigs.k8s.io/leader-name"
#define WH_KEY_LWS_LEADER_TPUS "leaderworkerset.sigs.k8s.io/leader-requests-tpus"
#define WH_KEY_LWS_SUBGROUP_SIZE "leaderworkerset.sigs.k8s.io/subgroup-size"
#define WH_KEY_JS_NAME "jobset.sigs.k8s.io/jobset-name"
#define WH_KEY_JS_RJOB "jobset.sigs.k8s.io/replicatedjob-name"
#define WH_KEY_JS_RJOB_REPLICAS "jobset.sigs.k8s.io/replicatedjob-replicas"
#define WH_KEY_JS_GLOBAL_REPLICAS "jobset.sigs.k8s.io/global-replicas"
#define WH_KEY_JS_JOB_INDEX "jobset.sigs.k8s.io/job-index"
#define WH_KEY_JOB_INDEX "batch.kubernetes.io/job-completion-index"
#define WH_KEY_JOB_NAME "batch.kubernetes.io/job-name"
#define WH_KEY_JOB_NAME_OLD "job-name"

/* Which controller made pod, in workload.h's order: the one classification
 * of a pod into its workload, read by the pod path (workload.c) and by
 * doctor, which files pods into slices with it (src/offline/doctor). */
enum wh_workload_kind wh_wl_classify(const cJSON *pod);
/* Label first, then annotation (or the other way round); NULL when neither. */
const char *wh_wl_meta_value(const cJSON *pod, const char *key, bool annotation_first);
/* The Job's name (label batch.kubernetes.io/job-name, or the old job-name);
 * NULL when neither. */
const char *wh_wl_job_name(const cJSON *pod);
/* Fill w->who and the decision's Event subject from w->kind, the pod's
 * labels, w->ns and w->pod_name. */
void wh_wl_describe(struct wh_tpu_pod *w);
/* Admit unchanged: sets *skipped; a short warning (what to do) for the
 * user, the full text (who, why, what to do) for the log and the
 * workload's Event. */
WH_NODISCARD enum wh_err wh_wl_skip(struct wh_tpu_pod *w, bool *skipped, enum wh_pod_warning k,
                                    const char *why);

#endif
