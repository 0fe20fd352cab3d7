/* pipeline.h: one TPU pod on its way through a mutation path, whichever
 * controller made it (KubeRay on /mutate, mutate.c; Jobs, JobSets,
 * LeaderWorkerSets and plain pods on /mutate-workload, workload.c).
 *
 * struct wh_tpu_pod is the one context of that walk: the pod as sent, its
 * TPU containers, its slice (topology, hosts, this pod's place), the values
 * built for its containers and the decision. It lives on the caller's stack
 * for one review: it borrows the pod's JSON, its names and the decision, and
 * owns tc, hosts, proc_addrs and torch_addrs (wh_tpu_pod_free). The guards
 * here are the ones every kind shares; where KubeRay differs for the
 * reference's sake (how a denial names the pod) the kind says so. Pure. */
#ifndef WH_PIPELINE_H
#define WH_PIPELINE_H

#include <stdbool.h> /* bool */

#include "wh/buf.h"      /* struct wh_buf */
#include "wh/decision.h" /* struct wh_decision */
#include "wh/err.h"      /* enum wh_err */
#include "wh/json.h"     /* cJSON */
#include "wh/state.h"    /* struct wh_state */
#include "wh/topology.h" /* struct wh_topology */
#include "wh/tpuenv.h"   /* struct wh_tpu_containers, struct wh_port_list */

#define WH_WL_NAME_MAX 320

/* Which controller made a TPU pod (wh_wl_classify, workload_pod.h). */
enum wh_workload_kind { WH_WL_KUBERAY, WH_WL_LWS, WH_WL_JOBSET, WH_WL_INDEXED_JOB, WH_WL_SINGLE };

struct wh_tpu_pod {
    const cJSON *pod, *spec, *labels;
    const char *ns, *pod_name; /* the pod's own name or generateName */
    enum wh_workload_kind kind;
    /* How messages name the pod ("<who>: <message>", wh_tpu_pod_deny): the
     * workload and its pod; on KubeRay "Pod "ns/name"", which a denial
     * follows with the RayCluster and worker group (the reference's form). */
    char who[768];
    const char *cluster, *group; /* KubeRay: the pod's RayCluster and worker group labels */
    struct wh_tpu_containers tc;
    const char *topology;  /* the slice topology as read (annotation wins) */
    char topology_buf[64]; /* workload path: the copy topology points at */
    char accel[96];        /* "" when unknown */
    const char *topo_from; /* where the topology was read, for messages */
    struct wh_topology topo;
    bool tpu7x;
    long n_hosts;        /* pods (hosts) of one slice */
    long host;           /* this pod's index in its slice */
    long n_slices;       /* slices of the workload that are one world (1 unless a JobSet's) */
    long slice;          /* this pod's slice: KubeRay's replica, a JobSet's job index */
    bool legacy;         /* KubeRay: indices not from the native labels (legacy.h) */
    bool identity;       /* TPU_WORKER_ID / TPU_WORKER_HOSTNAMES are ours to fill */
    struct wh_buf hosts; /* workload path: this slice's peers; "localhost" for one host */
    /* Built once for all TPU containers: TPU_PROCESS_ADDRESSES and
     * TORCH_TPU_SLICEBUILDER_ADDRESSES over hosts. */
    struct wh_port_list proc_addrs, torch_addrs;
    char headless[WH_WL_NAME_MAX];     /* KubeRay: "<cluster>-headless" */
    char tpu_name[WH_WL_NAME_MAX];     /* KubeRay: TPU_NAME, "<group>-<replica>";
                                        * LWS subgroups: "<leader>-subgroup-<i>" */
    const char *lws_tpu_name;          /* LWS subgroups: the TPU_NAME LWS gives the whole
                                        * group (the leader's name), replaced; else NULL */
    char master[WH_WL_NAME_MAX];       /* PET_MASTER_ADDR when torchrun spans the slices */
    char slice_master[WH_WL_NAME_MAX]; /* PET_MASTER_ADDR of a world of this slice only */
    bool megascale;                    /* MEGASCALE_NUM_SLICES may be filled */
    char coordinator[WH_WL_NAME_MAX];  /* MEGASCALE_COORDINATOR_ADDRESS */
    /* KubeRay: the texts every TPU container's operations are written from,
     * kept by the decision (wh_decision_keep). */
    const char *peer_names;    /* multi-host DNS list, NULL on one host */
    const char *process_addrs; /* TPU7x's TPU_PROCESS_ADDRESSES, or NULL */
    char torch_topology[96];   /* TORCH_TPU_TOPOLOGY */
    struct wh_decision *d;
};

