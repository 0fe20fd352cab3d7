/* kubelist.h: a LIST of a whole collection, in pages, its items handed over
 * one at a time as they arrive.
 *
 * Pages as kubectl and client-go's pager ask for them (limit=N, then the
 * continue token of each page), so that the API server never builds one
 * answer for the whole collection. Within a page nothing holds the page:
 * the body is split into its items as its bytes arrive (struct
 * wh_list_split), each item is parsed alone and given to the caller, who
 * keeps what it needs; memory is one item, the List's few members besides
 * its items, and what the caller keeps, whatever the collection's size and
 * even when a server ignores limit and sends everything at once.
 *
 * A continue token the API server no longer honours (410 Gone: a paged list
 * must finish before the server compacts the snapshot it reads, about five
 * minutes by default) starts the LIST again from the first page, after
 * on_restart has told the caller to drop what it kept; WH_KUBE_LIST_RESTARTS
 * times at most, then an error that says so.
 *
 * Ownership: items handed to on_item are the callee's (cJSON_Delete).
 */
#ifndef WH_KUBELIST_H
#define WH_KUBELIST_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#include "wh/buf.h"  /* struct wh_buf */
#include "wh/err.h"  /* enum wh_err */
#include "wh/kube.h" /* struct wh_kube */

/* Items per page unless the caller says otherwise (kubectl's and
 * client-go's pager's default). */
#define WH_KUBE_LIST_PAGE 500
/* Largest single item taken (the API server stores objects of at most
 * about 1.5 MiB). */
#define WH_KUBE_ITEM_MAX ((size_t)16 * 1024 * 1024)
/* Largest continue token taken, NUL included. */
#define WH_KUBE_CONTINUE_MAX 4096
/* How often an expired continue token restarts the LIST before it fails. */
#define WH_KUBE_LIST_RESTARTS 3

/* Takes item (a member of the List's items) in every case; a non-OK answer
 * stops the LIST with that error (errbuf filled by the callee). */
typedef enum wh_err (*wh_kube_item_fn)(void *arg, cJSON *item, char *errbuf);

struct wh_kube_list_opts {
    wh_kube_item_fn on_item;       /* required */
    void (*on_restart)(void *arg); /* the LIST starts again: drop what was kept (may be NULL) */
    void *arg;
    long page_size; /* <= 0: WH_KUBE_LIST_PAGE */
};

struct wh_kube_list_stats {
    size_t pages, items, restarts;
    size_t bytes; /* of every page's body, as received */
};

/* LIST path (a collection: "/api/v1/pods", with a query or not) page by
 * page into opts->on_item. Errors name the path: a transport failure
 * (WH_ERR_HTTP/WH_ERR_TLS), a status other than 200 (WH_ERR_HTTP, with the
 * API server's message), an answer that is not a List of objects
 * (WH_ERR_INVALID: which page and item), an item over WH_KUBE_ITEM_MAX
 * (WH_ERR_TOOBIG), too many expired continue tokens (WH_ERR_UNAVAILABLE),
 * or the callee's error. stats (may be NULL) gets the counts, also on
 * failure. */
WH_NODISCARD enum wh_err wh_kube_list(struct wh_kube *k, const char *path,
                                      const struct wh_kube_list_opts *opts,
                                      struct wh_kube_list_stats *stats, char *errbuf);

/* The splitter, public for its tests: bytes of one List in, its items out
 * as they complete; what is not an item (kind, apiVersion, metadata) is
 * kept in rest as the List with an empty items array. */
struct wh_list_split {
    int (*on_item)(void *arg, const char *json, size_t len); /* non-zero: stop */
    void *arg;
    struct wh_buf rest, item;
    long depth;
    int target; /* where the bytes at hand go (kubelist.c) */
    bool in_str, esc, started, done, in_items, stopped;
    size_t at;      /* bytes seen */
    size_t n_items; /* items handed over */
    char why[160];  /* set when the bytes are not a List of objects */
};

/* Start (s zeroed the first time), or start again keeping the buffers'
 * memory. */
void wh_list_split_init(struct wh_list_split *s, int (*on_item)(void *, const char *, size_t),
                        void *arg);
void wh_list_split_free(struct wh_list_split *s);
/* Feed n bytes: 0, or -1 once the bytes cannot be a List of objects (s->why
 * says why), an item is over WH_KUBE_ITEM_MAX, memory ran out or on_item
 * asked to stop (s->stopped). */
int wh_list_split_feed(struct wh_list_split *s, const char *p, size_t n);
/* After the last byte: the List without its items (parsed; the caller's),
 * or NULL with s->why set when the bytes did not make one whole List. */
cJSON *wh_list_split_end(struct wh_list_split *s);

#endif /* WH_KUBELIST_H */
