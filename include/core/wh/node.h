/* node.h: a TPU node as the engine reads it (its name and labels), as the
 * cluster state (state.h) and the label index (nodeindex.h) pass it. The
 * strings are borrowed from whoever holds the node. Pure. */
#ifndef WH_NODE_H
#define WH_NODE_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

struct wh_node_rec {
    const char *name;
    size_t n_labels;
    const char *const *keys;   /* n_labels label keys */
    const char *const *values; /* n_labels label values, same order */
};

/* Return 0 to go on, non-zero to stop a walk over nodes early. */
typedef int (*wh_node_visit_fn)(void *arg, const struct wh_node_rec *node);

/* Label value of a node record, or NULL. */
const char *wh_node_label(const struct wh_node_rec *node, const char *key);
/* Does node carry every one of the n_pairs labels (pairs[2i] the key,
 * pairs[2i + 1] the value, as wh_state_ops.each_node_with takes them)? */
bool wh_node_has_labels(const struct wh_node_rec *node, const char *const *pairs, size_t n_pairs);

#endif
