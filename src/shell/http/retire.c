/* retire.c: the retired list of reloaded objects (see retire.h). */
#include "retire.h"

#include <stdbool.h> /* bool */

void wh_retire_push(struct wh_retire_list *list, struct wh_retire_node *node,
                    wh_retire_free_fn free_fn, time_t now)
{
    node->retired_at = now;
    node->free_fn = free_fn;
    node->next = list->head;
    list->head = node;
}

static void reap(struct wh_retire_list *list, bool all, time_t now)
{
    struct wh_retire_node **np = &list->head;
    while (*np) {
        struct wh_retire_node *n = *np;
        if (all || now - n->retired_at > WH_RETIRE_GRACE_S) {
            *np = n->next;
            n->free_fn(n);
        } else {
            np = &n->next;
        }
    }
}

void wh_retire_reap(struct wh_retire_list *list, time_t now)
{
    reap(list, false, now);
}

void wh_retire_drain(struct wh_retire_list *list)
{
    reap(list, true, 0);
}
