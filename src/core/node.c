/* node.c: a TPU node's labels (node.h). */
#include "wh/node.h"

#include <string.h> /* strcmp */

const char *wh_node_label(const struct wh_node_rec *node, const char *key)
{
    for (size_t i = 0; i < node->n_labels; i++)
        if (!strcmp(node->keys[i], key))
            return node->values[i];
    return NULL;
}

bool wh_node_has_labels(const struct wh_node_rec *node, const char *const *pairs, size_t n_pairs)
{
    for (size_t i = 0; i < n_pairs; i++) {
        const char *v = wh_node_label(node, pairs[2 * i]);
        if (!v || strcmp(v, pairs[2 * i + 1]))
            return false;
    }
    return true;
}
