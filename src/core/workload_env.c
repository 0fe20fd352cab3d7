/* workload_env.c: one TPU container's variables on the workload path
 * (workload_env.h). */
#include "wh/workload_env.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp */

#include "wh/buf.h"        /* wh_buf_ptr */
#include "wh/decision.h"   /* WH_PATCH_MAX_BYTES */
#include "wh/envtab.h"     /* wh_env_put, wh_env_wants, WH_ENV_*, WH_TORCH_MASTER_PORT */
#include "wh/envverdict.h" /* wh_env_judge, wh_env_warning_text */
#include "wh/json.h"       /* wh_json_* */
#include "wh/megascale.h" /* wh_megascale_world, wh_megascale_port, wh_megascale_shared_slice_id, wh_megascale_shared_port */
#include "wh/patch.h"   /* wh_env_writer */
#include "wh/podspec.h" /* wh_env_lookup */
#include "wh/podwarn.h" /* wh_pod_warnings, wh_torch_* */
#include "wh/text.h"    /* wh_text */
#include "wh/tpuenv.h"  /* wh_tpu_worker_id, wh_port_list_get */

struct cenv {
    struct wh_tpu_pod *w;
    unsigned ci;
    const cJSON *env;
    struct wh_env_writer wr;
};

/* var=value when the workload path's verb for var says so (envtab.h):
 * only into a container that has no entry of that name. */
static enum wh_err add(struct cenv *c, enum wh_env_var var, const char *value)
{
    return wh_env_put(&c->wr, WH_PATH_WORKLOAD, var, value);
}

static enum wh_err addl(struct cenv *c, enum wh_env_var var, long v)
{
    char s[24];
    struct wh_text t;
    wh_text_init(&t, s, sizeof(s));
    wh_text_addl(&t, v);
    return add(c, var, s);
}

static bool wants(const struct cenv *c, enum wh_env_var var)
{
    return wh_env_wants(&c->wr, WH_PATH_WORKLOAD, var, false);
}

static enum wh_err identity_env(struct cenv *c)
{
    struct wh_tpu_pod *w = c->w;
    if (!w->identity)
        return WH_OK;
    enum wh_err err = addl(c, WH_ENV_TPU_WORKER_ID,
                           wh_tpu_worker_id(w->host, w->tc.n, c->ci, w->tpu7x));
    if (!err)
        err = add(c, WH_ENV_TPU_WORKER_HOSTNAMES, wh_buf_ptr(&w->hosts));
    if (err || !w->tpu7x || (w->n_hosts == 1 && w->tc.n < 2))
        return err;
    /* TPU7x: one JAX process per TPU container (as on the KubeRay path,
     * docs/internals/reference-behaviour.md §2.7.5). */
    if (wants(c, WH_ENV_TPU_PROCESS_ADDRESSES)) {
        const char *addrs;
        bool too_many;
        err = wh_port_list_get(&w->proc_addrs, w->d, wh_buf_ptr(&w->hosts), (long)w->tc.n,
                               WH_PATCH_MAX_BYTES, &addrs, &too_many);
        if (!err && !too_many)
            err = wh_env_set(&c->wr, "TPU_PROCESS_ADDRESSES", addrs);
    }
    if (!err)
        err = addl(c, WH_ENV_TPU_PROCESS_PORT, WH_TPU_PROCESS_PORT_BASE + (long)c->ci);
    return err;
}

/* LWS subgroups: each subgroup is a slice, which LWS names after the whole
 * group; the subgroup's own name replaces that one (another value is the
 * user's and kept). */
static enum wh_err slice_name_env(struct cenv *c)
{
    const struct wh_tpu_pod *w = c->w;
    if (!w->lws_tpu_name)
        return WH_OK;
    struct wh_env_lookup lk;
    wh_env_lookup(c->env, "TPU_NAME", &lk);
    if (!wh_env_wants(&c->wr, WH_PATH_WORKLOAD, WH_ENV_TPU_NAME, !strcmp(lk.value, w->lws_tpu_name)))
        return WH_OK;
    return wh_env_set(&c->wr, "TPU_NAME", w->tpu_name);
}

/* The slices a TPU container's MEGASCALE_* joins (megascale.h); the
 * torchrun world (PET_*) is the same set of slices. */
