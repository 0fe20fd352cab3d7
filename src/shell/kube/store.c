/* store.c: the pods and nodes the caches hold (see store.h). */
#include "store.h"

#include <pthread.h> /* pthread_rwlock_t */
#include <stdlib.h>  /* calloc, realloc, free */
#include <string.h>  /* strcmp, strdup, memcpy */

#include <cjson/cJSON.h>

#include "wh/hash.h"      /* wh_hash_str */
#include "wh/nodeindex.h" /* wh_nodeindex_* */
#include "wh/htab.h"      /* wh_htab_*, wh_intern, wh_unintern */
#include "slicerec.h"     /* wh_slicerecs_* */
#include "wh/json.h" /* wh_json_get, wh_json_str, wh_json_path, wh_json_add, wh_json_set_lit, wh_json_set_str_lit, wh_json_set_str */

/* A worker group: its pods are chained through cpod.gnext. */
struct cgroup {
    struct wh_hnode h;
    const char *ns, *cluster, *group; /* interned */
    struct cpod *head;
    size_t n;
};

struct cpod {
    struct wh_hnode h; /* by (ns, name) */
    struct cpod *gnext, *gprev;
    struct cgroup *grp;
    const char *replica_label; /* interned, NULL when absent */
    long worker_id;
    uint32_t gen;
    unsigned short n_tpu;
    bool deleting;
    char name[];
};

/* A node's name in the table of names, by which a watch event finds it. */
struct node_name {
    struct wh_hnode h;
    size_t slot; /* in wh_store.nodes */
};

struct node_entry {
    char *name;
    size_t n;
    char **keys, **values;
    uint32_t gen;
    struct node_name *byname; /* the store's, NULL while outside it */
};

struct wh_store {
    pthread_rwlock_t lock; /* guards everything below */
    struct wh_htab strings;
    struct wh_htab groups;
    struct wh_htab pods;
    struct node_entry *nodes;
    size_t n_nodes, cap_nodes;
    struct wh_htab node_names;     /* struct node_name, by name */
    struct wh_nodeindex *by_label; /* the nodes by label, id = their slot */
    /* The TPU pods' slice records, behind a mutex of their own: the slice
     * check's walk of them never holds the lock admissions read under. */
    struct wh_slicerecs *recs;
};

/* ---- pods --------------------------------------------------------------- */

static uint32_t group_hash(const char *ns, const char *cluster, const char *group)
{
    return wh_hash_str(wh_hash_str(wh_hash_str(WH_HASH_INIT, ns), cluster), group);
}

static struct cgroup *find_group(const struct wh_store *s, const char *ns, const char *cluster,
                                 const char *group)
{
    if (!s->groups.nb)
        return NULL;
    uint32_t h = group_hash(ns, cluster, group);
    for (struct wh_hnode *e = *wh_htab_slot(&s->groups, h); e; e = e->next) {
        struct cgroup *g = (struct cgroup *)e;
        if (e->hash == h && !strcmp(g->group, group) && !strcmp(g->cluster, cluster) &&
            !strcmp(g->ns, ns))
            return g;
    }
    return NULL;
}

static struct cgroup *get_group(struct wh_store *s, const char *ns, const char *cluster,
                                const char *group)
{
    struct cgroup *g = find_group(s, ns, cluster, group);
    if (g)
        return g;
    if (!wh_htab_grow(&s->groups) || !(g = calloc(1, sizeof(*g))))
        return NULL;
    g->ns = wh_intern(&s->strings, ns);
    g->cluster = wh_intern(&s->strings, cluster);
    g->group = wh_intern(&s->strings, group);
    if (!g->ns || !g->cluster || !g->group) {
        wh_unintern(&s->strings, g->ns);
        wh_unintern(&s->strings, g->cluster);
        wh_unintern(&s->strings, g->group);
        free(g);
        return NULL;
    }
    g->h.hash = group_hash(ns, cluster, group);
    wh_htab_insert(&s->groups, &g->h);
    return g;
}

static void put_group(struct wh_store *s, struct cgroup *g)
{
    if (g->n)
        return;
    wh_htab_remove(&s->groups, &g->h);
    wh_unintern(&s->strings, g->ns);
    wh_unintern(&s->strings, g->cluster);
    wh_unintern(&s->strings, g->group);
    free(g);
}

