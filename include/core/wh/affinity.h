/* affinity.h: the pod affinity that keeps a slice's hosts together
 * (docs/internals/reference-behaviour.md §2.6) and the subslice topology-key
 * discovery from TPU nodes (§4). Pure. */
#ifndef WH_AFFINITY_H
#define WH_AFFINITY_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint32_t */

#include <cjson/cJSON.h>

#include "wh/buf.h"   /* struct wh_buf */
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

/* The answers of wh_subslice_find for one request that asks several times
 * (a RayCluster's groups): one walk over the nodes per distinct (selector
 * pairs, n_hosts), whatever the selector's key order, and the scratch of a
 * walk reused by the next. The caller owns it: wh_subslice_memo_init, then
 * wh_subslice_memo_free; every block comes from wh_malloc (mem.h). Fields
 * are the module's. */
#define WH_SUBSLICE_LEVELS 4
struct wh_subslice_memo_entry {
    char *key; /* "n_hosts\0=k\0v\0..." (memo-owned), NULL in an empty slot */
    size_t key_len;
    uint32_t hash;
    struct wh_subslice_index index;
};
struct wh_subslice_memo {
    struct wh_subslice_memo_entry *table; /* open addressing, slots a power of 2 */
    size_t slots, used;
    size_t *at[WH_SUBSLICE_LEVELS]; /* per matching node: its value's offset in pool */
    size_t cap;
    const char **pairs; /* the asked selector's pairs, sorted by key (borrowed) */
    size_t pairs_cap;
    struct wh_buf pool; /* the walked nodes' level values */
    struct wh_buf key;  /* the asked key */
};
void wh_subslice_memo_init(struct wh_subslice_memo *m);
void wh_subslice_memo_free(struct wh_subslice_memo *m); /* leaves m empty */
WH_NODISCARD enum wh_err wh_subslice_find_memo(struct wh_subslice_memo *m, const struct wh_state *st,
                                               const cJSON *node_selector, long n_hosts,
                                               struct wh_subslice_index *out, char *errbuf);

#endif
