/* envtab.h: the variables the webhook injects into TPU containers, in one
 * table.
 *
 * Every variable a mutation path reads or writes is one row of wh_envtab[]:
 * its name, what it means, and for each mutation path a named verb that
 * says when the path writes it over what the container already holds. The
 * writers of both paths ask the verb (wh_env_wants, wh_env_put: mutate.c on
 * /mutate, workload_env.c on /mutate-workload), the duplicate check reads
 * the names (tpuenv.c, wh_env_duplicate), render's `--env` view and
 * doctor's drift rule pick their rows by verb (src/offline), and the
 * section "Injected variables" of docs/workloads.md is checked against it
 * (ctest repo.envtab_doc). Adding a variable starts with a row here.
 * Static data: nothing to free. Pure. */
#ifndef WH_ENVTAB_H
#define WH_ENVTAB_H

#include <stdbool.h> /* bool */

#include "wh/patch.h"   /* struct wh_env_writer */
#include "wh/podspec.h" /* struct wh_env_lookup */

/* torchrun's default static rendezvous port (PET_MASTER_PORT). */
#define WH_TORCH_MASTER_PORT 29500

/* The rows, in the order of the reference's patch
 * (docs/internals/reference-behaviour.md §2.7.2), its input
 * MEGASCALE_NUM_SLICES first and torchrun's variables last. The order is
 * the one the duplicate check reports in, and render and doctor list in. */
enum wh_env_var {
    WH_ENV_MEGASCALE_NUM_SLICES,
    WH_ENV_MEGASCALE_SLICE_ID,
    WH_ENV_MEGASCALE_COORDINATOR_ADDRESS,
    WH_ENV_MEGASCALE_PORT,
    WH_ENV_TPU_WORKER_HOSTNAMES,
    WH_ENV_TPU_PROCESS_ADDRESSES,
    WH_ENV_TPU_PROCESS_PORT,
    WH_ENV_TORCH_TPU_TOPOLOGY,
    WH_ENV_TORCH_TPU_SLICEBUILDER_ADDRESSES,
    WH_ENV_TPU_WORKER_ID,
    WH_ENV_TPU_NAME,
    WH_ENV_TPU_DEVICE_PLUGIN_HOST_IP,
    WH_ENV_TPU_DEVICE_PLUGIN_ADDR,
    WH_ENV_PET_MASTER_ADDR,
    WH_ENV_PET_MASTER_PORT,
    WH_ENV_PET_NNODES,
    WH_ENV_PET_NODE_RANK,
    WH_ENV_PET_NPROC_PER_NODE,
    WH_ENV__COUNT
};

/* The mutation paths, each with its own verbs: the KubeRay pod path
 * (/mutate, mutate.c), which must match the reference's rules, and the
 * workload path (/mutate-workload, workload_env.c: Jobs, JobSets,
 * LeaderWorkerSets, plain pods), which never replaces a value. */
enum wh_env_path { WH_PATH_KUBERAY, WH_PATH_WORKLOAD, WH_PATH__COUNT };

/* When a path writes a variable, by what the container holds of it (the
 * lookup rule of docs/internals/reference-behaviour.md §2.7.1: the first
 * entry with a non-empty value or a valueFrom decides). A verb says only
 * whether the value is written; when the path computes one at all (a
 * multi-host slice, TPU7x, several slices) is the path's. */
enum wh_env_verb {
    WH_VERB_NONE,               /* never written on this path */
    WH_VERB_READ,               /* the user's: read, never written */
    WH_VERB_SET,                /* always written, a user's value replaced */
    WH_VERB_SET_IF_EMPTY,       /* written unless a non-empty literal value decides (a valueFrom
                           * is replaced: the reference's "empty") */
    WH_VERB_SET_IF_PLACEHOLDER, /* as SET_IF_EMPTY, and also over a single-host placeholder
                                 * (what the path calls one: "localhost", the reference's
                                 * default id) */
    WH_VERB_SET_IF_UNSET,       /* written unless a value or a valueFrom decides: an entry with an
                           * empty value is filled */
    WH_VERB_ADD_IF_NO_ENTRY,    /* added only when the container has no entry of the name at
                              * all (a value, an empty value or a valueFrom is kept) */
    WH_VERB_KEEP_WARN,          /* as ADD_IF_NO_ENTRY; a kept value that contradicts the slice is
                          * warned about */
    WH_VERB_KEEP_REFUSE,        /* as ADD_IF_NO_ENTRY; a kept value that contradicts the slice
                          * refuses the pod */
    WH_VERB__COUNT
};

struct wh_env_def {
    const char *name;
    const char *meaning; /* one sentence: what it tells libtpu, JAX, TorchTPU, torchrun or Ray */
    enum wh_env_verb verb[WH_PATH__COUNT];
    bool by_lws; /* LeaderWorkerSet's own pod webhook sets it too (docs/workloads.md) */
};

extern const struct wh_env_def wh_envtab[WH_ENV__COUNT];

/* A verb's name as the docs write it ("set if empty"), and what it does,
 * one sentence. */
const char *wh_env_verb_name(enum wh_env_verb v);
const char *wh_env_verb_doc(enum wh_env_verb v);

/* The row of name; WH_ENV__COUNT when it is not one the webhook injects. */
enum wh_env_var wh_env_find(const char *name);

/* Whether verb v writes over what a container holds (lk: wh_env_lookup's
 * answer for the variable). placeholder: the path's own test of the value
 * held, read by WH_VERB_SET_IF_PLACEHOLDER only. */
bool wh_env_verb_writes(enum wh_env_verb v, const struct wh_env_lookup *lk, bool placeholder);

/* Whether path p writes variable var into the container of w (its env as
 * sent), by var's verb on p. */
bool wh_env_wants(const struct wh_env_writer *w, enum wh_env_path p, enum wh_env_var var,
                  bool placeholder);

/* Write var=value through w (wh_env_set) when wh_env_wants(w, p, var,
 * false) says so. Errors as wh_env_set. */
WH_NODISCARD enum wh_err wh_env_put(struct wh_env_writer *w, enum wh_env_path p,
                                    enum wh_env_var var, const char *value);

#endif
