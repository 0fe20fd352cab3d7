/* mutate.c: TPU worker pod mutation.
 *
 * Order of the patch (docs/internals/reference-behaviour.md §2.7.2):
 * [replicaIndex label] -> [hostname, subdomain, affinity (multi-host)] ->
 * env operations of each TPU container in spec order. Every value is computed before any operation is emitted,
 * and a denial discards the operations, so a patch is never partial.
 * Operations whose target already holds the wanted value are not emitted,
 * which makes a second review of a mutated pod patch-free (D6). */
#include "wh/mutate.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strstr */

#include "wh/affinity.h"  /* wh_affinity_* */
#include "wh/buf.h"       /* wh_buf */
#include "wh/envtab.h"    /* wh_env_put, wh_env_wants, WH_ENV_*, WH_PATH_KUBERAY */
#include "wh/json.h"      /* wh_json_* */
#include "wh/megascale.h" /* wh_megascale_joined_slices */
#include "wh/identity.h"  /* wh_identity_of */
#include "wh/names.h"     /* wh_names_* */
#include "wh/patch.h"     /* wh_patch_add_*, wh_env_* */
#include "wh/pipeline.h"  /* struct wh_tpu_pod, wh_tpu_pod_* */
#include "wh/podspec.h"   /* labels, env lookup */
#include "wh/topology.h"  /* wh_topology_* */
#include "wh/text.h"      /* wh_text */
#include "wh/tpuenv.h" /* wh_tpu_worker_id, wh_host_ports, wh_port_list_get, wh_hostnet_dns_conflict */

#define MAX_HOSTS WH_MAX_HOSTS
#define MAX_TORCH_ADDRESSES WH_MAX_TORCH_ADDRESSES
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define DEVICE_PLUGIN_ADDR "$(TPU_DEVICE_PLUGIN_HOST_IP):" STRINGIFY(WH_DEVICE_PLUGIN_PORT)

/* The slice step of KubeRay's row: the RayCluster and group labels, then
 * the topology and the host count, each refused with the reference's
 * message when absent or wrong. */
static enum wh_err slice(struct wh_tpu_pod *c, const struct wh_state *st, bool *skipped,
                         char *errbuf)
{
    (void)st;
    (void)skipped;
    if (!*c->cluster)
        return wh_decision_deny(c->d,
                                "%s requests google.com/tpu but has no label \"%s\"; TPU worker pods "
                                "must be created by KubeRay, which sets it to the RayCluster name",
                                c->who, WH_LABEL_CLUSTER);
    if (!*c->group)
        return wh_decision_deny(c->d,
                                "%s (RayCluster \"%s\") requests google.com/tpu but has no label \"%s\"; "
                                "TPU worker pods must be created by KubeRay, which sets it to the "
                                "worker group name",
                                c->who, c->cluster, WH_LABEL_GROUP);
    /* The KubeRay path's topology rule (wh_slice_topology): the slice
     * annotation wins when present, even empty, and no topology is a
     * denial. The workload path (wh_wl_read_topology, workload_topology.c)
     * differs on purpose: an empty annotation falls through to the nodeSelector, then
     * to the node pool's TPU nodes, and an unknown topology admits the pod
     * unchanged with a warning (docs/workloads.md). A KubeRay worker group
     * states its topology (the reference fails without the nodeSelector
     * one: docs/internals/reference-behaviour.md), so a missing or empty one
     * is an authoring mistake to refuse; a pod of any other controller is
     * rather left as it is than blocked. */
    bool from_ann;
    c->topology = wh_slice_topology(c->pod, c->spec, &from_ann);
    if (!c->topology || !*c->topology)
        return wh_decision_deny(
            c->d,
            "%s (RayCluster \"%s\", worker group \"%s\") requests "
            "google.com/tpu but %s; set "
            "spec.nodeSelector[\"%s\"] (for example \"2x2x2\" or \"4x4\") in the worker group "
            "template",
            c->who, c->cluster, c->group,
            from_ann ? "its annotation \"" WH_ANN_SLICE_TOPOLOGY "\" is empty"
                     : "has no TPU topology",
            WH_SEL_TOPOLOGY);
    if (wh_topology_parse(c->topology, &c->topo, errbuf))
        return wh_tpu_pod_deny(c,
                               "%s %s: %s; use the form "
                               "AxB or AxBxC, for example \"2x2x2\" or \"4x4\"",
                               from_ann ? "annotation" : "spec.nodeSelector",
                               from_ann ? WH_ANN_SLICE_TOPOLOGY : WH_SEL_TOPOLOGY, errbuf);
    c->n_hosts = wh_topology_hosts(&c->topo, c->tc.chips);
    if (c->n_hosts > MAX_HOSTS)
        return wh_tpu_pod_deny(c,
                               "topology %s with %ld "
                               "chips per pod gives %ld hosts; at most %ld hosts per slice are "
                               "supported; request more google.com/tpu per pod",
                               c->topology, c->tc.chips, c->n_hosts, MAX_HOSTS);
    c->tpu7x = wh_is_tpu7x(wh_node_selector(c->spec, WH_SEL_ACCELERATOR));
    return WH_OK;
}

