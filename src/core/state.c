/* state.c: pod records and the in-memory cluster state (wh_memstate).
 * wh_memstate is filled by the shell (CLI files, render) before a review and
 * only read during one; it is not locked. */
#include "wh/state.h"

#include <stdint.h> /* UINT32_MAX */
#include <string.h> /* strcmp */

#include <cjson/cJSON.h>

#include "wh/json.h"      /* wh_json_* */
#include "wh/podspec.h"   /* label keys, wh_env_lookup */
#include "wh/hash.h"      /* wh_hash_str, WH_HASH_INIT */
#include "wh/mem.h"       /* wh_free */
#include "wh/nodeindex.h" /* wh_nodeindex_* */

/* docs/internals/reference-behaviour.md §2.4 step 3: the first TPU container
 * with an integer TPU_WORKER_ID decides; an unset one met first makes the
 * record "empty". */
static long first_worker_id(const cJSON *containers)
{
    for (const cJSON *c = cJSON_IsArray(containers) ? containers->child : NULL; c; c = c->next) {
        if (!wh_container_requests_tpu(c))
            continue;
        struct wh_env_lookup lk;
        wh_env_lookup(wh_json_get(c, "env"), "TPU_WORKER_ID", &lk);
        if (!*lk.value)
            return WH_WORKER_ID_EMPTY;
        long id;
        if (wh_parse_long(lk.value, &id) && id >= 0)
            return id;
    }
    return WH_WORKER_ID_NONE;
}

bool wh_pod_rec_from_json(const cJSON *pod, struct wh_pod_rec *rec)
{
    if (!cJSON_IsObject(pod))
        return false;
    const cJSON *meta = wh_json_get(pod, "metadata");
    const cJSON *containers = wh_json_path(pod, "spec", "containers", NULL);
    memset(rec, 0, sizeof(*rec));
    rec->name = wh_meta_name(meta);
    rec->ns = wh_json_str0(meta, "namespace");
    rec->cluster = wh_json_str0(wh_json_get(meta, "labels"), WH_LABEL_CLUSTER);
    rec->group = wh_json_str0(wh_json_get(meta, "labels"), WH_LABEL_GROUP);
    rec->replica_label = wh_json_str(wh_json_get(meta, "labels"), WH_LABEL_LEGACY_REPLICA);
    const cJSON *del = wh_json_get(meta, "deletionTimestamp");
    rec->deleting = del && !cJSON_IsNull(del);
    for (const cJSON *c = cJSON_IsArray(containers) ? containers->child : NULL; c; c = c->next)
        rec->n_tpu_containers += wh_container_requests_tpu(c);
    rec->worker_id = first_worker_id(containers);
    return true;
}

/* ---- wh_memstate ------------------------------------------------------- */

struct mem_pod {
    struct wh_pod_rec rec; /* strings owned by this struct */
};

struct mem_node {
    struct wh_node_rec rec; /* name, keys, values owned */
};

/* The pods of one worker group (namespace, cluster, group), as indices into
 * wh_memstate.pods in the order added: a group's walk visits its pods, not
 * every pod (render adds each pod it admits, and the next one's mutation
 * walks its group: issue 22). */
struct mem_group {
    struct mem_group *next; /* chain of its bucket */
    uint32_t hash;
    size_t *pods;
    size_t n, cap;
};

struct wh_memstate {
    struct mem_pod *pods;
    size_t n_pods, cap_pods;
    struct mem_group **groups; /* n_buckets (a power of 2) chains */
    size_t n_buckets, n_groups;
    struct mem_node *nodes;
    size_t n_nodes, cap_nodes;
    struct wh_nodeindex *ix; /* the nodes by label, id = their slot */
};

struct wh_memstate *wh_memstate_new(void)
{
    struct wh_memstate *ms = wh_calloc(1, sizeof(struct wh_memstate));
    if (ms && !(ms->ix = wh_nodeindex_new())) {
        wh_free(ms);
        ms = NULL;
    }
    return ms;
}

