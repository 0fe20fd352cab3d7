/* workload.c: TPU pods of LeaderWorkerSets, JobSets, Indexed Jobs and single
 * pods (docs/workloads.md has the decision table and the worked examples).
 *
 * Unlike the KubeRay path, this path owns nothing: GKE, JobSet and LWS may
 * inject some of the same variables, so a variable is only ever added to a
 * TPU container that has no entry of that name (set, empty or valueFrom),
 * and the values mean what theirs mean (same worker order, same hostnames).
 * No pod-level field is written, so a second review yields no patch. Every
 * value is computed before any operation is emitted and a denial discards
 * the operations, so a patch is never partial. */
#include "wh/workload.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp */

#include "wh/buf.h"               /* wh_buf_* */
#include "wh/decision.h"          /* WH_PATCH_MAX_BYTES */
#include "wh/identity.h"          /* wh_identity_of */
#include "wh/json.h"              /* wh_json_* */
#include "wh/megascale.h"         /* wh_megascale_joined_slices */
#include "wh/mutate.h"            /* wh_mutate_pod */
#include "wh/patch.h"             /* wh_patch_reserve */
#include "wh/pipeline.h"          /* wh_tpu_pod_* */
#include "wh/podspec.h"           /* wh_meta_*, wh_env_lookup */
#include "wh/tpuenv.h"            /* wh_tpu_worker_id */
#include "wh/workload_env.h"      /* wh_wl_one_world, wh_wl_container_env */
#include "wh/workload_pod.h"      /* struct wh_tpu_pod, wh_wl_*, wh_wl_classify */
#include "wh/workload_topology.h" /* wh_wl_read_topology */

/* About the patch's size, to size its text once: per TPU container the
 * host list, TPU7x's process addresses and the TorchTPU addresses (one per
 * chip, two on TPU7x, each about a host list entry and a port), a quarter
 * more for the rest. */
static size_t patch_estimate(const struct wh_tpu_pod *w)
{
    size_t hosts = wh_buf_len(&w->hosts), mult = w->tpu7x ? 2 : 1;
    size_t entry = hosts / (size_t)(w->n_hosts > 0 ? w->n_hosts : 1) + 6;
    size_t per = 1024 + hosts * mult +
                 (size_t)(w->topo.chips > 0 ? w->topo.chips : 0) * mult * entry;
    return (per + per / 4) * w->tc.n;
}

/* LWS's pod webhook injects TPU_WORKER_ID and TPU_WORKER_HOSTNAMES together,
 * and nothing when the template's first TPU container carries either
 * (docs/workloads.md); a multi-host LWS pod with TPU_WORKER_ID but no
 * TPU_WORKER_HOSTNAMES is one LWS skipped, and it has no peers. */
static enum wh_err lws_identity_skipped(struct wh_tpu_pod *w)
{
    const cJSON *env = wh_json_get(w->tc.items[0].obj, "env");
    struct wh_env_lookup id, hosts;
    wh_env_lookup(env, "TPU_WORKER_ID", &id);
    wh_env_lookup(env, "TPU_WORKER_HOSTNAMES", &hosts);
    if (id.first_index < 0 || hosts.first_index >= 0)
        return WH_OK;
    const char *wi = wh_meta_label(w->pod, WH_KEY_LWS_WORKER_INDEX);
    return wh_tpu_pod_deny(w,
                           "container \"%s\" (spec.containers[%d]) of its LeaderWorkerSet's "
                           "%s sets TPU_WORKER_ID (env[%d]), so LWS injected none of "
                           "TPU_WORKER_HOSTNAMES, TPU_NAME, TPU_PROCESS_ADDRESSES, TPU_PROCESS_PORT "
                           "and this pod of a %ld-host slice has no peers; remove it: LWS sets the "
                           "TPU identity of each pod only when the template carries neither",
                           wh_json_str0(w->tc.items[0].obj, "name"), w->tc.items[0].index,
                           wi && !strcmp(wi, "0") ? "leaderTemplate" : "workerTemplate",
                           id.first_index, w->n_hosts);
}

/* One identity per slice (docs/workloads.md): a single-host identity in a
 * container of a multi-host pod contradicts the peers built here; and the
 * names built here must resolve (hostNetwork needs ClusterFirstWithHostNet)
 * for the pods that reach each other by them: the slice's hosts times the
 * slices MEGASCALE joins (megascale.h, as world_of in workload_env.c: 1 on
 * an Indexed Job or LWS, whose n_slices is 1), so single-host slices
 * without MEGASCALE, whose names are all localhost, are not judged. */
