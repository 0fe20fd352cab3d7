/* affinity.c: slice affinity and subslice key discovery. */
#include "wh/affinity.h"

#include <stdint.h> /* uint32_t */
#include <stdlib.h> /* qsort */
#include <string.h> /* strncmp, strcmp, memcmp, memcpy, memset */

#include "wh/buf.h"     /* wh_buf_* */
#include "wh/hash.h"    /* WH_HASH_INIT */
#include "wh/json.h"    /* wh_json_* */
#include "wh/podspec.h" /* key names */
#include "wh/mem.h"     /* wh_malloc, wh_calloc, wh_realloc, wh_free */

#define REQUIRED "requiredDuringSchedulingIgnoredDuringExecution"

static const char gcp_prefix[] = "cloud.google.com/";

static bool is_gcp_key(const char *k)
{
    return k && !strncmp(k, gcp_prefix, sizeof(gcp_prefix) - 1);
}

const char *wh_affinity_topology_key(const cJSON *pod)
{
    const cJSON *terms = wh_json_path(pod, "spec", "affinity", "podAffinity", REQUIRED, NULL);
    for (const cJSON *t = cJSON_IsArray(terms) ? terms->child : NULL; t; t = t->next) {
        const char *k = wh_json_str(t, "topologyKey");
        if (is_gcp_key(k))
            return k;
    }
    const char *req = wh_meta_annotation(pod, WH_ANN_REQUIRED_TOPOLOGY);
    if (is_gcp_key(req))
        return req;
    return WH_KEY_NODEPOOL;
}

/* {key, operator, values?} */
static cJSON *expr(const char *key, const char *op, const char *value)
{
    cJSON *e = cJSON_CreateObject();
    if (!e)
        return NULL;
    enum wh_err err = wh_json_set_str(e, "key", key);
    if (!err)
        err = wh_json_set_str(e, "operator", op);
    if (!err && value) {
        const char *vals[1] = {value};
        err = wh_json_set(e, "values", cJSON_CreateStringArray(vals, 1));
    }
    if (err) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

/* {labelSelector:{matchExpressions:[e1,e2]}, topologyKey, namespaceSelector?}
 * Takes ownership of e1, e2 and ns_sel. */
static cJSON *term(cJSON *e1, cJSON *e2, const char *topology_key, cJSON *ns_sel)
{
    cJSON *t = cJSON_CreateObject(), *sel = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    enum wh_err err = t && sel && arr ? WH_OK : WH_ERR_NOMEM;
    if (!err) {
        err = wh_json_add(arr, e1);
        e1 = NULL;
    }
    if (!err) {
        err = wh_json_add(arr, e2);
        e2 = NULL;
    }
    if (!err) {
        err = wh_json_set(sel, "matchExpressions", arr);
        arr = NULL;
    }
    if (!err) {
        err = wh_json_set(t, "labelSelector", sel);
        sel = NULL;
    }
    if (!err)
        err = wh_json_set_str(t, "topologyKey", topology_key);
    if (!err && ns_sel) {
        err = wh_json_set(t, "namespaceSelector", ns_sel);
        ns_sel = NULL;
    }
    cJSON_Delete(e1);
    cJSON_Delete(e2);
    cJSON_Delete(arr);
    cJSON_Delete(sel);
    cJSON_Delete(ns_sel);
    if (err) {
        cJSON_Delete(t);
        return NULL;
    }
    return t;
}

static cJSON *ns_selector_not_kube_system(void)
{
    cJSON *s = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    cJSON *e = expr("kubernetes.io/metadata.name", "NotIn", "kube-system");
    if (s && arr && e && !wh_json_add(arr, e)) {
        e = NULL;
        if (!wh_json_set(s, "matchExpressions", arr))
            return s;
        arr = NULL;
    }
    cJSON_Delete(e);
    cJSON_Delete(arr);
    cJSON_Delete(s);
    return NULL;
}

static bool list_contains(const cJSON *list, const cJSON *item)
{
    for (const cJSON *t = cJSON_IsArray(list) ? list->child : NULL; t; t = t->next)
        if (cJSON_Compare(t, item, 1))
            return true;
    return false;
}

/* Get or create obj[key] as the given container type. */
static cJSON *ensure(cJSON *obj, const char *key, bool array)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (c && (array ? cJSON_IsArray(c) : cJSON_IsObject(c)))
        return c;
    if (c)
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    c = array ? cJSON_CreateArray() : cJSON_CreateObject();
    return wh_json_set(obj, key, c) ? NULL : c;
}

