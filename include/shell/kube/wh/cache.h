/* cache.h: pod and node caches fed by LIST + WATCH of the Kubernetes API.
 *
 * Two background threads (pods, nodes: reflector.h) each LIST with paging,
 * then WATCH from the list's resourceVersion with bookmarks; 410 Gone
 * relists, any other failure reconnects with exponential backoff and
 * jitter. They write into one store (store.h, its tables in htab.h);
 * readers (admissions) hold its reader lock only while walking. This
 * module puts them together and answers the admission pipeline.
 *
 * Pods: label selector ray.io/node-type=worker,
 * app.kubernetes.io/created-by=kuberay-operator, all namespaces. Only what
 * the engine needs is kept (struct wh_pod_rec), with namespace, cluster,
 * group and replicaIndex strings interned, so 100,000 pods take a few
 * tens of bytes each plus their names.
 * Nodes: label selector cloud.google.com/gke-tpu-accelerator; all labels of
 * those (few) nodes are kept.
 *
 * The pod watch tells its owner what it learns through hooks (struct
 * wh_cache_hooks; admit.c drives the legacy-index ledger with them). A hook
 * runs after the cache has applied what it reports, so an admission never
 * sees a pod missing from both the cache and the ledger (it may briefly see
 * it in both; the state view then shows it once, see wh_ledger_mark()).
 *
 * Ownership: the cache takes over kube (freed by wh_cache_free()); the
 * hooks' arg is borrowed and must outlive the cache.
 */
#ifndef WH_CACHE_H
#define WH_CACHE_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/err.h"   /* enum wh_err */
#include "wh/kube.h"  /* struct wh_kube */
#include "wh/state.h" /* wh_pod_visit_fn, wh_node_visit_fn, struct wh_pod_rec */

/* How long the pod cache is trusted for legacy indices after the API server
 * stops answering (reservations of this replica stay held meanwhile). */
#define WH_CACHE_DEFAULT_TRUST_MS 30000L

struct wh_cache_opts {
    long trust_ms;        /* 0: default */
    long page_size;       /* LIST limit; 0: 500 */
    long watch_timeout_s; /* server-side watch timeout; 0: 120..240 s, jittered */
    long max_backoff_ms;  /* 0: 30 s */
};

/* What the pod watch reports, called on the pod watcher's thread, outside
 * the cache's lock (a hook may read the cache). Times are wh_clock_ms().
 * Any hook may be NULL. */
struct cJSON;

struct wh_cache_hooks {
    void *arg; /* passed to every hook */
    /* A pod was listed, added or updated (deleted false), or deleted
     * (deleted true); the cache holds (no longer holds) it. Pods a relist
     * finds gone are dropped without a call. The record, and obj (the Pod
     * as the API server sent it, for what the record does not keep), are
     * valid only during the call. */
    void (*pod_changed)(void *arg, const struct wh_pod_rec *pod, const struct cJSON *obj,
                        bool deleted);
    /* The pod watch has been healthy since since_ms (it was not), or went
     * down (since_ms -1). */
    void (*pods_health)(void *arg, long since_ms);
    /* The pod cache holds everything the API server said up to at_ms: a
     * LIST taken at at_ms was applied (a sync), or the watch delivered an
     * event or a bookmark at at_ms, after applying it. */
    void (*pods_current)(void *arg, long at_ms);
};

struct wh_cache;

/* Start the watchers; never waits for the API server. kube is taken over
 * (also on failure); hooks (copied) may be NULL. NULL with a reason on
 * failure. */
struct wh_cache *wh_cache_new(struct wh_kube *kube, const struct wh_cache_hooks *hooks,
                              const struct wh_cache_opts *opts, char *errbuf);
/* Stops the threads (aborting transfers in flight) and frees. NULL-safe. */
void wh_cache_free(struct wh_cache *c);

/* Walk the cached pods of a worker group under the reader lock; *stopped
 * gets the visitor's non-zero value, else 0. The visitor must not call back
 * into the cache (the same holds for wh_cache_each_node()): the lock prefers
 * writers, so a nested read lock deadlocks once a watch event waits. The
 * records are valid only during the call. */
WH_NODISCARD enum wh_err wh_cache_each_group_pod(struct wh_cache *c, const char *ns,
                                                 const char *cluster, const char *group,
                                                 wh_pod_visit_fn fn, void *arg, int *stopped,
                                                 char *errbuf);
/* Walk the cached TPU nodes. WH_ERR_UNAVAILABLE before the node cache first
 * synced (an empty answer would silently change subslice affinity). */
WH_NODISCARD enum wh_err wh_cache_each_node(struct wh_cache *c, wh_node_visit_fn fn, void *arg,
                                            int *stopped, char *errbuf);
/* The cached TPU nodes carrying every one of n_pairs labels (n_pairs >= 1;
 * pairs as struct wh_state_ops.each_node_with takes them), looked up in the
 * cache's index of nodes by label, in no set order; otherwise as
 * wh_cache_each_node(). */
WH_NODISCARD enum wh_err wh_cache_each_node_with(struct wh_cache *c, const char *const *pairs,
                                                 size_t n_pairs, wh_node_visit_fn fn, void *arg,
                                                 int *stopped, char *errbuf);

/* NULL when the pod cache can be trusted for legacy index assignment, else
 * a static reason. */
const char *wh_cache_pods_unavailable(struct wh_cache *c);
/* Both caches have synced at least once; else why (static text). */
bool wh_cache_ready(struct wh_cache *c, const char **why);

/* For the slice check (wh/slices.h): a count that moves whenever the pods
 * or nodes cached change (never waits), and the cached TPU pods (the slice
 * records, as Pod objects) and TPU nodes as JSON arrays for doctor, with
 * the count they show. *pods and *nodes are the caller's (cJSON_Delete).
 * WH_ERR_UNAVAILABLE before both caches synced; WH_ERR_NOMEM. */
unsigned long long wh_cache_version(struct wh_cache *c);
struct cJSON;
WH_NODISCARD enum wh_err wh_cache_slice_lists(struct wh_cache *c, struct cJSON **pods,
                                              struct cJSON **nodes, unsigned long long *version,
                                              char *errbuf);

struct wh_cache_stats {
    bool pods_synced, nodes_synced;
    bool pods_trusted; /* wh_cache_pods_unavailable() is NULL */
    /* How long each watch has been down (not connected and current), 0
     * while it is healthy; counted from start-up before the first sync. */
    long pods_down_ms, nodes_down_ms;
    size_t pods, nodes;
    size_t interned;       /* distinct interned strings */
    unsigned long relists; /* LISTs after the first (410 Gone, errors) */
    unsigned long reconnects;
};
void wh_cache_stats(struct wh_cache *c, struct wh_cache_stats *st);

#endif /* WH_CACHE_H */
