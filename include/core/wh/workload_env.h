/* workload_env.h: the variables the workload path adds to one TPU
 * container (TPU identity, MEGASCALE_*, TorchTPU, torchrun's PET_*), and the
 * check that MEGASCALE's world is one (docs/workloads.md). A variable is only
 * added to a container that has no entry of that name. Pure. */
#ifndef WH_WORKLOAD_ENV_H
#define WH_WORKLOAD_ENV_H

#include "wh/err.h"          /* enum wh_err */
#include "wh/workload_pod.h" /* struct wh_tpu_pod */

/* Deny (w->d) a declared MEGASCALE_NUM_SLICES that disagrees with the
 * replicated job, a literal MEGASCALE_SLICE_ID shared by several slices, or
 * two TPU7x containers on one MEGASCALE_PORT. Never errs today. */
WH_NODISCARD enum wh_err wh_wl_one_world(struct wh_tpu_pod *w);
/* Append to w->d's patch the operations for TPU container ci (w->tc),
 * after the pod's identity is known; may warn or deny (w->d). Errors only
 * for OOM or a patch over its limit (WH_ERR_TOOBIG). */
WH_NODISCARD enum wh_err wh_wl_container_env(struct wh_tpu_pod *w, unsigned ci);

#endif
