/* workload_topology.h: the slice topology and TPU generation of a pod on
 * the workload path (docs/workloads.md, steps 2 and 3). Pure. */
#ifndef WH_WORKLOAD_TOPOLOGY_H
#define WH_WORKLOAD_TOPOLOGY_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h> /* cJSON */

#include "wh/err.h"          /* enum wh_err */
#include "wh/state.h"        /* struct wh_state */
#include "wh/workload_pod.h" /* struct wh_tpu_pod */

/* Fill w->topology, w->accel, w->topo_from, w->topo and w->tpu7x from the
 * pod's annotation and node selectors, and from the node pool's TPU nodes
 * (st->ops->each_node) when the pod names only its pool. The workload path's
 * topology rule, which differs on purpose from the KubeRay path's (mutate.c,
 * before wh_slice_topology, says why): an empty annotation counts as absent,
 * the node pool's TPU nodes are asked last, and an unknown topology skips the
 * pod (*skipped, admitted unchanged with a warning). A bad shape denies
 * (w->d). Errors only for OOM or a failing state callback (errbuf). */
WH_NODISCARD enum wh_err wh_wl_read_topology(struct wh_tpu_pod *w, const struct wh_state *st,
                                             bool *skipped, char *errbuf);

/* True when the subslice rule (topology.h, wh_subslice_fits) does not judge
 * a slice whose pods carry metadata `meta` (a template's or a pod's) in an
 * object labelled `labels` (NULL on the pod path): placed by a queue (Kueue)
 * or exempted by the user (podspec.h, wh_managed), as on the RayCluster path
 * (validate.c, check_subslice). Dynamic slicing stitches slices bigger than
 * one node pool's sub-block, so the pool is no bound for them. */
bool wh_subslice_exempt(const cJSON *labels, const cJSON *meta);

/* What the TPU nodes of node pool `pool` say (step 3 of docs/workloads.md):
 * the accelerator and topology labels of the first of its TPU nodes that
 * the state visits, each "" when unknown (no such node, st NULL, or
 * a node without the label), found through st->ops->each_node_with (the
 * index of nodes by label) when the state has it, so that a request's
 * lookups cost its templates, not templates x nodes. The one reading of a
 * pool: the pod path above and the template rule of /validate-workload
 * (workload_validate.c) both use it, so a template is judged on the
 * generation its pods get. Errors only from the state callback (errbuf). */
struct wh_pool_tpu {
    char accel[96], topology[64];
};
WH_NODISCARD enum wh_err wh_pool_tpu_read(const struct wh_state *st, const char *pool,
                                          struct wh_pool_tpu *out, char *errbuf);

#endif