/* ---- values ------------------------------------------------------------- */

/* The decimal digits of v in out. */
static const char *num(char out[static 24], long v)
{
    struct wh_text t;
    wh_text_init(&t, out, 24);
    wh_text_addl(&t, v);
    return out;
}

/* "<group>-<r>-<h>.<headless>" for h in 0..n-1, joined by ','. Written with
 * plain appends: for the largest slices this runs for every pod and printf
 * would dominate the review. */
static enum wh_err host_list(const struct wh_tpu_pod *c, struct wh_buf *b)
{
    /* The prefix is as long as the group name: a fixed array cut it, and
     * snprintf's would-be length then read past the array (fuzz_review,
     * issue 10: stack bytes in TPU_WORKER_HOSTNAMES). */
    struct wh_buf prefix;
    wh_buf_init(&prefix, WH_PATCH_MAX_BYTES);
    char replica[24];
    enum wh_err err = wh_buf_add(&prefix, c->group);
    if (!err)
        err = wh_buf_addc(&prefix, '-');
    if (!err)
        err = wh_buf_add(&prefix, num(replica, c->slice));
    if (!err)
        err = wh_buf_addc(&prefix, '-');
    /* ".<headless>" after the host's number, as one more copy. */
    struct wh_buf suffix;
    wh_buf_init(&suffix, WH_PATCH_MAX_BYTES);
    if (!err)
        err = wh_buf_addc(&suffix, '.');
    if (!err)
        err = wh_buf_add(&suffix, c->headless);
    /* Room for every entry: ',', the prefix, the host's digits and the
     * suffix, with 19 bytes for the comma and the digits (the host count
     * is at most b's maximum, 1 MiB, over per: 7 digits), checked first so
     * that the product cannot wrap. */
    size_t pl = wh_buf_len(&prefix), sl = wh_buf_len(&suffix), per = pl + sl + 19;
    if (!err && (size_t)c->n_hosts > (b->max - b->len) / per)
        err = WH_ERR_TOOBIG;
    if (!err)
        err = wh_buf_reserve(b, (size_t)c->n_hosts * per);
    if (!err) {
        /* Written straight into that room: 512 checked appends at 256 hosts
         * cost more than the list's bytes. */
        char *o = b->ptr + b->len;
        for (long h = 0; h < c->n_hosts; h++) {
            if (o != b->ptr)
                *o++ = ',';
            memcpy(o, wh_buf_ptr(&prefix), pl);
            o += pl;
            char digits[24];
            size_t dl = 0;
            for (unsigned long v = (unsigned long)h; dl == 0 || v; v /= 10)
                digits[dl++] = (char)('0' + v % 10);
            while (dl)
                *o++ = digits[--dl];
            memcpy(o, wh_buf_ptr(&suffix), sl);
            o += sl;
        }
        b->len = (size_t)(o - b->ptr);
        b->ptr[b->len] = '\0';
    }
    wh_buf_free(&prefix);
    wh_buf_free(&suffix);
    return err;
}

static const char *env_value(const cJSON *env, const char *name, bool *exists)
{
    struct wh_env_lookup lk;
    wh_env_lookup(env, name, &lk);
    if (exists)
        *exists = lk.exists;
    return lk.value;
}

/* One TPU container's env operations, in the order of
 * docs/internals/reference-behaviour.md §2.7.2. */