static enum wh_ms_world world_of(const struct wh_tpu_pod *w, const cJSON *env, const char **declared)
{
    *declared = "";
    if (w->kind != WH_WL_JOBSET || !*w->coordinator)
        return WH_MS_SLICE;
    return wh_megascale_world(env, w->n_slices, w->megascale, declared);
}

/* TPU7x with several TPU containers: each libtpu process binds its own
 * MEGASCALE_PORT in the pod's one network, base + container index as on
 * the KubeRay path (docs/internals/reference-behaviour.md §2.7.4). */
static bool per_container_ports(const struct wh_tpu_pod *w)
{
    return w->tpu7x && w->tc.n > 1;
}

static long megascale_port(const struct wh_tpu_pod *w, unsigned ci)
{
    return wh_megascale_port(wh_json_get(w->tc.items[ci].obj, "env"), (long)ci);
}

/* MEGASCALE_* (docs/workloads.md, JobSet): filled when the replicated job
 * has more than one slice, or when the user declared MEGASCALE_NUM_SLICES
 * with a value; a declared empty MEGASCALE_NUM_SLICES turns them off. */
static enum wh_err megascale_env(struct cenv *c)
{
    struct wh_tpu_pod *w = c->w;
    const char *declared;
    if (world_of(w, c->env, &declared) == WH_MS_SLICE)
        return WH_OK;
    enum wh_err err = addl(c, WH_ENV_MEGASCALE_NUM_SLICES, w->n_slices);
    if (!err)
        err = addl(c, WH_ENV_MEGASCALE_SLICE_ID, w->slice);
    if (err || !per_container_ports(w))
        return err ? err : add(c, WH_ENV_MEGASCALE_COORDINATOR_ADDRESS, w->coordinator);
    /* The coordinator is slice 0's worker 0: container 0, on its port. */
    char coordinator[WH_WL_NAME_MAX + 24];
    snprintf(coordinator, sizeof(coordinator), "%s:%ld", w->coordinator, megascale_port(w, 0));
    err = add(c, WH_ENV_MEGASCALE_COORDINATOR_ADDRESS, coordinator);
    if (!err)
        err = addl(c, WH_ENV_MEGASCALE_PORT, megascale_port(w, c->ci));
    return err;
}

/* Preset torchrun values the slice contradicts (envverdict.h), judged
 * for this pod: kept (never replaced on this path), each warned about with
 * an Event on the pod's workload. A workload object gets them denied or
 * warned at /validate-workload; a plain pod only here. In the user's own
 * MEGASCALE world only the devices are the webhook's to tell. */
static enum wh_err preset_verdicts(struct cenv *c, enum wh_ms_world world, long per_chip)
{
    struct wh_tpu_pod *w = c->w;
    long n = (long)w->tc.n, all = world == WH_MS_REPLICAS;
    long pods = w->n_hosts * (all ? w->n_slices : 1);
    bool own = world == WH_MS_OWN;
    struct wh_torch_world tw = {.devices = w->tc.items[c->ci].chips * per_chip,
                                .nnodes = own ? 0 : pods * n,
                                .pods = own ? 1 : pods,
                                .rank = own ? -1
                                            : ((all ? w->slice * w->n_hosts : 0) + w->host) * n +
                                                  (long)c->ci};
    struct wh_env_finding f[WH_ENV_FINDINGS_MAX];
    int nf = wh_env_judge(c->env, &tw, f);
    const char *cname = wh_json_str0(w->tc.items[c->ci].obj, "name");
    enum wh_err err = WH_OK;
    for (int k = 0; k < nf && !err; k++) {
        char text[WH_WARNING_MAX + 1];
        wh_env_warning_text(text, sizeof(text), cname, &f[k]);
        err = wh_decision_warn_text(w->d, text);
        wh_decision_event(w->d, wh_pod_warnings[WH_PW_TORCH_PRESET].reason,
                          "%s: container \"%s\" (spec.containers[%d]) %s", w->who, cname,
                          w->tc.items[c->ci].index, f[k].text);
        if (!err)
            err = wh_decision_note(w->d, "%s: container \"%s\": preset %s kept (%s)", w->who, cname,
                                   wh_envtab[wh_env_rules[f[k].rule].var].name,
                                   wh_env_rules[f[k].rule].key);
    }
    return err;
}