static void free_pod(struct mem_pod *p)
{
    wh_free((char *)p->rec.name);
    wh_free((char *)p->rec.ns);
    wh_free((char *)p->rec.cluster);
    wh_free((char *)p->rec.group);
    wh_free((char *)p->rec.replica_label);
}

static void free_node(struct mem_node *n)
{
    for (size_t i = 0; i < n->rec.n_labels; i++) {
        wh_free((char *)n->rec.keys[i]);
        wh_free((char *)n->rec.values[i]);
    }
    wh_free((void *)n->rec.keys);
    wh_free((void *)n->rec.values);
    wh_free((char *)n->rec.name);
}

void wh_memstate_free(struct wh_memstate *ms)
{
    if (!ms)
        return;
    for (size_t i = 0; i < ms->n_pods; i++)
        free_pod(&ms->pods[i]);
    for (size_t i = 0; i < ms->n_nodes; i++)
        free_node(&ms->nodes[i]);
    for (size_t i = 0; i < ms->n_buckets; i++)
        for (struct mem_group *g = ms->groups[i], *next; g; g = next) {
            next = g->next;
            wh_free(g->pods);
            wh_free(g);
        }
    wh_free(ms->groups);
    wh_free(ms->pods);
    wh_free(ms->nodes);
    wh_nodeindex_free(ms->ix);
    wh_free(ms);
}

static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = wh_realloc(*arr, nc * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}

static char *dup_or_null(const char *s)
{
    return s ? wh_strdup(s) : NULL;
}

static uint32_t group_hash(const char *ns, const char *cluster, const char *group)
{
    return wh_hash_str(wh_hash_str(wh_hash_str(WH_HASH_INIT, ns), cluster), group);
}

static struct mem_group *find_group(const struct wh_memstate *ms, const char *ns,
                                    const char *cluster, const char *group, uint32_t h)
{
    for (struct mem_group *g = ms->n_buckets ? ms->groups[h & (ms->n_buckets - 1)] : NULL; g;
         g = g->next) {
        if (!g->n)
            continue; /* left empty by a failed allocation */
        const struct wh_pod_rec *r = &ms->pods[g->pods[0]].rec;
        if (g->hash == h && !strcmp(r->group, group) && !strcmp(r->cluster, cluster) &&
            !strcmp(r->ns, ns))
            return g;
    }
    return NULL;
}

/* Room for one more group in the buckets (load at most 1). */
static bool group_buckets(struct wh_memstate *ms)
{
    if (ms->n_groups < ms->n_buckets)
        return true;
    size_t nb = ms->n_buckets ? 2 * ms->n_buckets : 16;
    struct mem_group **b = wh_calloc(nb, sizeof(*b));
    if (!b)
        return false;
    for (size_t i = 0; i < ms->n_buckets; i++)
        for (struct mem_group *g = ms->groups[i], *next; g; g = next) {
            next = g->next;
            g->next = b[g->hash & (nb - 1)];
            b[g->hash & (nb - 1)] = g;
        }
    wh_free(ms->groups);
    ms->groups = b;
    ms->n_buckets = nb;
    return true;
}

/* Pod i (its record complete) into its group's list. */
static enum wh_err group_pod(struct wh_memstate *ms, size_t i)
{
    const struct wh_pod_rec *r = &ms->pods[i].rec;
    uint32_t h = group_hash(r->ns, r->cluster, r->group);
    struct mem_group *g = find_group(ms, r->ns, r->cluster, r->group, h);
    if (!g) {
        if (!group_buckets(ms) || !(g = wh_calloc(1, sizeof(*g))))
            return WH_ERR_NOMEM;
        g->hash = h;
        g->next = ms->groups[h & (ms->n_buckets - 1)];
        ms->groups[h & (ms->n_buckets - 1)] = g;
        ms->n_groups++;
    }
    if (!grow((void **)&g->pods, &g->cap, g->n, sizeof(*g->pods)))
        return WH_ERR_NOMEM; /* an empty new group stays: found by no pod, freed at the end */
    g->pods[g->n++] = i;
    return WH_OK;
}