struct env_step {
    struct wh_tpu_pod *c;
    unsigned ci;      /* index among TPU containers */
    const cJSON *env; /* the container's env as sent */
    struct wh_env_writer w;
    const char *hostnames; /* what TorchTPU addresses are built over */
};

/* var=value when the KubeRay path's verb for var says so (envtab.h). */
static enum wh_err put(struct env_step *st, enum wh_env_var var, const char *value)
{
    return wh_env_put(&st->w, WH_PATH_KUBERAY, var, value);
}

/* put with the digits of v. */
static enum wh_err put_num(struct env_step *st, enum wh_env_var var, long v)
{
    char value[24];
    return put(st, var, num(value, v));
}

/* Whether the KubeRay path's verb for var writes it; placeholder: the
 * value held is a single-host one (WH_VERB_SET_IF_PLACEHOLDER). */
static bool wants(const struct env_step *st, enum wh_env_var var, bool placeholder)
{
    return wh_env_wants(&st->w, WH_PATH_KUBERAY, var, placeholder);
}

/* MEGASCALE_* for multi-slice groups, single-host too
 * (docs/internals/reference-behaviour.md §2.7.4). */
static enum wh_err megascale_env(struct env_step *st)
{
    const struct wh_tpu_pod *c = st->c;
    bool multislice;
    env_value(st->env, "MEGASCALE_NUM_SLICES", &multislice);
    if (!multislice)
        return WH_OK;
    char coordinator[512]; /* "<group>-0-0.<headless>", ":8081" on TPU7x */
    struct wh_text t;
    wh_text_init(&t, coordinator, sizeof(coordinator));
    wh_text_add(&t, c->group);
    wh_text_add(&t, "-0-0.");
    wh_text_add(&t, c->headless);
    wh_text_add(&t, c->tpu7x ? ":8081" : "");
    enum wh_err err = put_num(st, WH_ENV_MEGASCALE_SLICE_ID, c->slice);
    if (!err)
        err = put(st, WH_ENV_MEGASCALE_COORDINATOR_ADDRESS, coordinator);
    if (!err)
        err = put_num(st, WH_ENV_MEGASCALE_PORT, WH_MEGASCALE_PORT + (c->tpu7x ? (long)st->ci : 0));
    return err;
}

/* Peers (docs/internals/reference-behaviour.md §2.7.5):
 * TPU_WORKER_HOSTNAMES on multi-host pods, TPU7x's process addresses and
 * port. Decides the host list TorchTPU uses: the
 * user's non-localhost list wins. */
static enum wh_err peer_env(struct env_step *st)
{
    const struct wh_tpu_pod *c = st->c;
    bool multi = c->n_hosts > 1;
    enum wh_err err = WH_OK;
    st->hostnames = "localhost";
    if (multi) {
        const char *cur = env_value(st->env, "TPU_WORKER_HOSTNAMES", NULL);
        if (wants(st, WH_ENV_TPU_WORKER_HOSTNAMES, !strcmp(cur, "localhost"))) {
            st->hostnames = st->c->peer_names;
            err = wh_env_set(&st->w, "TPU_WORKER_HOSTNAMES", st->hostnames);
        } else {
            st->hostnames = cur;
        }
    }
    if (err || !c->tpu7x || (!multi && c->tc.n < 2))
        return err;
    /* One JAX process per TPU container; a single-host multi-container pod
     * needs the addresses too, or its processes cannot rendezvous. */
    const char *cur = env_value(st->env, "TPU_PROCESS_ADDRESSES", NULL);
    if (wants(st, WH_ENV_TPU_PROCESS_ADDRESSES, multi && strstr(cur, "localhost")))
        err = wh_env_set(&st->w, "TPU_PROCESS_ADDRESSES", st->c->process_addrs);
    if (!err)
        err = put_num(st, WH_ENV_TPU_PROCESS_PORT, WH_TPU_PROCESS_PORT_BASE + (long)st->ci);
    return err;
}

/* The text of b, handed to the decision (operations are written from it). */
static enum wh_err keep_text(struct wh_decision *d, struct wh_buf *b, const char **out)
{
    char *text = wh_buf_take(b, NULL);
    if (!text)
        return WH_ERR_NOMEM;
    WH_TRY(wh_decision_keep(d, text));
    *out = text;
    return WH_OK;
}

