/* tpuenv.h: TPU facts shared by every mutation path (the KubeRay pod path of
 * mutate.c and the generic workload path of workload.c): which containers
 * request TPUs, the TorchTPU topology string, and "host:port" lists.
 * Pure; docs/workloads.md has the meaning of each value. */
#ifndef WH_TPUENV_H
#define WH_TPUENV_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#include "wh/buf.h"      /* struct wh_buf */
#include "wh/err.h"      /* enum wh_err */
#include "wh/topology.h" /* struct wh_topology */

/* Bounds that keep one review's output proportional to a real slice (the
 * largest today has ~1,536 hosts and ~6,144 processes). */
#define WH_MAX_HOSTS 4096L
/* First TPU process / slicebuilder port (docs/internals/reference-behaviour.md §2.8). */
#define WH_TPU_PROCESS_PORT_BASE 8471
#define WH_MAX_TORCH_ADDRESSES 65536L

struct wh_tpu_container {
    const cJSON *obj; /* borrowed from the pod */
    int index;        /* in spec.containers */
    long chips;
};

/* The TPU containers of a pod, in spec order. items is owned
 * (wh_tpu_containers_free). */
struct wh_tpu_containers {
    struct wh_tpu_container *items;
    unsigned n;
    long chips; /* sum over the TPU containers */
};

/* Collect the containers of a spec.containers array that request
 * google.com/tpu. WH_ERR_INVALID with "spec.containers[i]: <reason>" in
 * errbuf when a quantity does not parse (out->items is then freed);
 * WH_ERR_NOMEM. containers must be an array. */
WH_NODISCARD enum wh_err wh_tpu_containers_collect(const cJSON *containers,
                                                   struct wh_tpu_containers *out, char *errbuf);
void wh_tpu_containers_free(struct wh_tpu_containers *tc); /* NULL-safe */

/* TORCH_TPU_TOPOLOGY of a slice: dims with commas, Z=1 for 2-D topologies,
 * and a fourth field 2 (TensorCores per chip) on TPU7x. */
void wh_torch_topology(const struct wh_topology *t, bool tpu7x, char *out, size_t n);

/* Append to b each host of the comma list hostnames repeated per_host
 * times as "host:<base+k>", k < per_host, joined by ','. Used for
 * TORCH_TPU_SLICEBUILDER_ADDRESSES (per_host = devices per host) and TPU7x's
 * TPU_PROCESS_ADDRESSES (per_host = TPU containers). *too_many (no output)
 * when the list would exceed WH_MAX_TORCH_ADDRESSES entries. */
WH_NODISCARD enum wh_err wh_host_ports(const char *hostnames, long per_host, struct wh_buf *b,
                                       bool *too_many);

struct wh_decision;

/* wh_host_ports() remembered across the TPU containers of one pod, which
 * ask for the same lists (on TPU7x at 256 hosts, 100+ KB each). */
struct wh_port_list {
    const char *text;        /* kept by a decision; NULL until built */
    struct wh_buf hostnames; /* a copy of what text was built over */
    long per_host;
    bool too_many;
};
void wh_port_list_init(struct wh_port_list *pl);
void wh_port_list_free(struct wh_port_list *pl); /* NULL-safe */
/* wh_host_ports(hostnames, per_host) into a buffer of at most max bytes
 * that d keeps (wh_decision_keep), or the list already built over the same
 * text with the same per_host. *out lives as long as d: every container's
 * operation is written from it. */
WH_NODISCARD enum wh_err wh_port_list_get(struct wh_port_list *pl, struct wh_decision *d,
                                          const char *hostnames, long per_host, size_t max,
                                          const char **out, bool *too_many);

/* The first env name of the table of injected variables (envtab.h, in its
 * order) that env has more than once, with the indices of its first two
 * entries; NULL when there is none. Such a pod is ambiguous:
 * the lookup rule (docs/internals/reference-behaviour.md §2.7.1) reads the
 * first entry, the kubelet uses the last, so an edit of one can be hidden by
 * the other. */
const char *wh_env_duplicate(const cJSON *env, int *first, int *second);

/* Hosts in a comma list (1 for "localhost"). */
long wh_host_count(const char *hostnames);

/* TPU_WORKER_ID of TPU container ci of host `host`
 * (docs/internals/reference-behaviour.md §2.7.3): on TPU7x every TPU container is a
 * worker (host x containers + ci). */
long wh_tpu_worker_id(long host, unsigned n_tpu, unsigned ci, bool tpu7x);

/* One identity per slice (docs/workloads.md, "One identity per slice"):
 * a single-host identity copied into a container of a multi-host slice
 * contradicts the peers the webhook builds. Stable rule keys: */
#define WH_RULE_IDENTITY_WORKER_ID "tpu-identity-worker-id"
#define WH_RULE_IDENTITY_LOCALHOST "tpu-identity-localhost"

struct wh_identity_check {
    long hosts;     /* hosts of the slice; only > 1 is judged */
    long host;      /* the pod's index in its slice; -1 for a template (all its pods) */
    long worker_id; /* the container's own TPU_WORKER_ID (TPU7x: host x containers + index) */
    bool check_id;  /* TPU_WORKER_ID is the pod's index (Indexed Job, JobSet, LWS pods) */
};

struct wh_identity_problem {
    const char *rule; /* WH_RULE_IDENTITY_* */
    char text[320];   /* "sets NAME \"v\" (env[i]), ...; remove it ...", for the caller
                       * to prefix with the container */
};

/* The rules a container's env breaks (0, 1 or 2, written to out[]): a
 * literal TPU_WORKER_ID other than the pod's index or the container's worker
 * id (at a template: any literal, its pods have different indices), and
 * TPU_WORKER_HOSTNAMES "localhost". A valueFrom (GKE's fieldRef to the
 * index) or an empty value is respected. */
int wh_identity_conflicts(const cJSON *env, const struct wh_identity_check *c,
                          struct wh_identity_problem out[2]);

/* Names that resolve (docs/workloads.md): every name the webhook writes is
 * a cluster-DNS name, which a hostNetwork pod resolves only with dnsPolicy
 * ClusterFirstWithHostNet. */
#define WH_RULE_HOSTNETWORK_DNS "tpu-hostnetwork-dnspolicy"

/* True when pod spec spec (of a pod or a template; field names it, e.g.
 * "spec.template.spec") has hostNetwork: true without dnsPolicy
 * ClusterFirstWithHostNet while pods (> 1) reach each other by name
 * (the hosts of a slice times wh_megascale_joined_slices, megascale.h);
 * why then gets the text, naming both fields and `names`, the variables
 * that hold those names. */
bool wh_hostnet_dns_conflict(const cJSON *spec, const char *field, long pods, const char *names,
                             char *why, size_t n);

/* The names the workload path writes, and the KubeRay path's. */
#define WH_DNS_NAMES_WORKLOAD "TPU_WORKER_HOSTNAMES, PET_MASTER_ADDR, the MEGASCALE coordinator"
#define WH_DNS_NAMES_KUBERAY "TPU_WORKER_HOSTNAMES, the MEGASCALE coordinator"

#endif