static uint32_t pod_hash(const char *ns, const char *name)
{
    return wh_hash_str(wh_hash_str(WH_HASH_INIT, ns), name);
}

static struct cpod *find_pod(const struct wh_store *s, const char *ns, const char *name)
{
    if (!s->pods.nb)
        return NULL;
    uint32_t h = pod_hash(ns, name);
    for (struct wh_hnode *e = *wh_htab_slot(&s->pods, h); e; e = e->next) {
        struct cpod *p = (struct cpod *)e;
        if (e->hash == h && !strcmp(p->name, name) && !strcmp(p->grp->ns, ns))
            return p;
    }
    return NULL;
}

static void unlink_from_group(struct cpod *p)
{
    struct cgroup *g = p->grp;
    if (p->gprev)
        p->gprev->gnext = p->gnext;
    else
        g->head = p->gnext;
    if (p->gnext)
        p->gnext->gprev = p->gprev;
    p->gnext = p->gprev = NULL;
    g->n--;
}

static void link_to_group(struct cgroup *g, struct cpod *p)
{
    p->grp = g;
    p->gprev = NULL;
    p->gnext = g->head;
    if (g->head)
        g->head->gprev = p;
    g->head = p;
    g->n++;
}

static void remove_pod(struct wh_store *s, struct cpod *p)
{
    struct cgroup *g = p->grp;
    wh_htab_remove(&s->pods, &p->h);
    unlink_from_group(p);
    wh_unintern(&s->strings, p->replica_label);
    free(p);
    put_group(s, g);
}

/* Insert or update one pod; caller holds the write lock. */
static enum wh_err upsert_pod(struct wh_store *s, const struct wh_pod_rec *r, uint32_t gen)
{
    struct cpod *p = find_pod(s, r->ns, r->name);
    const char *label = NULL;
    if (r->replica_label && !(label = wh_intern(&s->strings, r->replica_label)))
        return WH_ERR_NOMEM;
    if (p && (strcmp(p->grp->cluster, r->cluster) || strcmp(p->grp->group, r->group))) {
        /* Relabelled into another group: start over. */
        remove_pod(s, p);
        p = NULL;
    }
    if (!p) {
        struct cgroup *g = get_group(s, r->ns, r->cluster, r->group);
        size_t nl = strlen(r->name) + 1;
        if (!g || !wh_htab_grow(&s->pods) || !(p = calloc(1, sizeof(*p) + nl))) {
            wh_unintern(&s->strings, label);
            if (g)
                put_group(s, g);
            return WH_ERR_NOMEM;
        }
        memcpy(p->name, r->name, nl);
        p->h.hash = pod_hash(r->ns, r->name);
        wh_htab_insert(&s->pods, &p->h);
        link_to_group(g, p);
    } else {
        wh_unintern(&s->strings, p->replica_label);
    }
    p->replica_label = label;
    p->worker_id = r->worker_id;
    p->n_tpu = r->n_tpu_containers > 0xffff ? 0xffff : (unsigned short)r->n_tpu_containers;
    p->deleting = r->deleting;
    p->gen = gen;
    return WH_OK;
}

static void delete_pod(struct wh_store *s, const char *ns, const char *name)
{
    struct cpod *p = find_pod(s, ns, name);
    if (p)
        remove_pod(s, p);
}

static void sweep_pods(struct wh_store *s, uint32_t gen)
{
    for (size_t i = 0; i < s->pods.nb; i++) {
        struct wh_hnode *e = s->pods.b[i];
        while (e) {
            struct wh_hnode *next = e->next;
            struct cpod *p = (struct cpod *)e;
            if (p->gen != gen)
                remove_pod(s, p);
            e = next;
        }
    }
}

/* ---- nodes -------------------------------------------------------------- */

/* Frees what the entry owns but its byname (the store's). */
static void node_clear(struct node_entry *n)
{
    for (size_t i = 0; i < n->n; i++) {
        free(n->keys[i]);
        free(n->values[i]);
    }
    free(n->keys);
    free(n->values);
    free(n->name);
    memset(n, 0, sizeof(*n));
}

