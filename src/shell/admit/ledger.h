/* ledger.h: the legacy-index ledger (reservations of (replica, host) ids).
 *
 * A legacy-path admission locks its worker group, lets the engine read the
 * group's pods (cache + the ledger's pending reservations), and reserves the
 * chosen (replica, host) before unlocking, so the next admission of the same
 * slice sees it at once without waiting for the watch
 * (docs/internals/reference-behaviour.md §5 and §6, B5-B7).
 *
 * Locking is per worker group: a sharded table maps (ns, cluster, group) to a
 * group entry with its own mutex. A shard mutex is held only to find or
 * create an entry, never around the engine, so an admission for one cluster
 * never waits on another cluster.
 *
 * Lifetime of a reservation (Kubernetes mode):
 *   - created by wh_ledger_reserve() while the group is locked;
 *   - confirmed (and dropped: the pod cache carries it from then on) when
 *     the watch shows a live pod with the same (ns, cluster, group,
 *     replicaIndex label, TPU_WORKER_ID) - wh_ledger_confirm();
 *   - released when the pod never shows up: once the watch has been healthy
 *     for ttl_ms after both the reservation and the last (re)sync, and has
 *     delivered an event or bookmark that late (wh_ledger_set_heard()),
 *     dropped at the next lock of the group or sweep (wh_ledger_sweep()).
 *     While the watch is down or silent nothing expires (a pod created
 *     meanwhile would be missed, and forgetting its id could hand it out
 *     twice).
 * A pod deleted after its confirmation frees its ids through the cache.
 * The pod watch reaches the ledger through its owner (admit.c registers
 * the cache's hooks); the cache does not know the ledger.
 * A DELETED event never releases a *pending* reservation: the only pods that
 * can share its ids are older pods that were already terminating when the
 * id was handed out, and their deletion says nothing about the new pod.
 *
 * Standalone mode (ttl_ms < 0): reservations never expire; the ledger is the
 * whole state. Memory is bounded by max_per_group per group and by
 * wh_ledger_drop_cluster(), called when a RayCluster of that name is created
 * again (a new cluster starts with fresh ids).
 *
 * Thread-safe. Ownership: the ledger copies every string it keeps, and owns
 * its sweeper thread (opts.sweep_ms).
 */
#ifndef WH_LEDGER_H
#define WH_LEDGER_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/err.h"   /* enum wh_err */
#include "wh/state.h" /* wh_pod_visit_fn */

#define WH_LEDGER_DEFAULT_TTL_MS 30000L
#define WH_LEDGER_DEFAULT_MAX_PER_GROUP 65536u

struct wh_ledger_opts {
    long ttl_ms;          /* < 0: never expire (standalone); 0: default */
    size_t max_per_group; /* pending reservations per group; 0: default */
    long (*now_ms)(void); /* monotonic clock; NULL: wh_clock_ms (tests inject) */
    /* > 0: the ledger's own thread calls wh_ledger_sweep() this often
     * (Kubernetes mode: WH_LEDGER_SWEEP_MS); 0: no thread, the owner sweeps
     * if it wants to (tests, standalone). */
    long sweep_ms;
};
#define WH_LEDGER_SWEEP_MS 1000L

struct wh_ledger;
struct wh_ledger_group; /* a locked group; valid until wh_ledger_unlock() */

/* NULL on OOM or when the sweeper thread cannot start. opts may be NULL
 * (defaults). Free with wh_ledger_free(), after every group has been
 * unlocked; it stops the sweeper first. */
struct wh_ledger *wh_ledger_new(const struct wh_ledger_opts *opts);
void wh_ledger_free(struct wh_ledger *lg); /* NULL-safe */

/* Lock the group (creating its entry). Expired reservations of the group
 * are dropped here. Blocks only on other admissions of the same group. */
WH_NODISCARD enum wh_err wh_ledger_lock(struct wh_ledger *lg, const char *ns, const char *cluster,
                                        const char *group, struct wh_ledger_group **out,
                                        char *errbuf);
void wh_ledger_unlock(struct wh_ledger_group *g); /* NULL-safe */

/* Visit the locked group's pending reservations that wh_ledger_mark() did
 * not mark since wh_ledger_clear_marks(), as pod records: replica_label
 * "<group>-<replica>", the reserved worker_id, name
 * "(reserved <group>-<replica>-<host>)". Returns the visitor's non-zero
 * value, else 0. */
int wh_ledger_each(struct wh_ledger_group *g, wh_pod_visit_fn fn, void *arg);
/* Marks let a state view show a reservation only when the cache does not
 * hold a live pod with the same ids yet (the watch can run ahead of the
 * confirmation). mark returns true when a reservation matched. */
void wh_ledger_clear_marks(struct wh_ledger_group *g);
bool wh_ledger_mark(struct wh_ledger_group *g, const char *replica_label, long worker_id);

/* Reserve (replica, host) in the locked group; worker_id is the
 * TPU_WORKER_ID the pod's first TPU container gets (struct
 * wh_engine_result.worker_id), which the reservation shows and the watch
 * confirms. WH_ERR_TOOBIG when the group holds max_per_group pending
 * reservations, WH_ERR_NOMEM. Reserving an id that is already pending
 * refreshes it. */
WH_NODISCARD enum wh_err wh_ledger_reserve(struct wh_ledger_group *g, long replica, long host,
                                           long worker_id, unsigned n_tpu_containers, char *errbuf);

/* Drop the locked group's reservation of (replica, worker_id), if any (a
 * claim for it failed). Returns true when one matched. */
bool wh_ledger_release(struct wh_ledger_group *g, long replica, long worker_id);

/* A live pod with these ids showed up in the watch: drop the matching
 * pending reservation. Returns true when one matched. */
bool wh_ledger_confirm(struct wh_ledger *lg, const char *ns, const char *cluster, const char *group,
                       const char *replica_label, long worker_id);

/* Since when (now_ms clock) the watch has been continuously healthy, or -1
 * when it is not (nothing expires then). Set by the pod cache's owner from
 * the cache's hooks (admit.c; the cache's clock is wh_clock_ms, the
 * default of now_ms). */
void wh_ledger_set_fresh_since(struct wh_ledger *lg, long since_ms);

/* The pod watch delivered something (an event or a bookmark) at at_ms,
 * after applying it. Once called, reservations expire by this time instead
 * of the clock: a watch that is open but silent (a half-dead connection the
 * kernel has not noticed yet) may be holding back the very pod a
 * reservation waits for. Set like wh_ledger_set_fresh_since(). */
void wh_ledger_set_heard(struct wh_ledger *lg, long at_ms);

/* Drop expired reservations everywhere and free idle empty group entries.
 * Never waits on a busy group (it is skipped). The sweeper thread
 * (opts.sweep_ms) calls it. */
void wh_ledger_sweep(struct wh_ledger *lg);

/* Forget every reservation of (ns, cluster) (standalone: the cluster was
 * created again). Waits for each of its groups in turn. WH_ERR_NOMEM when
 * some groups could not be visited. */
WH_NODISCARD enum wh_err wh_ledger_drop_cluster(struct wh_ledger *lg, const char *ns,
                                                const char *cluster);

/* Pending reservations and group entries right now. */
size_t wh_ledger_pending(struct wh_ledger *lg);
size_t wh_ledger_groups(struct wh_ledger *lg);

#endif /* WH_LEDGER_H */