static enum wh_err one_identity(struct wh_tpu_pod *w)
{
    for (unsigned i = 0; i < w->tc.n; i++) {
        struct wh_identity_check ic = {.hosts = w->n_hosts,
                                       .host = w->host,
                                       .worker_id = wh_tpu_worker_id(w->host, w->tc.n, i, w->tpu7x),
                                       .check_id = true};
        struct wh_identity_problem ip[2];
        int n = wh_identity_conflicts(wh_json_get(w->tc.items[i].obj, "env"), &ic, ip);
        if (n)
            return wh_tpu_pod_deny(w, "container \"%s\" (spec.containers[%d]) %s%s%s",
                                   wh_json_str0(w->tc.items[i].obj, "name"), w->tc.items[i].index,
                                   ip[0].text, n > 1 ? "; it also " : "", n > 1 ? ip[1].text : "");
    }
    if (w->kind == WH_WL_LWS && w->n_hosts > 1) {
        WH_TRY(lws_identity_skipped(w));
        if (wh_tpu_pod_denied(w))
            return WH_OK;
    }
    char dns[640]; /* names that resolve */
    long world = w->n_hosts * wh_megascale_joined_slices(wh_json_get(w->spec, "containers"),
                                                         w->n_slices, w->megascale);
    if (wh_hostnet_dns_conflict(w->spec, "spec", world, WH_DNS_NAMES_WORKLOAD, dns, sizeof(dns)))
        return wh_tpu_pod_deny(w, "%s", dns);
    return wh_wl_one_world(w);
}

/* The slice step of the workload row: the topology and generation
 * (workload_topology.h; an unknown one skips the pod), then the hosts the
 * pod's chips make of it. */
static enum wh_err slice(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped,
                         char *errbuf)
{
    enum wh_err err = wh_wl_read_topology(w, st, skipped, errbuf);
    if (err || wh_tpu_pod_denied(w) || *skipped)
        return err;
    if (w->tc.chips > w->topo.chips || w->topo.chips % w->tc.chips)
        return wh_tpu_pod_deny(w,
                               "the pod's TPU containers request %ld google.com/tpu in all, which "
                               "does not divide the %ld chips of topology %s (%s); request a "
                               "divisor of %ld chips per pod",
                               w->tc.chips, w->topo.chips, w->topology, w->topo_from, w->topo.chips);
    w->n_hosts = w->topo.chips / w->tc.chips;
    if (w->n_hosts > WH_MAX_HOSTS)
        return wh_tpu_pod_deny(w,
                               "topology %s with %ld chips per pod gives %ld hosts; at most %ld "
                               "are supported; request more google.com/tpu per pod",
                               w->topology, w->tc.chips, w->n_hosts, WH_MAX_HOSTS);
    w->n_slices = 1;
    return WH_OK;
}

/* The settle step: the slice's own PET_MASTER_ADDR, then one identity. */
static enum wh_err settle(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped,
                          char *errbuf)
{
    (void)st, (void)skipped, (void)errbuf;
    if (!*w->slice_master)
        snprintf(w->slice_master, sizeof(w->slice_master), "%s", w->master);
    return one_identity(w);
}

static enum wh_err prepare(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped,
                           char *errbuf)
{
    (void)st, (void)skipped, (void)errbuf;
    return wh_patch_reserve(w->d, patch_estimate(w));
}

static enum wh_err too_big(struct wh_tpu_pod *w)
{
    return wh_tpu_pod_deny(w,
                           "the mutation patch for topology %s (%ld hosts; TPU containers "
                           "per pod: %u) would pass the %zu-byte limit of what the API server can "
                           "store (etcd keeps objects under 1.5 MiB); set "
                           "TORCH_TPU_SLICEBUILDER_ADDRESSES in the containers, or give each "
                           "pod one TPU container",
                           w->topology, w->n_hosts, w->tc.n, WH_PATCH_MAX_BYTES);
}

/* The workload row of the walk (pipeline.h): a pod without containers is
 * the API server's to refuse, the duplicates are judged first, and
 * nothing is written outside the TPU containers' env. */
static const struct wh_pod_path workload_path = {
    .duplicates_first = true,
    .slice = slice,
    .settle = settle,
    .prepare = prepare,
    .container_env = wh_wl_container_env,
    .too_big = too_big,
};

enum wh_err wh_mutate_workload(const struct wh_review *rv, const struct wh_state *st,
                               struct wh_decision *d, char *errbuf)
{
    const struct wh_review_info *in = wh_review_info(rv);
    const cJSON *pod = wh_review_object(rv);
    if (strcmp(in->operation, "CREATE"))
        return WH_OK; /* only creation is mutated */
    if (!cJSON_IsObject(pod))
        return wh_decision_deny(d, "request.object is not a Pod object; send the Pod being created");
    enum wh_workload_kind kind = wh_wl_classify(pod);
    if (kind == WH_WL_KUBERAY)
        return wh_mutate_pod(rv, st, d, errbuf);
    const char *optout = wh_meta_label(pod, WH_LABEL_INJECT);
    if (optout && !strcmp(optout, "disabled"))
        return WH_OK;
    struct wh_tpu_pod w;
    wh_tpu_pod_init(&w, pod, kind, d);
    w.ns = in->ns;
    w.pod_name = in->object_name; /* as wh_mutate_pod's */
    wh_wl_describe(&w);
    return wh_tpu_pod_run(&w, &workload_path, wh_identity_of(kind), st, errbuf);
}
