/* store.h: what the pod and node caches hold (cache.h), behind one
 * reader-writer lock.
 *
 * Pods: only what the engine needs (struct wh_pod_rec), keyed by (namespace,
 * name) and chained per worker group (namespace, cluster, group); the
 * namespace, cluster, group and replicaIndex strings are interned. A TPU
 * pod also gets a slice record (slicerec.h: its own table and mutex, so the
 * slice check never holds the lock admissions read under). Nodes:
 * every label of the TPU nodes, found by name in a hash table and by label
 * in an index (nodeindex.h), both kept by the writers under the lock.
 *
 * The reflectors (reflector.h) write: they apply objects of a LIST or a
 * watch event, tagged with the LIST's generation, and after a LIST drop
 * what that generation did not see. Readers (admissions) hold the reader
 * lock only while they walk. The lock prefers writers, so that a steady
 * stream of admissions never holds watch events back; a visitor must not
 * call back into the store (a nested read lock deadlocks once a writer
 * waits).
 *
 * Ownership: the store copies everything it keeps (plain malloc: it
 * outlives requests); wh_store_free() frees it all.
 */
#ifndef WH_STORE_H
#define WH_STORE_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint32_t */

#include "wh/err.h"   /* enum wh_err */
#include "wh/state.h" /* struct wh_pod_rec, wh_pod_visit_fn, wh_node_visit_fn */

/* The label that makes a node a TPU node: the node watch selects by it, and
 * a node that loses it leaves the store. */
#define WH_STORE_NODE_LABEL "cloud.google.com/gke-tpu-accelerator"

struct cJSON;
struct wh_store;

struct wh_store *wh_store_new(void);    /* NULL on OOM */
void wh_store_free(struct wh_store *s); /* NULL-safe; no reader may be walking */

/* Apply one Pod of a LIST (deleted false) or of a watch event. Pods the
 * store does not keep (no KubeRay worker identity, no name) are skipped:
 * *pod is then NULL-named. Otherwise *pod describes the pod (its strings
 * point into obj). WH_ERR_NOMEM only. */
WH_NODISCARD enum wh_err wh_store_apply_pod(struct wh_store *s, const struct cJSON *obj,
                                            bool deleted, uint32_t gen, struct wh_pod_rec *pod);
/* Apply one Node likewise; a node without the TPU accelerator label is
 * dropped. WH_ERR_NOMEM only. */
WH_NODISCARD enum wh_err wh_store_apply_node(struct wh_store *s, const struct cJSON *obj,
                                             bool deleted, uint32_t gen);
/* After a complete LIST tagged gen: drop the pods (nodes) it did not show. */
void wh_store_sweep_pods(struct wh_store *s, uint32_t gen);
void wh_store_sweep_nodes(struct wh_store *s, uint32_t gen);

/* Walk the pods of a worker group (the nodes) under the reader lock;
 * returns the visitor's non-zero value, else 0. The records are valid only
 * during the call. */
int wh_store_each_group_pod(struct wh_store *s, const char *ns, const char *cluster,
                            const char *group, wh_pod_visit_fn fn, void *arg);
int wh_store_each_node(struct wh_store *s, wh_node_visit_fn fn, void *arg);
/* The nodes carrying every one of n_pairs labels (n_pairs >= 1; pairs as
 * struct wh_state_ops.each_node_with takes them), looked up in the index of
 * the nodes by label (nodeindex.h) that the writers keep with the nodes,
 * under the same lock; in no set order. */
int wh_store_each_node_with(struct wh_store *s, const char *const *pairs, size_t n_pairs,
                            wh_node_visit_fn fn, void *arg);

/* Changes applied so far to what the slice check reads (a TPU pod's
 * record, a TPU node): a reader that saw this number has nothing new to
 * read until it moves. Never waits on a lock. */
unsigned long long wh_store_version(struct wh_store *s);

/* The TPU pods (rebuilt from their slice records under the records' mutex,
 * slicerec.h) and the TPU nodes (under the reader lock: they are few) as
 * JSON arrays of Pod and Node objects for doctor (wh/doctor.h), and the
 * version the pods show. *pods and *nodes are
 * the caller's (cJSON_Delete); both NULL on WH_ERR_NOMEM. */
WH_NODISCARD enum wh_err wh_store_slice_lists(struct wh_store *s, struct cJSON **pods,
                                              struct cJSON **nodes, unsigned long long *version);

/* Pods, nodes and distinct interned strings held right now. */
void wh_store_counts(struct wh_store *s, size_t *pods, size_t *nodes, size_t *interned);

#endif /* WH_STORE_H */