/* TorchTPU (docs/internals/reference-behaviour.md §2.7.8, topology per
 * D3); skipped when the user set TORCH_TPU_TOPOLOGY (its verb keeps it). */
static enum wh_err torch_env(struct env_step *st)
{
    struct wh_tpu_pod *c = st->c;
    if (!wants(st, WH_ENV_TORCH_TPU_TOPOLOGY, false))
        return WH_OK;
    /* Addresses per host: the chips of the slice over the hosts of the list
     * (docs/internals/reference-behaviour.md §2.7.8), doubled on TPU7x. */
    long hosts = wh_host_count(st->hostnames);
    long per_host = c->topo.chips / hosts * (c->tpu7x ? 2 : 1);
    if (per_host == 0 || per_host * hosts > MAX_TORCH_ADDRESSES) {
        if (per_host == 0)
            return wh_tpu_pod_deny(c,
                                   "container "
                                   "\"%s\" sets TPU_WORKER_HOSTNAMES to %ld hosts but topology %s "
                                   "has only %ld chips, so TorchTPU would get no address; list "
                                   "the slice's %ld hosts, or unset TPU_WORKER_HOSTNAMES, or set "
                                   "TORCH_TPU_TOPOLOGY in the container to skip TorchTPU "
                                   "injection",
                                   wh_json_str0(c->tc.items[st->ci].obj, "name"), hosts,
                                   c->topology, c->topo.chips, c->n_hosts);
        return wh_tpu_pod_deny(c,
                               "TORCH_TPU_SLICEBUILDER_ADDRESSES for topology %s would have more "
                               "than %ld entries; set TORCH_TPU_TOPOLOGY in the container to skip "
                               "TorchTPU injection",
                               c->topology, MAX_TORCH_ADDRESSES);
    }
    bool too_many; /* checked above */
    const char *addrs;
    enum wh_err err = put(st, WH_ENV_TORCH_TPU_TOPOLOGY, st->c->torch_topology);
    /* Bounded by what is left of the patch. A list an earlier container
     * could carry and this one cannot fails in its operation instead, with
     * the same WH_ERR_TOOBIG. */
    if (!err)
        err = wh_port_list_get(&st->c->torch_addrs, c->d, st->hostnames, per_host,
                               WH_PATCH_MAX_BYTES - wh_buf_len(&c->d->patch), &addrs, &too_many);
    if (!err)
        err = put(st, WH_ENV_TORCH_TPU_SLICEBUILDER_ADDRESSES, addrs);
    return err;
}

/* TPU_WORKER_ID (docs/internals/reference-behaviour.md §2.7.3, §2.7.6),
 * TPU_NAME and the device plugin's variables (§2.7.7). */
static enum wh_err identity_env(struct env_step *st)
{
    const struct wh_tpu_pod *c = st->c;
    long expected = wh_tpu_worker_id(c->host, c->tc.n, st->ci, c->tpu7x);
    char exp_s[24], def_s[24];
    num(exp_s, expected);
    num(def_s, st->ci);
    /* The reference's default, the container's TPU number, is a
     * single-host value unless it is the id expected
     * (docs/internals/reference-behaviour.md §2.7.6). */
    const char *cur = env_value(st->env, "TPU_WORKER_ID", NULL);
    enum wh_err err = WH_OK;
    if (wants(st, WH_ENV_TPU_WORKER_ID, !strcmp(cur, def_s) && strcmp(cur, exp_s)))
        err = wh_env_set(&st->w, "TPU_WORKER_ID", exp_s);
    if (!err)
        err = put(st, WH_ENV_TPU_NAME, c->tpu_name);
    if (!err && wants(st, WH_ENV_TPU_DEVICE_PLUGIN_HOST_IP, false))
        err = wh_env_set_field_ref(&st->w, "TPU_DEVICE_PLUGIN_HOST_IP", "status.hostIP");
    if (!err)
        err = put(st, WH_ENV_TPU_DEVICE_PLUGIN_ADDR, DEVICE_PLUGIN_ADDR);
    return err;
}