/* A step of the walk. Each may deny (p->d); skipped: admitted unchanged
 * with a warning (the workload path's skips). Errors only for OOM, a patch
 * over its limit (WH_ERR_TOOBIG) or a failing state callback (errbuf). */
typedef enum wh_err (*wh_pod_step)(struct wh_tpu_pod *p, const struct wh_state *st, bool *skipped,
                                   char *errbuf);

/* How a mutation path walks a TPU pod (wh_tpu_pod_run): the skeleton is
 * one, and where KubeRay must differ for the reference's sake (its check
 * order, its messages, the pod-level operations) the difference is a field
 * of its row (mutate.c), not a second walk. NULL steps are skipped. */
struct wh_pod_path {
    /* A pod without a list of containers; NULL: admitted unchanged. */
    enum wh_err (*no_containers)(struct wh_tpu_pod *p, const cJSON *containers);
    /* The duplicate check before the slice step (else after it: KubeRay's
     * order, which judges the labels and the topology first). */
    bool duplicates_first;
    /* The slice: p->topology, p->topo, p->tpu7x and p->n_hosts. */
    wh_pod_step slice;
    /* After the kind's identity: the checks that the slice is one (the
     * identity the containers carry, the names that must resolve). */
    wh_pod_step settle;
    /* The values every container shares and the pod-level operations. */
    wh_pod_step prepare;
    /* One TPU container's variables (index ci among p->tc). */
    enum wh_err (*container_env)(struct wh_tpu_pod *p, unsigned ci);
    /* After the operations: warnings that do not change the patch. */
    enum wh_err (*after)(struct wh_tpu_pod *p);
    /* The denial of a patch over WH_PATCH_MAX_BYTES. */
    enum wh_err (*too_big)(struct wh_tpu_pod *p);
};

/* The walk: the TPU containers, the duplicate variables, the slice, the
 * kind's identity (identity, identity.h), the path's checks, the
 * decision's record of the pod's place, the shared values and pod-level
 * operations, each TPU container's variables, then the guards (names the
 * API server refuses, a patch too big) and the path's warnings. Frees what
 * p owns (wh_tpu_pod_free). Errors as the steps'. */
WH_NODISCARD enum wh_err wh_tpu_pod_run(struct wh_tpu_pod *p, const struct wh_pod_path *path,
                                        wh_pod_step identity, const struct wh_state *st,
                                        char *errbuf);

/* Set up p for one review of pod (d initialised); the caller fills the
 * names. Free with wh_tpu_pod_free. */
void wh_tpu_pod_init(struct wh_tpu_pod *p, const cJSON *pod, enum wh_workload_kind kind,
                     struct wh_decision *d);
/* Free what p owns; on err, discard the operations written so far, so a
 * patch is never partial. */
void wh_tpu_pod_free(struct wh_tpu_pod *p, enum wh_err err);

/* The decision's verdict is the only one: a step that denied the pod has
 * cleared d->allowed (wh_decision_deny), and the steps after it are skipped. */
bool wh_tpu_pod_denied(const struct wh_tpu_pod *p);
/* Deny "<who>: <message>" (KubeRay: "<who> (RayCluster "c", worker group
 * "g"): <message>", the message whole; otherwise the message cut at 2 KB). */
WH_NODISCARD enum wh_err wh_tpu_pod_deny(struct wh_tpu_pod *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The guards every kind runs, each a denial (p->d) or nothing; errors only
 * for OOM. */
/* p->tc from containers (an array): a quantity that does not parse denies. */
WH_NODISCARD enum wh_err wh_tpu_pod_collect(struct wh_tpu_pod *p, const cJSON *containers);
/* Issue 10: a second entry of a variable the webhook sets hid the injected
 * value (the kubelet uses the last entry, the lookup the first). */
WH_NODISCARD enum wh_err wh_tpu_pod_env_duplicates(struct wh_tpu_pod *p);
/* A name the API server refuses, met as the operations were written
 * (d->bad_name, patch.h). */
WH_NODISCARD enum wh_err wh_tpu_pod_bad_name(struct wh_tpu_pod *p);

#endif