enum wh_err wh_memstate_add_rec(struct wh_memstate *ms, const struct wh_pod_rec *rec)
{
    if (!grow((void **)&ms->pods, &ms->cap_pods, ms->n_pods, sizeof(*ms->pods)))
        return WH_ERR_NOMEM;
    struct mem_pod *p = &ms->pods[ms->n_pods];
    p->rec = *rec;
    p->rec.name = wh_strdup(rec->name ? rec->name : "");
    p->rec.ns = wh_strdup(rec->ns ? rec->ns : "");
    p->rec.cluster = wh_strdup(rec->cluster ? rec->cluster : "");
    p->rec.group = wh_strdup(rec->group ? rec->group : "");
    p->rec.replica_label = dup_or_null(rec->replica_label);
    if (!p->rec.name || !p->rec.ns || !p->rec.cluster || !p->rec.group ||
        (rec->replica_label && !p->rec.replica_label) || group_pod(ms, ms->n_pods)) {
        free_pod(p);
        return WH_ERR_NOMEM;
    }
    ms->n_pods++;
    return WH_OK;
}

/* Walk a List object, a JSON array, or a single object of the given kind. */
static const cJSON *list_items(const cJSON *json, const char *kind, bool *single)
{
    *single = false;
    if (cJSON_IsArray(json))
        return json;
    const char *k = wh_json_str(json, "kind");
    const cJSON *items = wh_json_get(json, "items");
    if (cJSON_IsArray(items))
        return items;
    if (cJSON_IsObject(json) && (!k || !strcmp(k, kind))) {
        *single = true;
        return json;
    }
    return NULL;
}

static bool kept_by_pod_cache(const cJSON *pod)
{
    const char *t = wh_meta_label(pod, WH_LABEL_NODE_TYPE);
    const char *c = wh_meta_label(pod, WH_LABEL_CREATED_BY);
    return t && !strcmp(t, "worker") && c && !strcmp(c, "kuberay-operator");
}

enum wh_err wh_memstate_add_pods(struct wh_memstate *ms, const cJSON *json, size_t *added,
                                 char *errbuf)
{
    bool single;
    const cJSON *items = list_items(json, "Pod", &single);
    size_t n = 0;
    if (!items)
        return wh_fail(errbuf, WH_ERR_INVALID, "expected a PodList, a JSON array of pods or a Pod");
    const cJSON *first = single ? items : items->child;
    for (const cJSON *p = first; p; p = single ? NULL : p->next) {
        struct wh_pod_rec rec;
        if (!wh_pod_rec_from_json(p, &rec))
            return wh_fail(errbuf, WH_ERR_INVALID, "item %zu is not a JSON object", n);
        if (!kept_by_pod_cache(p))
            continue;
        if (wh_memstate_add_rec(ms, &rec))
            return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        n++;
    }
    if (added)
        *added = n;
    return WH_OK;
}

