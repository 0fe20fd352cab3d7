/* nodeindex.h: TPU nodes indexed by label (key, value), so that the nodes a
 * nodeSelector can match are looked up, not found by a walk over every node
 * (issue 22: a RayCluster of many subslice groups, each with a selector of
 * its own, walked the whole node cache once per selector).
 *
 * The index knows nodes by an id the owner chooses (its slot in an array of
 * nodes, say) and keeps, for each (key, value), the ids of the nodes that
 * carry it, each added and removed in time linear in the node's labels. It
 * is the owner's structure: the owner changes it where it changes its nodes
 * and under the same lock (the kube room's store: the writer lock; the
 * in-memory state: before the reviews that read it), and readers only read.
 *
 * Ownership: the index copies each distinct (key, value) it holds and frees
 * it when the last node carrying it leaves. Every block comes from wh_malloc
 * (mem.h): an owner that outlives requests changes it on a thread with no
 * request arena bound (the watch threads, the CLI). wh_nodeindex_free frees
 * everything. Pure.
 */
#ifndef WH_NODEINDEX_H
#define WH_NODEINDEX_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t */

#include "wh/err.h"  /* enum wh_err */
#include "wh/node.h" /* struct wh_node_rec */

struct wh_nodeindex;

/* NULL on OOM. */
struct wh_nodeindex *wh_nodeindex_new(void);
void wh_nodeindex_free(struct wh_nodeindex *ix); /* NULL-safe */

/* Index node id (not indexed yet) by every label of rec; the strings are
 * copied. WH_ERR_NOMEM leaves the index as it was. */
WH_NODISCARD enum wh_err wh_nodeindex_add(struct wh_nodeindex *ix, uint32_t id,
                                          const struct wh_node_rec *rec);
/* Forget node id (a no-op when it is not indexed). */
void wh_nodeindex_remove(struct wh_nodeindex *ix, uint32_t id);
/* Node from is now known as to, an id below from that is not indexed (the
 * owner moved its last node into a freed slot); needs no memory. */
void wh_nodeindex_move(struct wh_nodeindex *ix, uint32_t from, uint32_t to);

/* The ids of the nodes carrying label key = value, in no set order (*n of
 * them; NULL and 0 when none). Borrowed until the index next changes. */
const uint32_t *wh_nodeindex_find(const struct wh_nodeindex *ix, const char *key, const char *value,
                                  size_t *n);

/* Of the n_pairs pairs (pairs[2i] the key, pairs[2i + 1] the value), the
 * ids of the one carried by the fewest nodes: every node carrying all of
 * them is among these (NULL and 0 when one is carried by none). n_pairs
 * must be at least 1. */
const uint32_t *wh_nodeindex_candidates(const struct wh_nodeindex *ix, const char *const *pairs,
                                        size_t n_pairs, size_t *n);

#endif /* WH_NODEINDEX_H */
