/* megascale.h: which slices one TPU container's MEGASCALE_* joins, and on
 * which port (docs/workloads.md, "One world"). The workload pod path
 * (workload_env.c) and the template rules (workload_validate.c, validate.c) judge
 * a container's env with these functions, so a workload is refused at the
 * object exactly when its pods would be. Pure; nothing is allocated. */
#ifndef WH_MEGASCALE_H
#define WH_MEGASCALE_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

/* MEGASCALE_PORT when the container declares none: of its first TPU
 * container, the others counting up on TPU7x (wh_megascale_port;
 * docs/internals/reference-behaviour.md §2.8). */
#define WH_MEGASCALE_PORT 8081

enum wh_ms_world {
    WH_MS_SLICE,    /* no MEGASCALE: the container's slice is a world of its own */
    WH_MS_REPLICAS, /* every slice of the replicated job */
    WH_MS_CONFLICT, /* a literal slice count other than the replicas, slice ids left to the webhook */
    WH_MS_OWN,      /* such a count with the container's own MEGASCALE_SLICE_ID */
};

/* The world of a TPU container with env `env` (a JSON array or NULL) in a
 * replicated job of `slices` slices; fill: the webhook fills an absent
 * MEGASCALE_NUM_SLICES (the slice count is known from the pod). A declared
 * empty value opts out; a valueFrom (xpk's fieldRef to the replicas) joins
 * them all. *declared: the literal value, "" when none (env's text). */
enum wh_ms_world wh_megascale_world(const cJSON *env, long slices, bool fill, const char **declared);

/* The slices whose pods reach each other by cluster-DNS name (the MEGASCALE
 * coordinator, torchrun's PET_MASTER_ADDR: slice 0's worker 0): `slices`
 * when the world (above) of any TPU container of `containers` (a
 * spec.containers array or NULL) is not its own slice, else 1. The pods
 * that need cluster DNS are this times the hosts of one slice
 * (docs/workloads.md, "Names that resolve"); used by the pod path
 * (workload.c), the JobSet template rule (workload_validate.c), the
 * RayCluster rule (validate.c, fill false: the KubeRay path fills no count,
 * so "not its own" is "MEGASCALE_NUM_SLICES set") and doctor. */
long wh_megascale_joined_slices(const cJSON *containers, long slices, bool fill);

/* The one rule of a literal MEGASCALE_SLICE_ID in a pod template (issue
 * 24): the `slices` slices made from one template all get it, so with
 * MEGASCALE on (`on`: the template's pods join slices) and more than one
 * slice, every slice claims that id and MEGASCALE never starts. True then;
 * *value: the literal ("" when absent, empty or a valueFrom, env's text).
 * Used by the JobSet rule (workload_validate.c) and the RayCluster rule
 * (validate.c); a pod alone cannot tell its template's slice count. */
bool wh_megascale_shared_slice_id(const cJSON *env, bool on, long slices, const char **value);

/* env's literal MEGASCALE_PORT, -1 when absent, empty, a valueFrom or not a number. */
long wh_megascale_declared_port(const cJSON *env);

/* The MEGASCALE_PORT of the TPU container with env `env` and index ci among
 * its pod's TPU containers, on TPU7x with several of them (each libtpu
 * binds its own in the pod's one network): its literal, else
 * WH_MEGASCALE_PORT + ci, what both pod paths give (mutate.c,
 * workload_env.c; docs/internals/reference-behaviour.md §2.7.4). */
long wh_megascale_port(const cJSON *env, long ci);

/* The one rule of two TPU containers of one TPU7x pod on one MEGASCALE
 * port: true when a TPU container before `c` in `containers` (a pod spec's
 * list) uses the port `c` uses (wh_megascale_port of each); *other is that
 * container, *other_index its index in containers, *port the port. Used by
 * the JobSet pod path (workload_env.c), the JobSet rule
 * (workload_validate.c) and the RayCluster rule (validate.c). */
bool wh_megascale_shared_port(const cJSON *containers, const cJSON *c, const cJSON **other,
                              int *other_index, long *port);

#endif
