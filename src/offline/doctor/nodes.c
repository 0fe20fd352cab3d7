/* nodes.c: the rules of where a slice's pods run: a node can take a
 * pending pod, the node is the TPU slice the pod asks for, and one slice's
 * hosts share a node pool and placement group (doctor_impl.h). */
#include "doctor_impl.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp */

#include "wh/podspec.h" /* wh_node_selector, WH_SEL_*, WH_KEY_NODEPOOL */

#define K_PLACEMENT "cloud.google.com/gke-placement-group"

/* Every label of the pod's nodeSelector on node n. */
static bool node_matches(const cJSON *selector, const struct wh_node_rec *n)
{
    for (const cJSON *kv = selector ? selector->child : NULL; kv; kv = kv->next) {
        const char *v = wh_node_label(n, kv->string);
        if (!cJSON_IsString(kv) || !v || strcmp(v, kv->valuestring))
            return false;
    }
    return true;
}

/* The nodes that may carry every pair of sel (a superset; none when a
 * value is not a string: such a selector matches no node). */
static const uint32_t *selector_candidates(const struct doc *d, const cJSON *sel, size_t *n)
{
    const char *pairs[2 * 32];
    size_t k = 0;
    *n = 0;
    for (const cJSON *kv = sel->child; kv; kv = kv->next) {
        if (!cJSON_IsString(kv))
            return NULL;
        if (k < 32) { /* the first 32 pairs narrow enough; node_matches checks all */
            pairs[2 * k] = kv->string;
            pairs[2 * k + 1] = kv->valuestring;
            k++;
        }
    }
    return wh_nodeindex_candidates(d->by_label, pairs, k, n);
}

/* A pending pod that no listed node can take. Pods of one slice share a
 * selector, so each distinct selector is tried against the nodes once. */
static enum wh_err unschedulable(struct doc *d, struct dslice *s, struct dpod *p)
{
    const cJSON *sel = wh_json_get(p->spec, "nodeSelector");
    char key[1024];
    size_t used = 0;
    for (const cJSON *kv = cJSON_IsObject(sel) ? sel->child : NULL; kv; kv = kv->next) {
        int w = snprintf(key + used, sizeof(key) - used, "%s%s=%s", used ? "," : "", kv->string,
                         cJSON_IsString(kv) ? kv->valuestring : "?");
        if (w < 0 || (size_t)w >= sizeof(key) - used)
            return WH_OK; /* too long to memoise: not judged */
        used += (size_t)w;
    }
    if (!used)
        return WH_OK;
    static const char yes[] = "y", no[] = "n";
    const char *memo = wh_dr_map_get(&d->selectors, key);
    if (!memo) {
        bool any = false;
        if (d->by_label) {
            /* The candidates of the selector's rarest pair, not every node
             * per distinct selector (issue 22). */
            size_t n = 0;
            const uint32_t *ids = selector_candidates(d, sel, &n);
            for (size_t i = 0; i < n && !any; i++)
                any = node_matches(sel, &d->nrecs[ids[i]]);
        } else {
            for (size_t i = 0; i < d->n_nrecs && !any; i++)
                any = node_matches(sel, &d->nrecs[i]);
        }
        memo = any ? yes : no;
        if (wh_dr_map_put(&d->selectors, key, (void *)memo))
            return WH_ERR_NOMEM;
    }
    if (memo == yes)
        return WH_OK;
    struct pfields f = {"unschedulable", p->name, "spec.nodeSelector", key,
                        "the labels of at least one node"};
    return wh_dr_problem(s, true, &f,
                         "no node has all these labels, so the pod stays Pending and the slice "
                         "never starts; create a TPU node pool with accelerator %s and topology %s "
                         "(or let the cluster autoscaler / node auto-provisioning do it), or fix "
                         "the selector",
                         p->accel ? p->accel : "?", p->topology ? p->topology : "?");
}

static enum wh_err node_label_rule(struct dslice *s, const struct dpod *p,
                                   const struct wh_node_rec *n, const char *key)
{
    const char *want = wh_node_selector(p->spec, key);
    const char *have = n ? wh_node_label(n, key) : NULL;
    if (!want || (have && !strcmp(have, want)))
        return WH_OK;
    char field[160], holds[300];
    snprintf(field, sizeof(field), "node %s label %s", p->node, key);
    snprintf(holds, sizeof(holds), "%s", n ? (have ? have : "(unset)") : "(not a TPU node)");
    struct pfields f = {"node-labels-disagree", p->name, field, holds, want};
    return wh_dr_problem(s, true, &f,
                         "the pod runs on a node that is not the TPU slice it asks for; delete the "
                         "pod so that it is scheduled again, and check the node pool's labels");
}

/* The pods of one slice on one node pool and placement group: report the
 * pods whose node's value differs from the first placed pod's. */
static enum wh_err same_label(struct doc *d, struct dslice *s, const char *key, const char *id)
{
    const char *first = NULL, *first_pod = NULL;
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        const struct dpod *p = s->pods[i];
        const struct wh_node_rec *n = p->node ? wh_dr_map_get(&d->nodes, p->node) : NULL;
        const char *v = n ? wh_node_label(n, key) : NULL;
        if (!v)
            continue;
        if (!first) {
            first = v;
            first_pod = p->name;
            continue;
        }
        if (!strcmp(v, first))
            continue;
        char field[160], want[300];
        snprintf(field, sizeof(field), "node %s label %s", p->node, key);
        snprintf(want, sizeof(want), "%s (as pod %.60s's node)", first, first_pod);
        struct pfields f = {id, p->name, field, v, want};
        err = wh_dr_problem(s, true, &f,
                            "the hosts of one slice must be one ICI domain; delete the slice's pods so "
                            "that they are scheduled together (the webhook's pod affinity keeps them on "
                            "one %s)",
                            key);
    }
    return err;
}

enum wh_err wh_dr_node_rules(struct doc *d, struct dslice *s)
{
    if (!d->have_nodes)
        return WH_OK;
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        struct dpod *p = s->pods[i];
        if (p->pending) {
            err = unschedulable(d, s, p);
            continue;
        }
        if (!p->node || !*p->node)
            continue;
        const struct wh_node_rec *n = wh_dr_map_get(&d->nodes, p->node);
        err = node_label_rule(s, p, n, WH_SEL_ACCELERATOR);
        if (!err)
            err = node_label_rule(s, p, n, WH_SEL_TOPOLOGY);
    }
    if (!err && s->hosts > 1)
        err = same_label(d, s, WH_KEY_NODEPOOL, "mixed-node-pools");
    if (!err && s->hosts > 1)
        err = same_label(d, s, K_PLACEMENT, "mixed-placement-groups");
    return err;
}