/* Build a node entry from a Node object (outside the lock). */
static enum wh_err node_from_json(const cJSON *node, struct node_entry *out)
{
    memset(out, 0, sizeof(*out));
    const cJSON *meta = wh_json_get(node, "metadata");
    const char *name = wh_json_str(meta, "name");
    const cJSON *labels = wh_json_get(meta, "labels");
    if (!name)
        return WH_ERR_INVALID;
    size_t n = 0;
    for (const cJSON *l = cJSON_IsObject(labels) ? labels->child : NULL; l; l = l->next)
        n += cJSON_IsString(l) && l->string;
    out->name = strdup(name);
    out->keys = calloc(n ? n : 1, sizeof(char *));
    out->values = calloc(n ? n : 1, sizeof(char *));
    if (!out->name || !out->keys || !out->values)
        goto oom;
    for (const cJSON *l = n ? labels->child : NULL; l; l = l->next) {
        if (!cJSON_IsString(l) || !l->string)
            continue;
        out->keys[out->n] = strdup(l->string);
        out->values[out->n] = strdup(l->valuestring);
        out->n++;
        if (!out->keys[out->n - 1] || !out->values[out->n - 1])
            goto oom;
    }
    return WH_OK;
oom:
    node_clear(out);
    return WH_ERR_NOMEM;
}

static long find_node(const struct wh_store *s, const char *name)
{
    if (!s->node_names.nb)
        return -1;
    uint32_t h = wh_hash_str(WH_HASH_INIT, name);
    for (struct wh_hnode *e = *wh_htab_slot(&s->node_names, h); e; e = e->next) {
        const struct node_name *nn = (const struct node_name *)e;
        if (e->hash == h && !strcmp(s->nodes[nn->slot].name, name))
            return (long)nn->slot;
    }
    return -1;
}

static struct wh_node_rec node_rec(const struct node_entry *n)
{
    return (struct wh_node_rec){
        .name = n->name,
        .n_labels = n->n,
        .keys = (const char *const *)n->keys,
        .values = (const char *const *)n->values,
    };
}

/* ne into slot i (free, below n_nodes or at it), its labels indexed. */
static enum wh_err place_node(struct wh_store *s, size_t i, struct node_entry *ne)
{
    struct wh_node_rec rec = node_rec(ne);
    if (i > UINT32_MAX || wh_nodeindex_add(s->by_label, (uint32_t)i, &rec))
        return WH_ERR_NOMEM;
    s->nodes[i] = *ne;
    s->nodes[i].byname->slot = i;
    return WH_OK;
}

/* Slot i emptied: the last node moves into it. */
static void close_gap(struct wh_store *s, size_t i)
{
    size_t last = --s->n_nodes;
    if (i == last)
        return;
    s->nodes[i] = s->nodes[last];
    s->nodes[i].byname->slot = i;
    wh_nodeindex_move(s->by_label, (uint32_t)last, (uint32_t)i);
}

static void delete_node_at(struct wh_store *s, size_t i)
{
    wh_nodeindex_remove(s->by_label, (uint32_t)i);
    wh_htab_remove(&s->node_names, &s->nodes[i].byname->h);
    free(s->nodes[i].byname);
    node_clear(&s->nodes[i]);
    close_gap(s, i);
    wh_slicerecs_bump(s->recs);
}

/* Takes ne's memory; caller holds the write lock. */
static enum wh_err upsert_node(struct wh_store *s, struct node_entry *ne, uint32_t gen)
{
    ne->gen = gen;
    wh_slicerecs_bump(s->recs);
    long i = find_node(s, ne->name);
    if (i >= 0) {
        ne->byname = s->nodes[i].byname;
        wh_nodeindex_remove(s->by_label, (uint32_t)i);
        s->nodes[i].byname = NULL;
        node_clear(&s->nodes[i]);
        if (place_node(s, (size_t)i, ne) == WH_OK)
            return WH_OK;
        /* Not indexed, so not kept: the slot is given up. */
        s->nodes[i] = (struct node_entry){.byname = ne->byname};
        ne->byname = NULL;
        delete_node_at(s, (size_t)i);
        node_clear(ne);
        return WH_ERR_NOMEM;
    }
    if (s->n_nodes == s->cap_nodes) {
        size_t cap = s->cap_nodes ? s->cap_nodes * 2 : 16;
        struct node_entry *nn = realloc(s->nodes, cap * sizeof(*nn));
        if (!nn) {
            node_clear(ne);
            return WH_ERR_NOMEM;
        }
        s->nodes = nn;
        s->cap_nodes = cap;
    }
    if (!wh_htab_grow(&s->node_names) || !(ne->byname = calloc(1, sizeof(*ne->byname)))) {
        node_clear(ne);
        return WH_ERR_NOMEM;
    }
    ne->byname->h.hash = wh_hash_str(WH_HASH_INIT, ne->name);
    if (place_node(s, s->n_nodes, ne)) {
        free(ne->byname);
        node_clear(ne);
        return WH_ERR_NOMEM;
    }
    wh_htab_insert(&s->node_names, &s->nodes[s->n_nodes].byname->h);
    s->n_nodes++;
    return WH_OK;
}

