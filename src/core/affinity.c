/* affinity.c: slice affinity and subslice key discovery. */
#include "wh/affinity.h"

#include <stdlib.h> /* qsort */
#include <string.h> /* strncmp, strcmp */

#include "wh/buf.h"     /* wh_buf_* */
#include "wh/json.h"    /* wh_json_* */
#include "wh/podspec.h" /* key names */
#include "wh/mem.h"     /* wh_free */

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
#define N_LEVELS (sizeof(levels) / sizeof(levels[0]))

struct node_scan {
    const cJSON *selector;
    const char **values[N_LEVELS]; /* borrowed label values of matching nodes */
    size_t n, cap;
    bool oom;
};

static bool node_matches(const struct wh_node_rec *node, const cJSON *selector)
{
    for (const cJSON *s = cJSON_IsObject(selector) ? selector->child : NULL; s; s = s->next) {
        if (!cJSON_IsString(s))
            return false;
        const char *v = wh_node_label(node, s->string);
        if (!v || strcmp(v, s->valuestring))
            return false;
    }
    return true;
}

static int scan_node(void *arg, const struct wh_node_rec *node)
{
    struct node_scan *sc = arg;
    if (!node_matches(node, sc->selector))
        return 0;
    if (sc->n == sc->cap) {
        size_t nc = sc->cap ? sc->cap * 2 : 64;
        for (size_t l = 0; l < N_LEVELS; l++) {
            const char **p = wh_realloc(sc->values[l], nc * sizeof(char *));
            if (!p) {
                sc->oom = true;
                return 1;
            }
            sc->values[l] = p;
        }
        sc->cap = nc;
    }
    for (size_t l = 0; l < N_LEVELS; l++) {
        const char *v = wh_node_label(node, levels[l]);
        sc->values[l][sc->n] = v && *v ? v : NULL;
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

/* Does some non-empty value occur exactly n times? *any: any value at all. */
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

enum wh_err wh_subslice_find(const struct wh_state *st, const cJSON *node_selector, long n_hosts,
                             struct wh_subslice_index *out, char *errbuf)
{
    struct node_scan sc = {.selector = node_selector};
    out->n_nodes = 0;
    out->pool_only = false;
    out->key = NULL;
    enum wh_err err = st->ops->each_node(st->impl, scan_node, &sc, errbuf);
    if (!err && sc.oom)
        err = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    if (!err) {
        out->n_nodes = sc.n;
        bool any[N_LEVELS] = {false};
        for (size_t l = 0; l < N_LEVELS && sc.n; l++) {
            if (level_has_group_of(sc.values[l], sc.n, n_hosts, &any[l]) && !out->key)
                out->key = levels[l];
        }
        out->pool_only = any[3] && !any[0] && !any[1] && !any[2];
    }
    for (size_t l = 0; l < N_LEVELS; l++)
        wh_free(sc.values[l]);
    return err;
}
