/* workload_topology.c: topology and generation of a workload's TPU pod
 * (workload_topology.h). */
#include "wh/workload_topology.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp */

#include "wh/json.h"     /* wh_json_get */
#include "wh/podspec.h"  /* WH_SEL_*, wh_env_lookup, wh_managed */
#include "wh/podwarn.h"  /* WH_PW_*, wh_torch_fields */
#include "wh/topology.h" /* wh_topology_parse, wh_tpu_shape_check, wh_subslice_fits */

struct pool_scan {
    const char *pool;
    struct wh_pool_tpu *out;
};

static int pool_node(void *arg, const struct wh_node_rec *n)
{
    struct pool_scan *ps = arg;
    const char *pool = wh_node_label(n, WH_KEY_NODEPOOL);
    if (!pool || strcmp(pool, ps->pool))
        return 0;
    const char *a = wh_node_label(n, WH_SEL_ACCELERATOR), *t = wh_node_label(n, WH_SEL_TOPOLOGY);
    snprintf(ps->out->accel, sizeof(ps->out->accel), "%s", a ? a : "");
    snprintf(ps->out->topology, sizeof(ps->out->topology), "%s", t ? t : "");
    return 1;
}

enum wh_err wh_pool_tpu_read(const struct wh_state *st, const char *pool, struct wh_pool_tpu *out,
                             char *errbuf)
{
    out->accel[0] = out->topology[0] = '\0';
    if (!pool || !*pool || !st || !st->ops || !st->ops->each_node)
        return WH_OK;
    struct pool_scan ps = {.pool = pool, .out = out};
    /* Looked up in the index of nodes by label when the state has one: a
     * walk per template costs templates x nodes (a JobSet of thousands of
     * replicated jobs over 20,000 nodes took seconds of a serving thread). */
    const char *const pairs[2] = {WH_KEY_NODEPOOL, pool};
    if (st->ops->each_node_with)
        return st->ops->each_node_with(st->impl, pairs, 1, pool_node, &ps, errbuf);
    return st->ops->each_node(st->impl, pool_node, &ps, errbuf);
}

/* The rule of workload_topology.h. */
bool wh_subslice_exempt(const cJSON *labels, const cJSON *meta)
{
    const cJSON *ann = wh_json_get(meta, "annotations");
    return wh_managed(labels, ann) || wh_managed(wh_json_get(meta, "labels"), ann);
}

/* Step 3 of docs/workloads.md: a pod that names its node pool but not its
 * accelerator or topology gets them from the pool's TPU nodes. */
static enum wh_err from_node_pool(struct wh_tpu_pod *w, const struct wh_state *st, char *errbuf)
{
    struct wh_pool_tpu pt;
    WH_TRY(wh_pool_tpu_read(st, wh_node_selector(w->spec, WH_KEY_NODEPOOL), &pt, errbuf));
    if (!*w->accel)
        snprintf(w->accel, sizeof(w->accel), "%s", pt.accel);
    if (!*w->topology && *pt.topology) {
        snprintf(w->topology_buf, sizeof(w->topology_buf), "%s", pt.topology);
        w->topo_from = "the TPU nodes of node pool";
    }
    return WH_OK;
}

/* The first TPU container's preset TORCH_TPU_TOPOLOGY, "" when none. */
static const char *preset_topology(const struct wh_tpu_pod *w)
{
    struct wh_env_lookup lk;
    wh_env_lookup(wh_json_get(w->tc.items[0].obj, "env"), "TORCH_TPU_TOPOLOGY", &lk);
    return lk.value;
}

/* The subslice rule of every path (topology.h, wh_subslice_fits): the pod's
 * annotation (w->topology) must fit its parent node pool's topology, the
 * node selector's or else what the pool's TPU nodes say; a pod that does not
 * fit is denied (no node pool of that shape is there: it would stay Pending).
 * Not judged when no parent is known, when the nodes are not known yet (the
 * subslice is an extra check: a pod that needs no node read is not refused
 * for want of one) or when the pod is exempt (wh_subslice_exempt). */