/* Append term (owned) to affinity.kind.required unless present; *added++. */
static enum wh_err append_term(cJSON *aff, const char *kind, cJSON *t, int *added)
{
    if (!t)
        return WH_ERR_NOMEM;
    cJSON *k = ensure(aff, kind, false);
    cJSON *req = k ? ensure(k, REQUIRED, true) : NULL;
    if (!req) {
        cJSON_Delete(t);
        return WH_ERR_NOMEM;
    }
    if (list_contains(req, t)) {
        cJSON_Delete(t);
        return WH_OK;
    }
    (*added)++;
    return wh_json_add(req, t);
}

enum wh_err wh_affinity_merge(const cJSON *affinity, const struct wh_affinity_terms *t, cJSON **out)
{
    *out = NULL;
    cJSON *aff = cJSON_IsObject(affinity) ? cJSON_Duplicate(affinity, 1) : cJSON_CreateObject();
    if (!aff)
        return WH_ERR_NOMEM;
    int added = 0;
    enum wh_err err = append_term(aff, "podAffinity",
                                  term(expr(t->sel_key, "In", t->sel_value),
                                       expr(WH_LABEL_CLUSTER, "In", t->cluster), t->topology_key,
                                       NULL),
                                  &added);
    if (!err)
        err = append_term(aff, "podAntiAffinity",
                          term(expr(t->sel_key, "NotIn", t->sel_value),
                               expr(WH_LABEL_CLUSTER, "In", t->cluster), t->topology_key, NULL),
                          &added);
    if (!err) {
        /* A NULL selector here means OOM, never "no selector". */
        cJSON *ns_sel = ns_selector_not_kube_system();
        err = ns_sel ? append_term(aff, "podAntiAffinity",
                                   term(expr(WH_LABEL_CLUSTER, "NotIn", t->cluster),
                                        expr(t->sel_key, "Exists", NULL), t->topology_key, ns_sel),
                                   &added)
                     : WH_ERR_NOMEM;
    }
    if (err || !added) {
        cJSON_Delete(aff);
        return err;
    }
    *out = aff;
    return WH_OK;
}

/* ---- the merge written as text ----------------------------------------- */

bool wh_affinity_is_fresh(const cJSON *affinity)
{
    return !cJSON_IsObject(affinity) ||
           (!wh_json_has(affinity, "podAffinity") && !wh_json_has(affinity, "podAntiAffinity"));
}

/* {"key":key,"operator":op[,"values":[value]]}, as expr() builds it. */
static enum wh_err write_expr(struct wh_buf *b, const char *key, const char *op, const char *value)
{
    enum wh_err err = wh_buf_add(b, "{\"key\":");
    if (!err)
        err = wh_json_write_string(b, key);
    if (!err)
        err = wh_buf_add(b, ",\"operator\":\"");
    if (!err)
        err = wh_buf_add(b, op); /* "In", "NotIn", "Exists" */
    if (!err && value) {
        err = wh_buf_add(b, "\",\"values\":[");
        if (!err)
            err = wh_json_write_string(b, value);
        if (!err)
            err = wh_buf_add(b, "]}");
    } else if (!err) {
        err = wh_buf_add(b, "\"}");
    }
    return err;
}

/* A term as wh_affinity_merge builds it: with op1 "In" podAffinity's, with
 * "NotIn" the first of podAntiAffinity; anti_cluster: the second (pods of
 * other clusters with the selector label, in any namespace but kube-system). */
