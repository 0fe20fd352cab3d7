/* reflector.h: one resource (pods or TPU nodes) kept in the store by LIST +
 * WATCH of the Kubernetes API, on a thread of its own (the caches' two
 * halves, cache.h).
 *
 * The thread LISTs with paging into the store, then WATCHes from the list's
 * resourceVersion with bookmarks; 410 Gone relists (mark and sweep by
 * generation, the old content stays readable meanwhile), any other failure
 * reconnects with exponential backoff and jitter, and a watch that was down
 * for longer than the cache is trusted relists before it is trusted again.
 * The pod reflector calls the hooks (struct wh_cache_hooks) after the store
 * has applied what they report.
 *
 * Ownership: kube and store are borrowed (shared by both reflectors) and
 * must outlive the reflector; hooks are copied, their arg borrowed.
 * wh_reflector_free() stops and joins the thread, aborting a transfer in
 * flight, and frees.
 */
#ifndef WH_REFLECTOR_H
#define WH_REFLECTOR_H

#include <stdbool.h> /* bool */

#include "wh/cache.h" /* struct wh_cache_hooks, struct wh_cache_opts */
#include "wh/kube.h"  /* struct wh_kube */
#include "store.h"    /* struct wh_store */

/* The first backoff after a failure; it doubles up to opts.max_backoff_ms. */
#define WH_REFLECTOR_MIN_BACKOFF_MS 200L

enum wh_reflector_kind {
    WH_REFLECT_PODS,  /* KubeRay worker pods of every namespace */
    WH_REFLECT_NODES, /* nodes labelled WH_STORE_NODE_LABEL */
};

struct wh_reflector;

/* Start the thread; never waits for the API server. opts holds resolved
 * values (trust_ms, page_size, max_backoff_ms > 0; watch_timeout_s 0 means
 * 120..240 s, jittered). hooks (pods only) may be NULL. NULL with a reason
 * on failure. */
struct wh_reflector *wh_reflector_start(enum wh_reflector_kind kind, struct wh_kube *kube,
                                        struct wh_store *store, const struct wh_cache_hooks *hooks,
                                        const struct wh_cache_opts *opts, char *errbuf);
/* Ask the thread to stop (a transfer in flight is aborted); returns at once,
 * so that several reflectors stop together. */
void wh_reflector_stop(struct wh_reflector *w);
/* Stop, join and free. NULL-safe. */
void wh_reflector_free(struct wh_reflector *w);

/* The first LIST has been applied. */
bool wh_reflector_synced(const struct wh_reflector *w);
/* Since when (wh_clock_ms) the watch has been down (not connected and
 * current), -1 while it is healthy; from the start before the first sync. */
long wh_reflector_down_since(const struct wh_reflector *w);
/* LISTs after the first (410 Gone, errors, trust lost) and reconnections. */
unsigned long wh_reflector_relists(const struct wh_reflector *w);
unsigned long wh_reflector_reconnects(const struct wh_reflector *w);

#endif /* WH_REFLECTOR_H */