static enum wh_err container_env(struct wh_tpu_pod *c, unsigned ci)
{
    struct env_step st = {.c = c, .ci = ci, .env = wh_json_get(c->tc.items[ci].obj, "env")};
    wh_env_writer_init(&st.w, c->d, c->tc.items[ci].index, st.env);
    enum wh_err err = megascale_env(&st);
    if (!err)
        err = peer_env(&st);
    if (!err)
        err = torch_env(&st);
    if (!err && !wh_tpu_pod_denied(c))
        err = identity_env(&st);
    return err;
}

/* ---- pod-level operations --------------------------------------------- */

/* path: "/spec/<field>" */
static enum wh_err set_if_different(struct wh_tpu_pod *c, const char *path, const char *value)
{
    const char *cur = wh_json_str(c->spec, path + sizeof("/spec/") - 1);
    if (cur && !strcmp(cur, value))
        return WH_OK;
    return wh_patch_add_string(c->d, "add", path, value);
}

static enum wh_err pod_ops(struct wh_tpu_pod *c, const struct wh_state *st, char *errbuf)
{
    /* Selector label of the replica (docs/internals/reference-behaviour.md §2.6);
     * the fallback key needs the pod to carry the legacy label itself
     * (D7 / B10). */
    bool by_name = wh_json_has(c->labels, WH_LABEL_REPLICA_NAME) &&
                   wh_json_has(c->labels, WH_LABEL_HOST_INDEX);
    const char *sel_value = by_name ? wh_json_str0(c->labels, WH_LABEL_REPLICA_NAME) : c->tpu_name;
    bool want_label = c->legacy || (c->n_hosts > 1 && !by_name);
    struct wh_group_names names = {.cluster = c->cluster,
                                   .group = c->group,
                                   .replica = c->slice,
                                   .host = c->host,
                                   .label = want_label,
                                   .multi_host = c->n_hosts > 1};
    char why[1024];
    if (!wh_names_group_ok(&names, why, sizeof(why)))
        return wh_tpu_pod_deny(c, "%s", why); /* a name the API server refuses */
    enum wh_err err = WH_OK;
    if (want_label) {
        const char *cur = wh_json_str(c->labels, WH_LABEL_LEGACY_REPLICA);
        if (!cur || strcmp(cur, c->tpu_name))
            err = wh_patch_add_string(c->d, "add", "/metadata/labels/" WH_LABEL_LEGACY_REPLICA,
                                      c->tpu_name);
    }
    if (err || c->n_hosts <= 1)
        return err;

    char hostname[WH_NAME_MAX + 1]; /* checked by names_ok */
    struct wh_text ht;
    wh_text_init(&ht, hostname, sizeof(hostname));
    wh_text_add(&ht, c->group);
    wh_text_add(&ht, "-");
    wh_text_addl(&ht, c->slice);
    wh_text_add(&ht, "-");
    wh_text_addl(&ht, c->host);
    err = set_if_different(c, "/spec/hostname", hostname);
    if (!err)
        err = set_if_different(c, "/spec/subdomain", c->headless);
    if (err)
        return err;

    struct wh_affinity_terms t = {
        .sel_key = by_name ? WH_LABEL_REPLICA_NAME : WH_LABEL_LEGACY_REPLICA,
        .sel_value = sel_value,
        .cluster = c->cluster,
        .topology_key = wh_affinity_topology_key(c->pod),
    };
    const cJSON *annotations = wh_json_path(c->pod, "metadata", "annotations", NULL);
    if (wh_meta_has_annotation(c->pod, WH_ANN_SLICE_TOPOLOGY) &&
        !wh_managed(c->labels, annotations)) {
        struct wh_subslice_index idx;
        err = wh_subslice_find(st, wh_json_get(c->spec, "nodeSelector"), c->n_hosts, &idx, errbuf);
        if (err)
            return err;
        if (idx.n_nodes && !idx.key) {
            return wh_tpu_pod_deny(
                c,
                "schedule pod for subslice on %zu possible nodes not possible: could not find "
                "affinity rule to schedule %ld hosts; no host, subblock, block or node pool of the "
                "matching TPU nodes has exactly %ld nodes, so choose a subslice topology "
                "(annotation %s) that fits one",
                idx.n_nodes, c->n_hosts, c->n_hosts, WH_ANN_SLICE_TOPOLOGY);
        }
        if (idx.key)
            t.topology_key = idx.key;
    }
    const cJSON *user = wh_json_get(c->spec, "affinity");
    if (wh_affinity_is_fresh(user)) { /* most pods: written without a tree */
        struct wh_affinity_fresh f = {.affinity = user, .terms = &t};
        return wh_patch_add_written(c->d, "add", "/spec/affinity", wh_affinity_write_fresh, &f);
    }
    cJSON *aff = NULL;
    err = wh_affinity_merge(user, &t, &aff);
    if (!err && aff)
        err = wh_patch_add_json(c->d, "add", "/spec/affinity", aff);
    wh_json_delete(aff); /* built here, in one piece: nothing to walk in an arena */
    return err;
}

