/* state.h: the read-only view of cluster state that the engine consults.
 *
 * The engine never does I/O. Whatever knows the cluster (the CLI's --pods and
 * --nodes files, the render command's growing list, the Kubernetes caches plus
 * the legacy-index ledger of the server) implements struct wh_state_ops and
 * hands the engine a struct wh_state. Every callback must be reentrant and
 * must not block on anything remote; the records it passes are borrowed for
 * the duration of the callback only.
 *
 * This header also declares wh_memstate, a simple in-memory implementation
 * used by the CLI, the render command and the tests.
 */
#ifndef WH_STATE_H
#define WH_STATE_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/err.h"  /* enum wh_err */
#include "wh/node.h" /* wh_node_visit_fn */

struct cJSON;

/* What the engine needs of an existing worker pod
 * (see docs/internals/reference-behaviour.md §2.4 step 3). */
#define WH_WORKER_ID_EMPTY (-1L) /* first TPU container's TPU_WORKER_ID unset/valueFrom */
#define WH_WORKER_ID_NONE (-2L)  /* no TPU container had an integer TPU_WORKER_ID */

struct wh_pod_rec {
    const char *name;          /* metadata.name or generateName; for messages */
    const char *ns;            /* metadata.namespace */
    const char *cluster;       /* ray.io/cluster label */
    const char *group;         /* ray.io/group label */
    const char *replica_label; /* "replicaIndex" label value, NULL when absent */
    bool deleting;             /* metadata.deletionTimestamp is set */
    unsigned n_tpu_containers; /* containers requesting google.com/tpu; 0 = no TPU */
    /* TPU_WORKER_ID of the first TPU container holding an integer, walking the
     * TPU containers in order; WH_WORKER_ID_EMPTY when an unset value is met
     * first, WH_WORKER_ID_NONE when no container holds an integer. */
    long worker_id;
};

/* Return 0 to go on, non-zero to stop the walk early. */
typedef int (*wh_pod_visit_fn)(void *arg, const struct wh_pod_rec *pod);

struct wh_state_ops {
    /* Visit every known worker pod in namespace ns whose ray.io/cluster and
     * ray.io/group labels equal cluster and group (reservations included). */
    enum wh_err (*each_group_pod)(const void *impl, const char *ns, const char *cluster,
                                  const char *group, wh_pod_visit_fn fn, void *arg, char *errbuf);
    /* Visit every known TPU node. */
    enum wh_err (*each_node)(const void *impl, wh_node_visit_fn fn, void *arg, char *errbuf);
    /* Optional (NULL: the engine walks each_node and filters). Visit every
     * known TPU node carrying all n_pairs labels (pairs[2i] the key,
     * pairs[2i + 1] the value; n_pairs >= 1), in any order, looked up in an
     * index of the nodes by label (nodeindex.h) rather than found by a walk
     * over them all. */
    enum wh_err (*each_node_with)(const void *impl, const char *const *pairs, size_t n_pairs,
                                  wh_node_visit_fn fn, void *arg, char *errbuf);
    /* NULL when pod state can be trusted for legacy index assignment; else a
     * static or impl-owned reason (e.g. "the pod cache has not synced yet").
     * The callback itself may be NULL, meaning always trusted. */
    const char *(*legacy_unavailable)(const void *impl);
    /* Which free host a legacy pod gets in the replica the engine chose. 0
     * (or a NULL callback): the lowest, as the reference does. Otherwise
     * the (pick mod free count)-th free host, counting from the lowest:
     * several webhook replicas that each draw a random pick rarely choose
     * the same id at once, and a replica still fills before the next one
     * starts (docs/legacy-indices.md). */
    unsigned long (*legacy_pick)(const void *impl);
    /* Optional (NULL, or NULL returned: nothing written). The nonce of the
     * worker-id claim that will stand for the legacy indices the engine
     * assigns now; the patch then sets it as the pod's annotation
     * WH_ANN_CLAIM_NONCE (podspec.h), so the claim can be tied to the pod
     * it was made for (docs/legacy-indices.md). Read only when indices are
     * assigned, not when a pod's own are reused. */
    const char *(*legacy_claim_nonce)(const void *impl);
};

struct wh_state {
    const struct wh_state_ops *ops;
    const void *impl;
};

/* Fill rec from a Pod object. Strings in rec borrow from pod; rec is valid
 * while pod is. Returns false when pod is not an object. */
bool wh_pod_rec_from_json(const struct cJSON *pod, struct wh_pod_rec *rec);

/* ---- wh_memstate: an in-memory state ---------------------------------- */

struct wh_memstate;

/* New empty state; NULL on OOM. Free with wh_memstate_free(). */
struct wh_memstate *wh_memstate_new(void);
void wh_memstate_free(struct wh_memstate *ms); /* NULL-safe */

/* Add pods from a PodList object, a JSON array of pods, or a single Pod, kept
 * only if the pod cache would keep them (ray.io/node-type=worker and
 * app.kubernetes.io/created-by=kuberay-operator). Copies what it needs;
 * json stays the caller's. *added counts the kept pods (may be NULL). */
WH_NODISCARD enum wh_err wh_memstate_add_pods(struct wh_memstate *ms, const struct cJSON *json,
                                              size_t *added, char *errbuf);
/* Add nodes from a NodeList, array or Node; kept only when they carry the
 * cloud.google.com/gke-tpu-accelerator label. */
WH_NODISCARD enum wh_err wh_memstate_add_nodes(struct wh_memstate *ms, const struct cJSON *json,
                                               size_t *added, char *errbuf);
/* Add one pod record (strings are copied). */
WH_NODISCARD enum wh_err wh_memstate_add_rec(struct wh_memstate *ms, const struct wh_pod_rec *rec);

/* A wh_state view of ms; borrowed, valid while ms lives and is not changed.
 * Its each_node_with looks the nodes up in an index kept as they are added. */
struct wh_state wh_memstate_view(const struct wh_memstate *ms);

#endif /* WH_STATE_H */