static enum wh_err write_term(struct wh_buf *b, const struct wh_affinity_terms *t, const char *op1,
                              bool anti_cluster)
{
    enum wh_err err = wh_buf_add(b, "{\"labelSelector\":{\"matchExpressions\":[");
    if (!err && !anti_cluster)
        err = write_expr(b, t->sel_key, op1, t->sel_value);
    else if (!err)
        err = write_expr(b, WH_LABEL_CLUSTER, "NotIn", t->cluster);
    if (!err)
        err = wh_buf_addc(b, ',');
    if (!err && !anti_cluster)
        err = write_expr(b, WH_LABEL_CLUSTER, "In", t->cluster);
    else if (!err)
        err = write_expr(b, t->sel_key, "Exists", NULL);
    if (!err)
        err = wh_buf_add(b, "]},\"topologyKey\":");
    if (!err)
        err = wh_json_write_string(b, t->topology_key);
    if (!err && anti_cluster)
        err = wh_buf_add(b, ",\"namespaceSelector\":{\"matchExpressions\":[{\"key\":"
                            "\"kubernetes.io/metadata.name\",\"operator\":\"NotIn\","
                            "\"values\":[\"kube-system\"]}]}");
    return err ? err : wh_buf_addc(b, '}');
}

enum wh_err wh_affinity_write_fresh(struct wh_buf *b, const void *arg)
{
    const struct wh_affinity_fresh *f = arg;
    const struct wh_affinity_terms *t = f->terms;
    enum wh_err err = wh_buf_addc(b, '{');
    /* The user's members first, in their order (a copy of the object). */
    const cJSON *m = cJSON_IsObject(f->affinity) ? f->affinity->child : NULL;
    for (; m && !err; m = m->next) {
        err = wh_json_write_string(b, m->string ? m->string : "");
        if (!err)
            err = wh_buf_addc(b, ':');
        if (!err)
            err = wh_json_write(b, m);
        if (!err)
            err = wh_buf_addc(b, ',');
    }
    if (!err)
        err = wh_buf_add(b, "\"podAffinity\":{\"" REQUIRED "\":[");
    if (!err)
        err = write_term(b, t, "In", false);
    if (!err)
        err = wh_buf_add(b, "]},\"podAntiAffinity\":{\"" REQUIRED "\":[");
    if (!err)
        err = write_term(b, t, "NotIn", false);
    if (!err)
        err = wh_buf_addc(b, ',');
    if (!err)
        err = write_term(b, t, NULL, true);
    return err ? err : wh_buf_add(b, "]}}");
}

/* ---- subslice discovery ------------------------------------------------ */

static const char *const levels[] = {
    "cloud.google.com/gce-topology-host",
    "cloud.google.com/gce-topology-subblock",
    "cloud.google.com/gce-topology-block",
    WH_KEY_NODEPOOL,
};
_Static_assert(sizeof(levels) / sizeof(levels[0]) == WH_SUBSLICE_LEVELS, "one level each");

/* One walk over the nodes for one (selector, n_hosts): the matching
 * nodes' label values at each level, copied into the memo's pool while the
 * node is visited (the state lends a node's strings only for its visit). */
struct node_scan {
    const char *const *pairs; /* selector key, value, key, value, ... */
    size_t n_pairs;
    bool never; /* a selector value that is not a string matches no node */
    struct wh_subslice_memo *m;
    size_t n;
    bool oom;
};

static bool node_matches(const struct wh_node_rec *node, const struct node_scan *sc)
{
    return !sc->never && wh_node_has_labels(node, sc->pairs, sc->n_pairs);
}

/* Offsets into the pool; NO_VALUE for a missing or empty label. */
#define NO_VALUE ((size_t)-1)

static bool grow_scratch(struct wh_subslice_memo *m)
{
    size_t nc = m->cap ? m->cap * 2 : 64;
    for (size_t l = 0; l < WH_SUBSLICE_LEVELS; l++) {
        size_t *p = wh_realloc(m->at[l], nc * sizeof(size_t));
        if (!p)
            return false;
        m->at[l] = p;
    }
    m->cap = nc;
    return true;
}

static int scan_node(void *arg, const struct wh_node_rec *node)
{
    struct node_scan *sc = arg;
    struct wh_subslice_memo *m = sc->m;
    if (!node_matches(node, sc))
        return 0;
    if (sc->n == m->cap && !grow_scratch(m)) {
        sc->oom = true;
        return 1;
    }
    for (size_t l = 0; l < WH_SUBSLICE_LEVELS; l++) {
        const char *v = wh_node_label(node, levels[l]);
        m->at[l][sc->n] = NO_VALUE;
        if (v && *v) {
            m->at[l][sc->n] = wh_buf_len(&m->pool);
            if (wh_buf_addn(&m->pool, v, strlen(v) + 1)) {
                sc->oom = true;
                return 1;
            }
        }
    }
    sc->n++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    if (!x || !y)
        return !x - !y;
    return strcmp(x, y);
}

