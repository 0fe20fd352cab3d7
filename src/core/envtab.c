/* envtab.c: the variables the webhook injects, and the verbs that say when
 * each path writes them (see wh/envtab.h). */
#include "wh/envtab.h"

#include <string.h> /* strcmp */

#define K WH_PATH_KUBERAY
#define W WH_PATH_WORKLOAD

/* The KubeRay verbs are the reference's rules
 * (docs/internals/reference-behaviour.md §2.7.4-§2.7.8); the workload
 * path's are docs/workloads.md's, "Rules" and "One identity per slice". */
const struct wh_env_def wh_envtab[WH_ENV__COUNT] = {
    [WH_ENV_MEGASCALE_NUM_SLICES] =
        {"MEGASCALE_NUM_SLICES",
         "slices of the multi-slice job; on KubeRay pods the user's entry turns `MEGASCALE_*` on, "
         "on workload pods an empty value turns them off",
         {[K] = WH_VERB_READ, [W] = WH_VERB_KEEP_REFUSE},
         false},
    [WH_ENV_MEGASCALE_SLICE_ID] = {"MEGASCALE_SLICE_ID",
                                   "this slice's index among the slices of the job",
                                   {[K] = WH_VERB_SET_IF_EMPTY, [W] = WH_VERB_KEEP_REFUSE},
                                   false},
    [WH_ENV_MEGASCALE_COORDINATOR_ADDRESS] =
        {"MEGASCALE_COORDINATOR_ADDRESS",
         "worker 0 of slice 0, where the slices meet",
         {[K] = WH_VERB_SET_IF_EMPTY, [W] = WH_VERB_ADD_IF_NO_ENTRY},
         false},
    [WH_ENV_MEGASCALE_PORT] = {"MEGASCALE_PORT",
                               "the port libtpu's multi-slice transport binds (one per TPU "
                               "container on TPU7x)",
                               {[K] = WH_VERB_SET_IF_EMPTY, [W] = WH_VERB_KEEP_REFUSE},
                               false},
    [WH_ENV_TPU_WORKER_HOSTNAMES] = {"TPU_WORKER_HOSTNAMES",
                                     "the slice's hosts, by worker id, comma-separated: the "
                                     "peers libtpu and JAX connect to",
                                     {[K] = WH_VERB_SET_IF_PLACEHOLDER, [W] = WH_VERB_KEEP_REFUSE},
                                     true},
    [WH_ENV_TPU_PROCESS_ADDRESSES] = {"TPU_PROCESS_ADDRESSES",
                                      "TPU7x: every TPU process of the slice as host:port, one "
                                      "per TPU container",
                                      {[K] = WH_VERB_SET_IF_PLACEHOLDER, [W] = WH_VERB_ADD_IF_NO_ENTRY},
                                      true},
    [WH_ENV_TPU_PROCESS_PORT] = {"TPU_PROCESS_PORT",
                                 "TPU7x: the port of this container's TPU process",
                                 {[K] = WH_VERB_SET_IF_EMPTY, [W] = WH_VERB_ADD_IF_NO_ENTRY},
                                 true},
    [WH_ENV_TORCH_TPU_TOPOLOGY] = {"TORCH_TPU_TOPOLOGY",
                                   "the slice's chip grid for TorchTPU; on KubeRay pods the "
                                   "user's entry turns TorchTPU's values off",
                                   {[K] = WH_VERB_SET_IF_UNSET, [W] = WH_VERB_KEEP_WARN},
                                   false},
    [WH_ENV_TORCH_TPU_SLICEBUILDER_ADDRESSES] =
        {"TORCH_TPU_SLICEBUILDER_ADDRESSES",
         "TorchTPU's processes of the slice as host:port, one per device, host-major",
         {[K] = WH_VERB_SET, [W] = WH_VERB_ADD_IF_NO_ENTRY},
         false},
    [WH_ENV_TPU_WORKER_ID] = {"TPU_WORKER_ID",
                              "this host's index in its slice (on TPU7x, this TPU container's)",
                              {[K] = WH_VERB_SET_IF_PLACEHOLDER, [W] = WH_VERB_KEEP_REFUSE},
                              true},
    [WH_ENV_TPU_NAME] = {"TPU_NAME",
                         "the slice's name, one per worker-group replica: Ray's TPU slice "
                         "resource; on workload pods only a LeaderWorkerSet subgroup's "
                         "(`<leader>-subgroup-<i>`)",
                         {[K] = WH_VERB_SET_IF_EMPTY, [W] = WH_VERB_SET_IF_PLACEHOLDER},
                         true},
    [WH_ENV_TPU_DEVICE_PLUGIN_HOST_IP] = {"TPU_DEVICE_PLUGIN_HOST_IP",
                                          "the node's IP (a fieldRef to status.hostIP), for "
                                          "the device plugin's address",
                                          {[K] = WH_VERB_SET_IF_UNSET, [W] = WH_VERB_NONE},
                                          false},
    [WH_ENV_TPU_DEVICE_PLUGIN_ADDR] = {"TPU_DEVICE_PLUGIN_ADDR",
                                       "the TPU device plugin's metrics endpoint on the node",
                                       {[K] = WH_VERB_SET_IF_EMPTY, [W] = WH_VERB_NONE},
                                       false},
    [WH_ENV_PET_MASTER_ADDR] = {"PET_MASTER_ADDR",
                                "torchrun's --master_addr: worker 0 of the torchrun world",
                                {[K] = WH_VERB_NONE, [W] = WH_VERB_ADD_IF_NO_ENTRY},
                                false},
    [WH_ENV_PET_MASTER_PORT] = {"PET_MASTER_PORT",
                                "torchrun's --master_port",
                                {[K] = WH_VERB_NONE, [W] = WH_VERB_ADD_IF_NO_ENTRY},
                                false},
    [WH_ENV_PET_NNODES] = {"PET_NNODES",
                           "torchrun's --nnodes: its nodes, one per TPU container",
                           {[K] = WH_VERB_NONE, [W] = WH_VERB_ADD_IF_NO_ENTRY},
                           false},
    [WH_ENV_PET_NODE_RANK] = {"PET_NODE_RANK",
                              "torchrun's --node_rank: this container's node",
                              {[K] = WH_VERB_NONE, [W] = WH_VERB_ADD_IF_NO_ENTRY},
                              false},
    [WH_ENV_PET_NPROC_PER_NODE] = {"PET_NPROC_PER_NODE",
                                   "torchrun's --nproc_per_node: the container's TPU devices",
                                   {[K] = WH_VERB_NONE, [W] = WH_VERB_ADD_IF_NO_ENTRY},
                                   false},
};