static enum wh_err add_node(struct wh_memstate *ms, const cJSON *node)
{
    const cJSON *labels = wh_json_path(node, "metadata", "labels", NULL);
    if (!wh_json_str(labels, WH_SEL_ACCELERATOR))
        return WH_OK; /* the node cache keeps TPU nodes only */
    if (!grow((void **)&ms->nodes, &ms->cap_nodes, ms->n_nodes, sizeof(*ms->nodes)))
        return WH_ERR_NOMEM;
    size_t n = 0;
    for (const cJSON *l = labels->child; l; l = l->next)
        n += cJSON_IsString(l) && l->string;
    struct mem_node *mn = &ms->nodes[ms->n_nodes];
    memset(mn, 0, sizeof(*mn));
    const char **keys = wh_calloc(n ? n : 1, sizeof(char *));
    const char **values = wh_calloc(n ? n : 1, sizeof(char *));
    mn->rec.keys = keys;
    mn->rec.values = values;
    mn->rec.name = wh_strdup(wh_json_str0(wh_json_get(node, "metadata"), "name"));
    if (!keys || !values || !mn->rec.name) {
        free_node(mn);
        return WH_ERR_NOMEM;
    }
    for (const cJSON *l = labels->child; l; l = l->next) {
        if (!cJSON_IsString(l) || !l->string)
            continue;
        size_t i = mn->rec.n_labels;
        keys[i] = wh_strdup(l->string);
        values[i] = wh_strdup(l->valuestring);
        mn->rec.n_labels++;
        if (!keys[i] || !values[i]) {
            free_node(mn);
            return WH_ERR_NOMEM;
        }
    }
    if (ms->n_nodes > UINT32_MAX || wh_nodeindex_add(ms->ix, (uint32_t)ms->n_nodes, &mn->rec)) {
        free_node(mn);
        return WH_ERR_NOMEM;
    }
    ms->n_nodes++;
    return WH_OK;
}

enum wh_err wh_memstate_add_nodes(struct wh_memstate *ms, const cJSON *json, size_t *added,
                                  char *errbuf)
{
    bool single;
    const cJSON *items = list_items(json, "Node", &single);
    if (!items)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "expected a NodeList, a JSON array of nodes or a Node");
    size_t before = ms->n_nodes, i = 0;
    const cJSON *first = single ? items : items->child;
    for (const cJSON *n = first; n; n = single ? NULL : n->next, i++) {
        if (!cJSON_IsObject(n))
            return wh_fail(errbuf, WH_ERR_INVALID, "item %zu is not a JSON object", i);
        if (add_node(ms, n))
            return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    }
    if (added)
        *added = ms->n_nodes - before;
    return WH_OK;
}

static enum wh_err mem_each_group_pod(const void *impl, const char *ns, const char *cluster,
                                      const char *group, wh_pod_visit_fn fn, void *arg, char *errbuf)
{
    (void)errbuf;
    const struct wh_memstate *ms = impl;
    const struct mem_group *g = find_group(ms, ns, cluster, group, group_hash(ns, cluster, group));
    for (size_t i = 0; g && i < g->n; i++)
        if (fn(arg, &ms->pods[g->pods[i]].rec))
            break;
    return WH_OK;
}

static enum wh_err mem_each_node(const void *impl, wh_node_visit_fn fn, void *arg, char *errbuf)
{
    (void)errbuf;
    const struct wh_memstate *ms = impl;
    for (size_t i = 0; i < ms->n_nodes; i++)
        if (fn(arg, &ms->nodes[i].rec))
            break;
    return WH_OK;
}

static enum wh_err mem_each_node_with(const void *impl, const char *const *pairs, size_t n_pairs,
                                      wh_node_visit_fn fn, void *arg, char *errbuf)
{
    (void)errbuf;
    const struct wh_memstate *ms = impl;
    size_t n;
    const uint32_t *ids = wh_nodeindex_candidates(ms->ix, pairs, n_pairs, &n);
    for (size_t i = 0; i < n; i++) {
        const struct wh_node_rec *r = &ms->nodes[ids[i]].rec;
        if (wh_node_has_labels(r, pairs, n_pairs) && fn(arg, r))
            break;
    }
    return WH_OK;
}

static const struct wh_state_ops mem_ops = {
    .each_group_pod = mem_each_group_pod,
    .each_node = mem_each_node,
    .each_node_with = mem_each_node_with,
    .legacy_unavailable = NULL,
};

struct wh_state wh_memstate_view(const struct wh_memstate *ms)
{
    struct wh_state st = {.ops = &mem_ops, .impl = ms};
    return st;
}