static void sweep_nodes(struct wh_store *s, uint32_t gen)
{
    for (size_t i = s->n_nodes; i-- > 0;)
        if (s->nodes[i].gen != gen)
            delete_node_at(s, i);
}

/* ---- the store ---------------------------------------------------------- */

struct wh_store *wh_store_new(void)
{
    struct wh_store *s = calloc(1, sizeof(*s));
    if (!s || !(s->recs = wh_slicerecs_new()) || !(s->by_label = wh_nodeindex_new())) {
        if (s)
            wh_slicerecs_free(s->recs);
        free(s);
        return NULL;
    }
    /* Writers first: a steady stream of admissions must not hold watch
     * events (and so confirmations) back; each write is short. */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    return s;
}

void wh_store_free(struct wh_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->pods.nb; i++) {
        struct wh_hnode *e = s->pods.b[i];
        while (e) {
            struct wh_hnode *next = e->next;
            remove_pod(s, (struct cpod *)e);
            e = next;
        }
    }
    wh_htab_free(&s->pods);
    wh_htab_free(&s->groups);
    wh_htab_free(&s->strings);
    for (size_t i = 0; i < s->n_nodes; i++) {
        free(s->nodes[i].byname);
        node_clear(&s->nodes[i]);
    }
    free(s->nodes);
    wh_htab_free(&s->node_names);
    wh_nodeindex_free(s->by_label);
    wh_slicerecs_free(s->recs);
    pthread_rwlock_destroy(&s->lock);
    free(s);
}

enum wh_err wh_store_apply_pod(struct wh_store *s, const cJSON *obj, bool deleted, uint32_t gen,
                               struct wh_pod_rec *pod)
{
    enum wh_err err = WH_OK;
    const char *name = wh_json_str(wh_json_get(obj, "metadata"), "name");
    if (!wh_pod_rec_from_json(obj, pod) || !name || !*name) {
        pod->name = NULL;
        return WH_OK;
    }
    pod->name = name; /* the key; generateName is never a pod's identity */
    pthread_rwlock_wrlock(&s->lock);
    if (deleted)
        delete_pod(s, pod->ns, pod->name);
    else
        err = upsert_pod(s, pod, gen);
    pthread_rwlock_unlock(&s->lock);
    /* After the pod itself, outside its lock (the records have their own). */
    if (!err)
        err = wh_slicerecs_apply(s->recs, obj, pod->ns, pod->name,
                                 !deleted && pod->n_tpu_containers, pod->deleting, gen);
    return err;
}

enum wh_err wh_store_apply_node(struct wh_store *s, const cJSON *obj, bool deleted, uint32_t gen)
{
    enum wh_err err = WH_OK;
    const char *name = wh_json_str(wh_json_get(obj, "metadata"), "name");
    if (!name)
        return WH_OK;
    bool tpu = wh_json_str(wh_json_path(obj, "metadata", "labels", NULL), WH_STORE_NODE_LABEL) !=
               NULL;
    struct node_entry ne = {0};
    if (!deleted && tpu && (err = node_from_json(obj, &ne)))
        return err == WH_ERR_INVALID ? WH_OK : err;
    pthread_rwlock_wrlock(&s->lock);
    if (deleted || !tpu) {
        long i = find_node(s, name);
        if (i >= 0)
            delete_node_at(s, (size_t)i);
    } else {
        err = upsert_node(s, &ne, gen);
    }
    pthread_rwlock_unlock(&s->lock);
    return err;
}

void wh_store_sweep_pods(struct wh_store *s, uint32_t gen)
{
    pthread_rwlock_wrlock(&s->lock);
    sweep_pods(s, gen);
    pthread_rwlock_unlock(&s->lock);
    wh_slicerecs_sweep(s->recs, gen);
}

void wh_store_sweep_nodes(struct wh_store *s, uint32_t gen)
{
    pthread_rwlock_wrlock(&s->lock);
    sweep_nodes(s, gen);
    pthread_rwlock_unlock(&s->lock);
}