static const struct {
    const char *name, *doc;
} verbs[WH_VERB__COUNT] = {
    [WH_VERB_NONE] = {"-", "not written on this path"},
    [WH_VERB_READ] = {"read", "the user's: read, never written"},
    [WH_VERB_SET] = {"set", "always written; a user's value is replaced"},
    [WH_VERB_SET_IF_EMPTY] = {"set if empty",
                              "written unless a non-empty value decides; a `valueFrom` is "
                              "replaced (the reference's rule)"},
    [WH_VERB_SET_IF_PLACEHOLDER] = {"set if empty or placeholder",
                                    "as \"set if empty\", and also over a placeholder: a "
                                    "single-host value (`localhost`, the reference's default "
                                    "worker id), or LWS's group-wide `TPU_NAME` on a subgroup "
                                    "pod"},
    [WH_VERB_SET_IF_UNSET] = {"set if unset",
                              "written unless a non-empty value or a `valueFrom` decides; an "
                              "empty value is filled"},
    [WH_VERB_ADD_IF_NO_ENTRY] = {"add if no entry",
                                 "added only when the container has no entry of that name (a "
                                 "value, an empty value or a `valueFrom` is kept)"},
    [WH_VERB_KEEP_WARN] = {"add if no entry, warn",
                           "as \"add if no entry\"; a kept value that contradicts the slice is "
                           "warned about"},
    [WH_VERB_KEEP_REFUSE] = {"add if no entry, refuse",
                             "as \"add if no entry\"; a kept value that contradicts the slice "
                             "refuses the pod"},
};

const char *wh_env_verb_name(enum wh_env_verb v)
{
    return (unsigned)v < WH_VERB__COUNT ? verbs[v].name : "?";
}

const char *wh_env_verb_doc(enum wh_env_verb v)
{
    return (unsigned)v < WH_VERB__COUNT ? verbs[v].doc : "?";
}

enum wh_env_var wh_env_find(const char *name)
{
    for (int i = 0; i < WH_ENV__COUNT; i++)
        if (!strcmp(wh_envtab[i].name, name))
            return (enum wh_env_var)i;
    return WH_ENV__COUNT;
}

bool wh_env_verb_writes(enum wh_env_verb v, const struct wh_env_lookup *lk, bool placeholder)
{
    switch (v) {
    case WH_VERB_SET: return true;
    case WH_VERB_SET_IF_EMPTY: return !*lk->value;
    case WH_VERB_SET_IF_PLACEHOLDER: return !*lk->value || placeholder;
    case WH_VERB_SET_IF_UNSET: return !lk->exists;
    case WH_VERB_ADD_IF_NO_ENTRY:
    case WH_VERB_KEEP_WARN:
    case WH_VERB_KEEP_REFUSE: return lk->first_index < 0;
    case WH_VERB_NONE:
    case WH_VERB_READ:
    case WH_VERB__COUNT: break;
    }
    return false;
}

bool wh_env_wants(const struct wh_env_writer *w, enum wh_env_path p, enum wh_env_var var,
                  bool placeholder)
{
    enum wh_env_verb v = wh_envtab[var].verb[p];
    if (v == WH_VERB_SET || v == WH_VERB_NONE || v == WH_VERB_READ)
        return v == WH_VERB_SET; /* whatever the container holds */
    struct wh_env_lookup lk;
    wh_env_lookup(w->env, wh_envtab[var].name, &lk);
    return wh_env_verb_writes(v, &lk, placeholder);
}

enum wh_err wh_env_put(struct wh_env_writer *w, enum wh_env_path p, enum wh_env_var var,
                       const char *value)
{
    return wh_env_wants(w, p, var, false) ? wh_env_set(w, wh_envtab[var].name, value) : WH_OK;
}