static enum wh_err torch_env(struct cenv *c)
{
    struct wh_tpu_pod *w = c->w;
    char topo[96];
    wh_torch_topology(&w->topo, w->tpu7x, topo, sizeof(topo));
    long per_chip = w->tpu7x ? 2 : 1;
    long per_host = w->topo.chips / w->n_hosts * per_chip; /* processes of the pod */
    struct wh_env_lookup lk;
    wh_env_lookup(c->env, "TORCH_TPU_TOPOLOGY", &lk);
    enum wh_err err = WH_OK;
    if (wants(c, WH_ENV_TORCH_TPU_TOPOLOGY)) {
        err = wh_env_set(&c->wr, "TORCH_TPU_TOPOLOGY", topo);
    } else if (*lk.value && strcmp(lk.value, topo)) { /* its verb: keep, warn */
        /* Kept: the user's grid is what torch_tpu will use, so the address
         * list follows it when it divides over the hosts. */
        long product;
        if (wh_torch_fields(lk.value, &product) && product % w->n_hosts == 0)
            per_host = product / w->n_hosts;
        if (*w->accel) {
            const char *cname = wh_json_str0(w->tc.items[c->ci].obj, "name");
            char text[WH_WARNING_MAX + 1];
            wh_torch_kept_text(text, sizeof(text), cname, lk.value, w->topology, topo);
            err = wh_decision_warn_text(w->d, text);
            if (!err)
                err = wh_decision_note(w->d,
                                       "%s: container \"%s\": preset TORCH_TPU_TOPOLOGY "
                                       "\"%s\" kept although topology %s gives \"%s\"",
                                       w->who, cname, lk.value, w->topology, topo);
            wh_decision_event(w->d, wh_pod_warnings[WH_PW_TORCH_TOPOLOGY].reason,
                              "%s: container \"%s\": preset TORCH_TPU_TOPOLOGY \"%.32s\" kept "
                              "although topology %s gives \"%s\"; remove it from the "
                              "template or set \"%s\"",
                              w->who, cname, lk.value, w->topology, topo, topo);
        }
    }
    if (!err && wants(c, WH_ENV_TORCH_TPU_SLICEBUILDER_ADDRESSES)) {
        const char *addrs;
        bool too_many;
        err = wh_port_list_get(&w->torch_addrs, w->d, wh_buf_ptr(&w->hosts), per_host,
                               WH_PATCH_MAX_BYTES, &addrs, &too_many);
        if (!err && too_many)
            err = wh_tpu_pod_deny(w,
                                  "TORCH_TPU_SLICEBUILDER_ADDRESSES for topology %s would have "
                                  "more than %ld entries; set it in the container to skip it",
                                  w->topology, WH_MAX_TORCH_ADDRESSES);
        else if (!err)
            err = wh_env_set(&c->wr, "TORCH_TPU_SLICEBUILDER_ADDRESSES", addrs);
    }
    if (err || wh_tpu_pod_denied(w))
        return err;
    /* torchrun defaults (PET_*). Each TPU container of a multi-container
     * pod is one torchrun node, as it is one TPU worker. Never WORLD_SIZE,
     * RANK or LOCAL_RANK: torch_tpu turns distributed when WORLD_SIZE is set. */
    long n = (long)w->tc.n;
    long nproc = n > 1 ? w->tc.items[c->ci].chips * per_chip : per_host;
    const char *declared;
    enum wh_ms_world world = world_of(w, c->env, &declared);
    if (world == WH_MS_OWN) { /* the slices and their order are the user's */
        char text[WH_WARNING_MAX + 1];
        wh_megascale_own_text(text, sizeof(text), wh_json_str0(w->tc.items[c->ci].obj, "name"));
        err = wh_decision_warn_text(w->d, text);
        wh_decision_event(w->d, wh_pod_warnings[WH_PW_MEGASCALE_OWN].reason,
                          "%s: %s; torchrun's world is then not the webhook's to set", w->who, text);
    }
    /* torchrun's world is the slices MEGASCALE joins: one slice without it. */
    bool all = world == WH_MS_REPLICAS;
    if (!err && world != WH_MS_OWN)
        err = addl(c, WH_ENV_PET_NNODES, w->n_hosts * (all ? w->n_slices : 1) * n);
    if (!err && world != WH_MS_OWN)
        err = addl(c, WH_ENV_PET_NODE_RANK,
                   ((all ? w->slice * w->n_hosts : 0) + w->host) * n + (long)c->ci);
    if (!err && world != WH_MS_OWN)
        err = add(c, WH_ENV_PET_MASTER_ADDR, all ? w->master : w->slice_master);
    if (!err)
        err = addl(c, WH_ENV_PET_MASTER_PORT, WH_TORCH_MASTER_PORT);
    if (!err)
        err = addl(c, WH_ENV_PET_NPROC_PER_NODE, nproc);
    return err ? err : preset_verdicts(c, world, per_chip);
}

