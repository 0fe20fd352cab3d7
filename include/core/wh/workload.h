/* workload.h: TPU identity and TorchTPU/torchrun variables for TPU pods of
 * any workload kind (docs/workloads.md). A pod is classified in this order:
 * KubeRay (ray.io/cluster label, or created by kuberay-operator) -> the
 * KubeRay engine (mutate.h); LeaderWorkerSet (leaderworkerset.sigs.k8s.io/
 * name); JobSet (jobset.sigs.k8s.io/jobset-name); Indexed Job
 * (batch.kubernetes.io/job-completion-index); anything else: one host. Each
 * gets the values of the decision table in docs/workloads.md. Pure. */
#ifndef WH_WORKLOAD_H
#define WH_WORKLOAD_H

#include "wh/decision.h" /* struct wh_decision */
#include "wh/err.h"      /* enum wh_err */
#include "wh/review.h"   /* struct wh_review */
#include "wh/state.h"    /* struct wh_state */

/* Opt-in/opt-out label of pods and namespaces ("enabled" / "disabled"). */
#define WH_LABEL_INJECT "tpu-webhook/inject"

/* Decide about rv (an AdmissionReview whose kind is Pod) on the
 * /mutate-workload route. d must be initialised; on WH_OK it holds the
 * decision (a patch that only adds env entries the TPU containers lack, a
 * denial, or nothing plus a warning and a note). Reads no state except the
 * TPU nodes (each_node) when the pod names a node pool but no accelerator
 * or topology. Errors only for OOM or a failing state callback. */
WH_NODISCARD enum wh_err wh_mutate_workload(const struct wh_review *rv, const struct wh_state *st,
                                            struct wh_decision *d, char *errbuf);

#endif
