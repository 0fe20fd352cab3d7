/* podspec.h: reading what matters about a Pod (or a pod template): labels,
 * annotations, node selector, TPU containers and their env. Pure; every
 * returned pointer borrows from the cJSON tree it was read from. */
#ifndef WH_PODSPEC_H
#define WH_PODSPEC_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

/* Well-known keys (docs/internals/reference-behaviour.md §2, docs/kuberay-pods.md §2). */
#define WH_TPU_RESOURCE "google.com/tpu"
#define WH_LABEL_CLUSTER "ray.io/cluster"
#define WH_LABEL_GROUP "ray.io/group"
#define WH_LABEL_NODE_TYPE "ray.io/node-type"
#define WH_LABEL_CREATED_BY "app.kubernetes.io/created-by"
#define WH_LABEL_REPLICA_INDEX "ray.io/worker-group-replica-index"
#define WH_LABEL_HOST_INDEX "ray.io/replica-host-index"
#define WH_LABEL_REPLICA_NAME "ray.io/worker-group-replica-name"
#define WH_LABEL_LEGACY_REPLICA "replicaIndex"
#define WH_LABEL_QUEUE_NAME "kueue.x-k8s.io/queue-name"
#define WH_ANN_SLICE_TOPOLOGY "cloud.google.com/gke-tpu-slice-topology"
#define WH_ANN_REQUIRED_TOPOLOGY "kueue.x-k8s.io/podset-required-topology"
#define WH_ANN_SKIP_CHECK "cloud.google.com/skip-tpu-webhook-check"
/* The nonce of the worker-id claim a legacy pod was admitted with: the same
 * value the claim's Lease records, so that the pod, and only that pod, can
 * give the claim back when it goes (docs/legacy-indices.md). */
#define WH_ANN_CLAIM_NONCE "tpu-webhook/claim-nonce"
#define WH_SEL_ACCELERATOR "cloud.google.com/gke-tpu-accelerator"
#define WH_SEL_TOPOLOGY "cloud.google.com/gke-tpu-topology"
#define WH_KEY_NODEPOOL "cloud.google.com/gke-nodepool"

/* The TPU request of one container. */
struct wh_tpu_request {
    bool requests_tpu; /* limits or requests of google.com/tpu present and non-zero */
    long chips;        /* the request if non-zero, else the limit */
};

/* Read container's google.com/tpu request. WH_ERR_INVALID with the reason
 * when a quantity does not parse; WH_ERR_NOMEM when even that cannot be
 * said. */
WH_NODISCARD enum wh_err wh_container_tpu(const cJSON *container, struct wh_tpu_request *out,
                                          char *errbuf);
/* Lenient form for records of existing pods: a bad quantity counts as 0. */
bool wh_container_requests_tpu(const cJSON *container);

/* The env lookup rule (docs/internals/reference-behaviour.md §2.7.1). */
struct wh_env_lookup {
    const char *value; /* "" when unset or set through valueFrom */
    bool exists;       /* a deciding entry (non-empty value or valueFrom) exists */
    int index;         /* index of the deciding entry, -1 if none */
    int first_index;   /* index of the first entry with that name, -1 if none */
};
void wh_env_lookup(const cJSON *env, const char *name, struct wh_env_lookup *out);

/* Who an object is in messages and records: metadata.name, else its
 * generateName (a pod before the API server names it), else "". meta is
 * the metadata object (may be NULL); the text is meta's. */
const char *wh_meta_name(const cJSON *meta);

/* Label / annotation / nodeSelector value of an object's metadata or spec;
 * NULL when absent or not a string. */
const char *wh_meta_label(const cJSON *obj, const char *key);
const char *wh_meta_annotation(const cJSON *obj, const char *key);
bool wh_meta_has_label(const cJSON *obj, const char *key);

/* True when the Pod object goes down the legacy (state-reading) index path:
 * it requests TPUs and lacks either native index label. */
bool wh_pod_is_legacy(const cJSON *pod);
bool wh_meta_has_annotation(const cJSON *obj, const char *key);
const char *wh_node_selector(const cJSON *pod_spec, const char *key);

/* The slice topology of a KubeRay pod or pod template `obj` with spec `spec`
 * (docs/internals/reference-behaviour.md §2.2 item 5): the annotation
 * WH_ANN_SLICE_TOPOLOGY when the key is present, even empty, else the
 * nodeSelector WH_SEL_TOPOLOGY. *from_annotation says which. Borrowed from
 * obj or spec; NULL when neither is a string. */
const char *wh_slice_topology(const cJSON *obj, const cJSON *spec, bool *from_annotation);

/* Kueue / dynamic-slicing bypass (docs/internals/reference-behaviour.md §4.3). */
bool wh_managed(const cJSON *labels, const cJSON *annotations);

#endif
