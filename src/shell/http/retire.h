/* retire.h: objects swapped out on a reload, kept until no handshake can
 * hold them (private to the http room: the serving pair in tls.c and the
 * client CAs in clientca.c).
 *
 * A reload publishes the new object with an atomic exchange; a handshake
 * on another thread may have loaded the old pointer just before and still
 * be using it. The old object is pushed here and freed by a later reap,
 * once WH_RETIRE_GRACE_S have passed since it was pushed.
 *
 * The list is intrusive: the object embeds a struct wh_retire_node and
 * hands the list a callback that frees the whole object from its node.
 * Ownership: a pushed object belongs to the list; the list's reap or
 * drain calls its callback exactly once, and nothing else frees it.
 * No lock: a list is used by one thread only, the one that reloads (the
 * certificate watcher's), then drained by the owner's free once the
 * server that handshakes with its objects has stopped.
 */
#ifndef WH_RETIRE_H
#define WH_RETIRE_H

#include <stddef.h> /* offsetof */
#include <time.h>   /* time_t */

/* A handshake that picked an object is over long before this: handshakes
 * are bounded by the server's header timeout (seconds). */
#define WH_RETIRE_GRACE_S 600

struct wh_retire_node;
/* Frees the object that embeds node (recover it with WH_RETIRED_OBJ). */
typedef void (*wh_retire_free_fn)(struct wh_retire_node *node);

struct wh_retire_node {
    struct wh_retire_node *next;
    time_t retired_at;
    wh_retire_free_fn free_fn;
};

/* Zero-initialised (calloc, = {0}) is an empty list. */
struct wh_retire_list {
    struct wh_retire_node *head;
};

/* The object of type type whose member member is node. */
#define WH_RETIRED_OBJ(node, type, member) ((type *)(void *)((char *)(node)-offsetof(type, member)))

/* Take the object that embeds node, retired at now. */
void wh_retire_push(struct wh_retire_list *list, struct wh_retire_node *node,
                    wh_retire_free_fn free_fn, time_t now);
/* Free every object retired more than WH_RETIRE_GRACE_S before now. */
void wh_retire_reap(struct wh_retire_list *list, time_t now);
/* Free every object, whatever its age (the server has stopped). */
void wh_retire_drain(struct wh_retire_list *list);

#endif /* WH_RETIRE_H */