/* One world (docs/workloads.md): the slice count MEGASCALE is given is the
 * replicated job's, and the libtpu processes of one pod bind distinct
 * MEGASCALE ports. */
enum wh_err wh_wl_one_world(struct wh_tpu_pod *w)
{
    for (unsigned i = 0; i < w->tc.n; i++) {
        const cJSON *env = wh_json_get(w->tc.items[i].obj, "env");
        const char *declared, *name = wh_json_str0(w->tc.items[i].obj, "name");
        enum wh_ms_world world = world_of(w, env, &declared);
        if (world == WH_MS_CONFLICT)
            return wh_tpu_pod_deny(
                w,
                "container \"%s\" (spec.containers[%d]) sets MEGASCALE_NUM_SLICES "
                "\"%.32s\" but replicated job \"%s\" has %ld slices (label %s), so its "
                "slices would wait for ones that never join; remove it (the webhook "
                "sets %ld), or set it to \"\" for independent slices",
                name, w->tc.items[i].index, declared,
                wh_wl_meta_value(w->pod, WH_KEY_JS_RJOB, false), w->n_slices,
                WH_KEY_JS_RJOB_REPLICAS, w->n_slices);
        if (world == WH_MS_SLICE)
            continue;
        /* Every slice of the replicated job is made from one template: a
         * literal slice id is the same in all of them (megascale.h's rule,
         * the JobSet's too; MEGASCALE is on here). One equal to the job
         * index is this pod's own (the webhook's, on reinvocation). */
        const char *id;
        long idn;
        if (wh_megascale_shared_slice_id(env, true, w->n_slices, &id) &&
            !(wh_parse_long(id, &idn) && idn == w->slice))
            return wh_tpu_pod_deny(
                w,
                "container \"%s\" (spec.containers[%d]) sets MEGASCALE_SLICE_ID \"%.32s\" "
                "but the %ld slices of replicated job \"%s\" share one template, so "
                "they all get that id; remove it (the webhook sets the job index), or "
                "set it with a valueFrom",
                name, w->tc.items[i].index, id, w->n_slices,
                wh_wl_meta_value(w->pod, WH_KEY_JS_RJOB, false));
        const cJSON *other;
        int oi;
        long port;
        if (per_container_ports(w) &&
            wh_megascale_shared_port(wh_json_get(w->spec, "containers"), w->tc.items[i].obj, &other,
                                     &oi, &port))
            return wh_tpu_pod_deny(w,
                                   "TPU containers \"%s\" and \"%s\" both use MEGASCALE_PORT %ld in "
                                   "the pod's one network; remove MEGASCALE_PORT (the webhook gives "
                                   "%ld + the container's index) or give each its own",
                                   wh_json_str0(other, "name"), name, port, (long)WH_MEGASCALE_PORT);
    }
    return WH_OK;
}

enum wh_err wh_wl_container_env(struct wh_tpu_pod *w, unsigned ci)
{
    struct cenv c = {.w = w, .ci = ci, .env = wh_json_get(w->tc.items[ci].obj, "env")};
    wh_env_writer_init(&c.wr, w->d, w->tc.items[ci].index, c.env);
    enum wh_err err = identity_env(&c);
    if (!err)
        err = slice_name_env(&c);
    if (!err)
        err = megascale_env(&c);
    if (!err)
        err = torch_env(&c);
    return err;
}