static enum wh_err subslice_fits(struct wh_tpu_pod *w, const struct wh_state *st, char *errbuf)
{
    if (wh_subslice_exempt(NULL, wh_json_get(w->pod, "metadata")))
        return WH_OK;
    const char *parent = wh_node_selector(w->spec, WH_SEL_TOPOLOGY);
    const char *from = "spec.nodeSelector[\"" WH_SEL_TOPOLOGY "\"]";
    struct wh_pool_tpu pt;
    if (!parent || !*parent) {
        enum wh_err err = wh_pool_tpu_read(st, wh_node_selector(w->spec, WH_KEY_NODEPOOL), &pt,
                                           errbuf);
        if (err == WH_ERR_UNAVAILABLE) /* nodes not known yet: not judged, never refused */
            return WH_OK;
        WH_TRY(err);
        parent = pt.topology;
        from = "the TPU nodes of node pool";
    }
    char fit[512];
    if (!*parent || wh_subslice_fits(w->topology, parent, fit, sizeof(fit)))
        return WH_OK;
    return wh_tpu_pod_deny(w, "%s: %s (the parent is %s), so the pod would stay Pending",
                           w->topo_from, fit, from);
}

/* The rule of workload_topology.h. */
enum wh_err wh_wl_read_topology(struct wh_tpu_pod *w, const struct wh_state *st, bool *skipped,
                                char *errbuf)
{
    const char *t = wh_meta_annotation(w->pod, WH_ANN_SLICE_TOPOLOGY);
    bool subslice = t && *t;
    w->topo_from = "annotation \"" WH_ANN_SLICE_TOPOLOGY "\"";
    if (!t || !*t) {
        t = wh_node_selector(w->spec, WH_SEL_TOPOLOGY);
        w->topo_from = "spec.nodeSelector[\"" WH_SEL_TOPOLOGY "\"]";
    }
    snprintf(w->topology_buf, sizeof(w->topology_buf), "%s", t ? t : "");
    const char *a = wh_node_selector(w->spec, WH_SEL_ACCELERATOR);
    snprintf(w->accel, sizeof(w->accel), "%s", a ? a : "");
    enum wh_err err = WH_OK;
    if (!*w->topology || !*w->accel)
        err = from_node_pool(w, st, errbuf);
    if (err)
        return err;
    if (!*w->topology)
        return wh_wl_skip(w, skipped, WH_PW_TOPOLOGY_UNKNOWN, "the TPU topology is unknown");
    char why[WH_ERRBUF_LEN];
    if (wh_topology_parse(w->topology, &w->topo, why))
        return wh_tpu_pod_deny(w,
                               "%s: %s; use the form AxB or AxBxC, for example \"2x2x1\" or \"4x4\"",
                               w->topo_from, why);
    if (subslice && (err = subslice_fits(w, st, errbuf)) == WH_OK && wh_tpu_pod_denied(w))
        return WH_OK;
    if (err)
        return err;
    if (*w->accel) {
        /* The generation table's rules (topology.h); a pod of a workload the
         * validating entry did not see is refused here, before it hangs. */
        struct wh_tpu_shape shape = {.accel = w->accel,
                                     .accel_field = "spec.nodeSelector[\"" WH_SEL_ACCELERATOR "\"]",
                                     .topology = w->topology,
                                     .topo_field = w->topo_from,
                                     .chips = w->tc.chips,
                                     .chips_field = "the TPU containers' google.com/tpu"};
        struct wh_topology parsed;
        const struct wh_tpu_gen_info *gen;
        struct wh_shape_problem p;
        if (!wh_tpu_shape_check(&shape, &parsed, &gen, &p))
            return wh_tpu_pod_deny(w, "%s", p.text);
        w->tpu7x = gen->devices_per_chip == 2;
        return WH_OK;
    }
    /* No accelerator: a preset TorchTPU topology still tells TPU7x (4
     * fields, two devices per chip) from the others (3 fields). */
    long product;
    int fields = wh_torch_fields(preset_topology(w), &product);
    if (fields == 4 || fields == 3) {
        w->tpu7x = fields == 4;
        return WH_OK;
    }
    return wh_wl_skip(w, skipped, WH_PW_GENERATION_UNKNOWN, "the TPU generation is unknown");
}