/* Does some non-empty value occur exactly n times? *any: any value at all.
 * vals (count pointers into the pool, NULL for none) is sorted here. */
static bool level_has_group_of(const char **vals, size_t count, long n, bool *any)
{
    if (count)
        qsort(vals, count, sizeof(char *), cmp_str);
    *any = false;
    for (size_t i = 0; i < count;) {
        size_t j = i;
        while (j < count && !cmp_str(&vals[i], &vals[j]))
            j++;
        if (vals[i]) {
            *any = true;
            if ((long)(j - i) == n)
                return true;
        }
        i = j;
    }
    return false;
}

static int cmp_pair(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The selector's pairs sorted by key (a JSON object may list them in any
 * order) into m->pairs, and the memo key "n_hosts\0k\0v\0..." into m->key. */
static enum wh_err selector_key(struct wh_subslice_memo *m, const cJSON *selector, long n_hosts,
                                struct node_scan *sc)
{
    size_t n = 0;
    for (const cJSON *s = cJSON_IsObject(selector) ? selector->child : NULL; s; s = s->next)
        n++;
    if (n > m->pairs_cap) {
        const char **p = wh_realloc(m->pairs, 2 * n * sizeof(char *));
        if (!p)
            return WH_ERR_NOMEM;
        m->pairs = p;
        m->pairs_cap = n;
    }
    sc->n_pairs = 0;
    for (const cJSON *s = cJSON_IsObject(selector) ? selector->child : NULL; s; s = s->next) {
        if (!cJSON_IsString(s) || !s->string) {
            sc->never = true;
            continue;
        }
        m->pairs[2 * sc->n_pairs] = s->string;
        m->pairs[2 * sc->n_pairs + 1] = s->valuestring;
        sc->n_pairs++;
    }
    if (sc->n_pairs)
        qsort(m->pairs, sc->n_pairs, 2 * sizeof(char *), cmp_pair);
    sc->pairs = m->pairs;
    wh_buf_reset(&m->key);
    enum wh_err err = wh_buf_addf(&m->key, "%ld%c%c", n_hosts, '\0', sc->never ? '!' : '=');
    for (size_t i = 0; !err && i < 2 * sc->n_pairs; i++)
        err = wh_buf_addn(&m->key, m->pairs[i], strlen(m->pairs[i]) + 1);
    return err;
}

