/* workload_pod.h: one TPU pod of a workload on the /mutate-workload path
 * (workload.h): what the steps of workload.c and its modules
 * (workload_topology, workload_identity, workload_env) share about it, and
 * how they name it in denials, warnings and Events (docs/workloads.md).
 * struct wh_wl lives on the caller's stack for one review: it borrows the
 * pod's JSON and the decision, and owns hosts, proc_addrs, torch_addrs and
 * tc, which wh_mutate_workload frees. Pure. */
#ifndef WH_WORKLOAD_POD_H
#define WH_WORKLOAD_POD_H

#include <stdbool.h> /* bool */

#include "wh/buf.h"      /* struct wh_buf */
#include "wh/decision.h" /* struct wh_decision */
#include "wh/err.h"      /* enum wh_err */
#include "wh/json.h"     /* cJSON */
#include "wh/podwarn.h"  /* enum wh_pod_warning */
#include "wh/topology.h" /* struct wh_topology */
#include "wh/tpuenv.h"   /* struct wh_tpu_containers, struct wh_port_list */

/* Keys the controllers put on the pods they create (docs/workloads.md). */
#define WH_KEY_LWS_NAME "leaderworkerset.sigs.k8s.io/name"
#define WH_KEY_LWS_WORKER_INDEX "leaderworkerset.sigs.k8s.io/worker-index"
#define WH_KEY_LWS_SIZE "leaderworkerset.sigs.k8s.io/size"
#define WH_KEY_LWS_LEADER_NAME "leaderworkerset.sigs.k8s.io/leader-name"
#define WH_KEY_LWS_LEADER_TPUS "leaderworkerset.sigs.k8s.io/leader-requests-tpus"
#define WH_KEY_LWS_SUBGROUP_SIZE "leaderworkerset.sigs.k8s.io/subgroup-size"
#define WH_KEY_JS_NAME "jobset.sigs.k8s.io/jobset-name"
#define WH_KEY_JS_RJOB "jobset.sigs.k8s.io/replicatedjob-name"
#define WH_KEY_JS_RJOB_REPLICAS "jobset.sigs.k8s.io/replicatedjob-replicas"
#define WH_KEY_JS_GLOBAL_REPLICAS "jobset.sigs.k8s.io/global-replicas"
#define WH_KEY_JS_JOB_INDEX "jobset.sigs.k8s.io/job-index"
#define WH_KEY_JOB_INDEX "batch.kubernetes.io/job-completion-index"
#define WH_KEY_JOB_NAME "batch.kubernetes.io/job-name"
#define WH_KEY_JOB_NAME_OLD "job-name"

#define WH_WL_NAME_MAX 320

enum wh_workload_kind { WH_WL_KUBERAY, WH_WL_LWS, WH_WL_JOBSET, WH_WL_INDEXED_JOB, WH_WL_SINGLE };

struct wh_wl {
    const cJSON *pod, *spec;
    const char *ns, *pod_name;
    enum wh_workload_kind kind;
    char who[768]; /* how messages name the pod and its workload */
    struct wh_tpu_containers tc;
    char topology[64];     /* the slice topology (annotation wins) */
    char accel[96];        /* "" when unknown */
    const char *topo_from; /* where the topology was read, for messages */
    struct wh_topology topo;
    bool tpu7x;
    long n_hosts; /* pods (hosts) of one slice */
    long host;    /* this pod's index in its slice */
    long n_slices, slice;
    bool identity;       /* TPU_WORKER_ID / TPU_WORKER_HOSTNAMES are ours to fill */
    struct wh_buf hosts; /* this slice's peers; "localhost" for one host */
    /* Built once for all TPU containers: TPU_PROCESS_ADDRESSES and
     * TORCH_TPU_SLICEBUILDER_ADDRESSES over hosts. */
    struct wh_port_list proc_addrs, torch_addrs;
    char master[WH_WL_NAME_MAX];       /* PET_MASTER_ADDR when torchrun spans the slices */
    char slice_master[WH_WL_NAME_MAX]; /* PET_MASTER_ADDR of a world of this slice only */
    bool megascale;                    /* MEGASCALE_NUM_SLICES may be filled */
    char coordinator[WH_WL_NAME_MAX];  /* MEGASCALE_COORDINATOR_ADDRESS */
    struct wh_decision *d;
};

/* Which controller made pod, in workload.h's order: the one classification
 * of a pod into its workload, read by the pod path (workload.c) and by
 * doctor, which files pods into slices with it (src/offline/doctor). */
enum wh_workload_kind wh_wl_classify(const cJSON *pod);
/* Label first, then annotation (or the other way round); NULL when neither. */
const char *wh_wl_meta_value(const cJSON *pod, const char *key, bool annotation_first);
/* The Job's name (label batch.kubernetes.io/job-name, or the old job-name);
 * NULL when neither. */
const char *wh_wl_job_name(const cJSON *pod);
/* Fill w->who and the decision's Event subject from w->kind, the pod's
 * labels, w->ns and w->pod_name. */
void wh_wl_describe(struct wh_wl *w);
/* The decision's verdict is the only one: a step that denied the pod has
 * cleared d->allowed (wh_decision_deny), and the steps after it are skipped. */
bool wh_wl_denied(const struct wh_wl *w);
/* Deny "<who>: <message>". */
WH_NODISCARD enum wh_err wh_wl_deny(struct wh_wl *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Admit unchanged: sets *skipped; a short warning (what to do) for the
 * user, the full text (who, why, what to do) for the log and the
 * workload's Event. */
WH_NODISCARD enum wh_err wh_wl_skip(struct wh_wl *w, bool *skipped, enum wh_pod_warning k,
                                    const char *why);

#endif