int wh_store_each_group_pod(struct wh_store *s, const char *ns, const char *cluster,
                            const char *group, wh_pod_visit_fn fn, void *arg)
{
    int stopped = 0;
    pthread_rwlock_rdlock(&s->lock);
    struct cgroup *g = find_group(s, ns, cluster, group);
    for (struct cpod *p = g ? g->head : NULL; p && !stopped; p = p->gnext) {
        struct wh_pod_rec rec = {
            .name = p->name,
            .ns = g->ns,
            .cluster = g->cluster,
            .group = g->group,
            .replica_label = p->replica_label,
            .deleting = p->deleting,
            .n_tpu_containers = p->n_tpu,
            .worker_id = p->worker_id,
        };
        stopped = fn(arg, &rec);
    }
    pthread_rwlock_unlock(&s->lock);
    return stopped;
}

int wh_store_each_node(struct wh_store *s, wh_node_visit_fn fn, void *arg)
{
    int stopped = 0;
    pthread_rwlock_rdlock(&s->lock);
    for (size_t i = 0; i < s->n_nodes && !stopped; i++) {
        struct wh_node_rec rec = node_rec(&s->nodes[i]);
        stopped = fn(arg, &rec);
    }
    pthread_rwlock_unlock(&s->lock);
    return stopped;
}

int wh_store_each_node_with(struct wh_store *s, const char *const *pairs, size_t n_pairs,
                            wh_node_visit_fn fn, void *arg)
{
    int stopped = 0;
    size_t n;
    pthread_rwlock_rdlock(&s->lock);
    const uint32_t *ids = wh_nodeindex_candidates(s->by_label, pairs, n_pairs, &n);
    for (size_t i = 0; i < n && !stopped; i++) {
        struct wh_node_rec rec = node_rec(&s->nodes[ids[i]]);
        if (wh_node_has_labels(&rec, pairs, n_pairs))
            stopped = fn(arg, &rec);
    }
    pthread_rwlock_unlock(&s->lock);
    return stopped;
}

void wh_store_counts(struct wh_store *s, size_t *pods, size_t *nodes, size_t *interned)
{
    pthread_rwlock_rdlock(&s->lock);
    *pods = s->pods.n;
    *nodes = s->n_nodes;
    *interned = s->strings.n;
    pthread_rwlock_unlock(&s->lock);
}

unsigned long long wh_store_version(struct wh_store *s)
{
    return wh_slicerecs_version(s->recs);
}

static enum wh_err slice_nodes(const struct wh_store *s, cJSON *nodes)
{
    for (size_t i = 0; i < s->n_nodes; i++) {
        const struct node_entry *n = &s->nodes[i];
        /* Each wh_json_add/set takes its item, also when it fails. */
        cJSON *o = cJSON_CreateObject(), *meta, *l;
        if (!o || wh_json_add(nodes, o) || !(meta = cJSON_CreateObject()) ||
            wh_json_set_lit(o, "metadata", meta) || !(l = cJSON_CreateObject()) ||
            wh_json_set_lit(meta, "labels", l) || wh_json_set_str_lit(meta, "name", n->name))
            return WH_ERR_NOMEM;
        for (size_t k = 0; k < n->n; k++)
            if (wh_json_set_str(l, n->keys[k], n->values[k]))
                return WH_ERR_NOMEM;
    }
    return WH_OK;
}

enum wh_err wh_store_slice_lists(struct wh_store *s, cJSON **pods, cJSON **nodes,
                                 unsigned long long *version)
{
    *pods = cJSON_CreateArray();
    *nodes = cJSON_CreateArray();
    enum wh_err err = *pods && *nodes ? WH_OK : WH_ERR_NOMEM;
    /* The version first (with the pods, under the records' mutex), the nodes
     * after: a node change in between only makes the next check run. */
    if (!err)
        err = wh_slicerecs_pods(s->recs, *pods, version);
    if (!err) {
        pthread_rwlock_rdlock(&s->lock); /* the TPU nodes are few */
        err = slice_nodes(s, *nodes);
        pthread_rwlock_unlock(&s->lock);
    }
    if (err) {
        cJSON_Delete(*pods);
        cJSON_Delete(*nodes);
        *pods = *nodes = NULL;
    }
    return err;
}