/* ---- entry -------------------------------------------------------------- */

static enum wh_err build_shared(struct wh_tpu_pod *c)
{
    /* Every value is part of the patch: none may pass its limit, and the
     * operations stop at it (patch.h), so work and memory stay bounded. */
    struct wh_buf hosts, procs;
    wh_buf_init(&hosts, WH_PATCH_MAX_BYTES);
    wh_buf_init(&procs, WH_PATCH_MAX_BYTES);
    enum wh_err err = WH_OK;
    bool too_many = false;
    if (c->n_hosts > 1)
        err = host_list(c, &hosts);
    if (!err && c->n_hosts > 1)
        err = keep_text(c->d, &hosts, &c->peer_names);
    if (!err && c->tpu7x)
        err = wh_host_ports(c->peer_names ? c->peer_names : "localhost", (long)c->tc.n, &procs,
                            &too_many);
    if (!err && too_many)
        err = WH_ERR_TOOBIG; /* more addresses than any patch can carry */
    if (!err && c->tpu7x)
        err = keep_text(c->d, &procs, &c->process_addrs);
    wh_buf_free(&hosts);
    wh_buf_free(&procs);
    wh_torch_topology(&c->topo, c->tpu7x, c->torch_topology, sizeof(c->torch_topology));
    return err;
}

