/* identity.h: how a TPU pod gets its place in its slice, per workload kind:
 * the identity column of the kind table (kinds.h, enum wh_kind_identity)
 * as the functions that read it. KubeRay's native or legacy indices
 * (identity_kuberay.h); an Indexed Job's completion index, a JobSet's job
 * and completion index, a LeaderWorkerSet's worker index, or a single
 * host (workload_identity.h). The pipeline (pipeline.h) runs the one of
 * the pod's kind as its identity step. Static data. Pure. */
#ifndef WH_IDENTITY_H
#define WH_IDENTITY_H

#include "wh/kinds.h"    /* enum wh_kind_identity */
#include "wh/pipeline.h" /* wh_pod_step, enum wh_workload_kind */

/* The identity of the pods of a controller kind (wh_wl_classify's). */
enum wh_kind_identity wh_identity_kind(enum wh_workload_kind kind);

/* The identity step of kind's pods. */
wh_pod_step wh_identity_of(enum wh_workload_kind kind);

#endif
