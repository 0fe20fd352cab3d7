/* affinity.h: the pod affinity that keeps a slice's hosts together
 * (docs/internals/reference-behaviour.md §2.6) and the subslice topology-key
 * discovery from TPU nodes (§4). Pure. */
#ifndef WH_AFFINITY_H
#define WH_AFFINITY_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h"   /* enum wh_err */
#include "wh/state.h" /* struct wh_state */

struct wh_affinity_terms {
    const char *sel_key;      /* ray.io/worker-group-replica-name or replicaIndex */
    const char *sel_value;    /* the replica's value of that label */
    const char *cluster;      /* ray.io/cluster */
    const char *topology_key; /* e.g. cloud.google.com/gke-nodepool */
};

/* Topology key from the pod alone: the first user required podAffinity term
 * with a cloud.google.com/ key, else the Kueue required-topology annotation
 * when it is a cloud.google.com/ key, else the node pool. Borrowed from pod
 * or static. */
const char *wh_affinity_topology_key(const cJSON *pod);

/* The pod's spec.affinity with our three required terms appended after the
 * user's (each only if not already there). *out is NULL when nothing is
 * missing (the pod was already mutated); otherwise the caller owns it. */
WH_NODISCARD enum wh_err wh_affinity_merge(const cJSON *affinity, const struct wh_affinity_terms *t,
                                           cJSON **out);

/* The common case of wh_affinity_merge without its tree: when the pod's
 * affinity is absent, not an object, or an object with neither podAffinity
 * nor podAntiAffinity (e.g. only nodeAffinity), the merge is its members in
 * their order followed by our two, and wh_affinity_write_fresh writes that
 * text (the bytes wh_json_write gives the merged tree) straight into the
 * patch. Both borrow everything. */
struct wh_affinity_fresh {
    const cJSON *affinity; /* the pod's spec.affinity, or NULL */
    const struct wh_affinity_terms *terms;
};
bool wh_affinity_is_fresh(const cJSON *affinity);
/* A wh_patch_value_fn (patch.h): arg is a const struct wh_affinity_fresh *
 * whose affinity is fresh. */
struct wh_buf;
WH_NODISCARD enum wh_err wh_affinity_write_fresh(struct wh_buf *b, const void *arg);

/* Subslice key discovery: among TPU nodes matching every nodeSelector entry,
 * the first level (gce-topology-host, -subblock, -block, gke-nodepool) with
 * a group of exactly n_hosts nodes. *key is a static string or NULL when no
 * level fits; *n_nodes the number of matching nodes; *pool_only true when
 * nodes carry node-pool groups but no host/subblock/block labels. */
struct wh_subslice_index {
    size_t n_nodes;
    bool pool_only;
    const char *key;
};
WH_NODISCARD enum wh_err wh_subslice_find(const struct wh_state *st, const cJSON *node_selector,
                                          long n_hosts, struct wh_subslice_index *out, char *errbuf);

#endif