static size_t digits(long v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* About the patch a pod would need (the env values dominate): sizes the
 * patch's text once, and is shown in the denial after writing stopped at
 * WH_PATCH_MAX_BYTES. */
static size_t patch_estimate(const struct wh_tpu_pod *c)
{
    size_t entry = strlen(c->group) + digits(c->slice) + digits(c->n_hosts) + strlen(c->headless) +
                   4;
    size_t hosts = (size_t)c->n_hosts, per_container = 400;
    if (hosts > 1)
        per_container += hosts * entry;
    if (hosts > 1 && c->tpu7x)
        per_container += hosts * c->tc.n * (entry + 5);
    per_container += (size_t)c->topo.chips * (c->tpu7x ? 2 : 1) * (hosts > 1 ? entry + 5 : 15);
    return per_container * c->tc.n;
}

/* Issue 10: a 1.9 KB review (TPU7x 16x32x64, 8 one-chip containers) asked for
 * a 46 MB patch that no API server stores. */
static enum wh_err deny_patch_too_big(struct wh_tpu_pod *c)
{
    size_t estimate = patch_estimate(c);
    /* The pod's own long values, or their escapes, in an operation that
     * measured its need (patch.h); a value that could not be built within
     * the patch's room (wh_port_list_get) measured none. */
    if (estimate <= WH_PATCH_MAX_BYTES && c->d->patch_need)
        return wh_tpu_pod_deny(c,
                               "the mutation patch is %zu bytes or more, over the %zu-byte limit of "
                               "what the API server can store (etcd keeps objects under 1.5 MiB); "
                               "shorten the names and values it repeats",
                               c->d->patch_need, WH_PATCH_MAX_BYTES);
    return wh_tpu_pod_deny(c,
                           "the mutation patch would be "
                           "about %zu bytes (topology %s: %ld hosts; TPU containers per pod: %u), "
                           "over the %zu-byte limit of what the API server can store (etcd keeps "
                           "objects under 1.5 MiB); give each pod one TPU container with all of "
                           "its host's chips, or set TORCH_TPU_TOPOLOGY in the containers to skip "
                           "TorchTPU injection",
                           estimate > WH_PATCH_MAX_BYTES ? estimate : WH_PATCH_MAX_BYTES + 1,
                           c->topology, c->n_hosts, c->tc.n, WH_PATCH_MAX_BYTES);
}

/* The prepare step of KubeRay's row: the texts every container shares,
 * the patch's room, then the pod-level operations (label, hostname,
 * subdomain, affinity), which come first in the patch. */
static enum wh_err prepare(struct wh_tpu_pod *c, const struct wh_state *st, bool *skipped,
                           char *errbuf)
{
    (void)skipped;
    enum wh_err err = build_shared(c);
    size_t estimate = patch_estimate(c); /* the env values; a quarter more for the rest */
    if (!err)
        err = wh_patch_reserve(c->d, estimate + estimate / 4 + 1024);
    if (!err)
        err = pod_ops(c, st, errbuf);
    return err;
}

static enum wh_err no_containers(struct wh_tpu_pod *c, const cJSON *containers)
{
    return wh_decision_deny(c->d,
                            "%s: spec.containers is %s; a pod needs a list of containers "
                            "(Container path not specified)",
                            c->who,
                            containers && !cJSON_IsNull(containers) ? "not a list" : "missing");
}

/* The names TPU_WORKER_HOSTNAMES and the MEGASCALE coordinator give must
 * resolve: the RayCluster's rule (validate.c, check_host_network) for a
 * pod, which cannot see its group's replicas, so MEGASCALE's world is its
 * declared MEGASCALE_NUM_SLICES (several when a valueFrom). A warning (and
 * the whole text as a note), not a denial, as the pod path treats the
 * other RayCluster rules: a cluster admitted before the rule, or kept by
 * the ratchet, must still get its pods. */
static enum wh_err dns_warning(struct wh_tpu_pod *c)
{
    const cJSON *containers = wh_json_get(c->spec, "containers");
    long slices = 1, n;
    for (const cJSON *k = cJSON_IsArray(containers) ? containers->child : NULL; k && slices == 1;
         k = k->next) {
        struct wh_env_lookup lk;
        wh_env_lookup(wh_json_get(k, "env"), "MEGASCALE_NUM_SLICES", &lk);
        if (lk.exists && wh_container_requests_tpu(k))
            slices = wh_parse_long(lk.value, &n) && n >= 1 ? n : 2;
    }
    long world = c->n_hosts * wh_megascale_joined_slices(containers, slices, false);
    char why[640];
    if (!wh_hostnet_dns_conflict(c->spec, "spec", world, WH_DNS_NAMES_KUBERAY, why, sizeof(why)))
        return WH_OK;
    enum wh_err err = wh_decision_warn(c->d,
                                       "hostNetwork needs dnsPolicy ClusterFirstWithHostNet: the "
                                       "%ld pods' peer names do not resolve",
                                       world);
    return err ? err : wh_decision_note(c->d, "%s", why);
}

/* KubeRay's row of the walk (pipeline.h): the reference's check order
 * (labels and topology before the duplicates) and messages, the
 * pod-level operations, and its DNS warning. */
static const struct wh_pod_path kuberay_path = {
    .no_containers = no_containers,
    .duplicates_first = false,
    .slice = slice,
    .prepare = prepare,
    .container_env = container_env,
    .after = dns_warning,
    .too_big = deny_patch_too_big,
};

enum wh_err wh_mutate_pod(const struct wh_review *rv, const struct wh_state *st,
                          struct wh_decision *d, char *errbuf)
{
    const struct wh_review_info *in = wh_review_info(rv);
    if (strcmp(in->operation, "CREATE"))
        return WH_OK; /* D4: only creation is mutated */
    const cJSON *pod = wh_review_object(rv);
    if (!cJSON_IsObject(pod))
        return wh_decision_deny(d, "request.object is not a Pod object; send the Pod being created");
    struct wh_tpu_pod c;
    wh_tpu_pod_init(&c, pod, WH_WL_KUBERAY, d);
    c.ns = in->ns;
    /* The pod's own name or generateName, not in->name, which falls back to
     * request.name: messages name the pod as its metadata does. Cut as the
     * reference-compatible messages always were (400 bytes). */
    c.pod_name = in->object_name;
    snprintf(c.who, 400, "Pod \"%s/%s\"", c.ns, c.pod_name);
    c.cluster = in->cluster;
    c.group = in->group;
    return wh_tpu_pod_run(&c, &kuberay_path, wh_identity_of(c.kind), st, errbuf);
}