static uint32_t key_hash(const struct wh_buf *k)
{
    uint32_t h = WH_HASH_INIT;
    const unsigned char *p = (const unsigned char *)wh_buf_ptr(k);
    for (size_t i = 0; i < wh_buf_len(k); i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* The slot of key (hash h) in the memo's table: its entry, or the empty
 * slot where it goes. */
static struct wh_subslice_memo_entry *slot(struct wh_subslice_memo *m, const struct wh_buf *k,
                                           uint32_t h)
{
    size_t mask = m->slots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct wh_subslice_memo_entry *e = &m->table[i];
        if (!e->key || (e->hash == h && e->key_len == wh_buf_len(k) &&
                        !memcmp(e->key, wh_buf_ptr(k), e->key_len)))
            return e;
    }
}

/* Room for one more entry (at most half the slots full). */
static enum wh_err table_room(struct wh_subslice_memo *m)
{
    if (2 * (m->used + 1) <= m->slots)
        return WH_OK;
    size_t ns = m->slots ? m->slots * 2 : 16;
    struct wh_subslice_memo_entry *old = m->table;
    size_t old_slots = m->slots;
    m->table = wh_calloc(ns, sizeof(*m->table));
    if (!m->table) {
        m->table = old;
        return WH_ERR_NOMEM;
    }
    m->slots = ns;
    for (size_t i = 0; i < old_slots; i++) {
        if (!old[i].key)
            continue;
        size_t mask = ns - 1, j = old[i].hash & mask;
        while (m->table[j].key)
            j = (j + 1) & mask;
        m->table[j] = old[i];
    }
    wh_free(old);
    return WH_OK;
}

/* The nodes the selector matches into the scan: looked up in the state's
 * index of nodes by label when it has one (the selector's rarest pair
 * gives the candidates), else a walk over every node. A selector with a
 * value that is not a string matches none. */
static enum wh_err walk_nodes(const struct wh_state *st, struct node_scan *sc, char *errbuf)
{
    if (sc->never)
        return WH_OK;
    if (st->ops->each_node_with && sc->n_pairs)
        return st->ops->each_node_with(st->impl, sc->pairs, sc->n_pairs, scan_node, sc, errbuf);
    return st->ops->each_node(st->impl, scan_node, sc, errbuf);
}

/* The answer for the scan's nodes, from the values copied into the pool. */
static enum wh_err answer(struct wh_subslice_memo *m, const struct node_scan *sc, long n_hosts,
                          struct wh_subslice_index *out)
{
    out->n_nodes = sc->n;
    out->key = NULL;
    out->pool_only = false;
    if (!sc->n)
        return WH_OK;
    const char **vals = wh_malloc(sc->n * sizeof(char *));
    if (!vals)
        return WH_ERR_NOMEM;
    bool any[WH_SUBSLICE_LEVELS] = {false};
    const char *pool = wh_buf_ptr(&m->pool);
    for (size_t l = 0; l < WH_SUBSLICE_LEVELS; l++) {
        for (size_t i = 0; i < sc->n; i++)
            vals[i] = m->at[l][i] == NO_VALUE ? NULL : pool + m->at[l][i];
        if (level_has_group_of(vals, sc->n, n_hosts, &any[l]) && !out->key)
            out->key = levels[l];
    }
    wh_free(vals);
    out->pool_only = any[3] && !any[0] && !any[1] && !any[2];
    return WH_OK;
}

enum wh_err wh_subslice_find_memo(struct wh_subslice_memo *m, const struct wh_state *st,
                                  const cJSON *node_selector, long n_hosts,
                                  struct wh_subslice_index *out, char *errbuf)
{
    memset(out, 0, sizeof(*out));
    struct node_scan sc = {.m = m};
    enum wh_err err = selector_key(m, node_selector, n_hosts, &sc);
    if (!err)
        err = table_room(m);
    if (err)
        return wh_fail(errbuf, err, "out of memory");
    uint32_t h = key_hash(&m->key);
    struct wh_subslice_memo_entry *e = slot(m, &m->key, h);
    if (e->key) {
        *out = e->index;
        return WH_OK;
    }
    /* The scratch of the last scan is reused: its memory goes back here,
     * not at the end of the request. */
    wh_buf_reset(&m->pool);
    err = walk_nodes(st, &sc, errbuf);
    if (!err && sc.oom)
        err = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    if (!err && answer(m, &sc, n_hosts, out))
        err = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    if (err)
        return err;
    char *key = wh_malloc(wh_buf_len(&m->key));
    if (!key)
        return WH_OK; /* not remembered: asked again, the answer is the same */
    memcpy(key, wh_buf_ptr(&m->key), wh_buf_len(&m->key));
    *e = (struct wh_subslice_memo_entry){.key = key,
                                         .key_len = wh_buf_len(&m->key),
                                         .hash = h,
                                         .index = *out};
    m->used++;
    return WH_OK;
}

void wh_subslice_memo_init(struct wh_subslice_memo *m)
{
    memset(m, 0, sizeof(*m));
    wh_buf_init(&m->pool, (size_t)64 * 1024 * 1024);
    wh_buf_init(&m->key, (size_t)1024 * 1024);
}

void wh_subslice_memo_free(struct wh_subslice_memo *m)
{
    for (size_t i = 0; i < m->slots; i++)
        wh_free(m->table[i].key);
    wh_free(m->table);
    for (size_t l = 0; l < WH_SUBSLICE_LEVELS; l++)
        wh_free(m->at[l]);
    wh_free(m->pairs);
    wh_buf_free(&m->pool);
    wh_buf_free(&m->key);
    memset(m, 0, sizeof(*m));
}

enum wh_err wh_subslice_find(const struct wh_state *st, const cJSON *node_selector, long n_hosts,
                             struct wh_subslice_index *out, char *errbuf)
{
    struct wh_subslice_memo m;
    wh_subslice_memo_init(&m);
    enum wh_err err = wh_subslice_find_memo(&m, st, node_selector, n_hosts, out, errbuf);
    wh_subslice_memo_free(&m);
    return err;
}
