/* strict.c: the walk of `check --strict` over one object (strict.h). */
#include "wh/strict.h"

#include <stdbool.h> /* bool */
#include <string.h>  /* strcmp, strlen, strchr */

#include "wh/buf.h"  /* struct wh_buf */
#include "wh/json.h" /* wh_json_str */
#include "wh/yaml.h" /* WH_YAML_MAX_BYTES */

/* A path is at most the keys of one branch of the input plus an index per
 * level: bounded by the input's size. */
#define PATH_MAX_BYTES (2 * WH_YAML_MAX_BYTES)

struct walk {
    wh_strict_sink sink;
    void *ctx;
    struct wh_buf path, msg;
    size_t found; /* unknown fields, reported or not */
};

/* The field of node named key, NULL when none: a binary search, the table
 * being sorted by strcmp. */
static const struct wh_strict_field *field_of(const struct wh_strict_node *n, const char *key)
{
    size_t lo = 0, hi = (size_t)n->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct wh_strict_field *f = &wh_strict_fields[n->first + (int)mid];
        int c = strcmp(key, f->name);
        if (!c)
            return f;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* Optimal string alignment distance (an adjacent swap costs 1), or a number
 * over limit as soon as it must be: each name is short, so this is bounded
 * work per candidate. */
static size_t distance(const char *a, const char *b, size_t limit)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > WH_STRICT_SUGGEST_MAX || lb > WH_STRICT_SUGGEST_MAX)
        return limit + 1;
    if ((la > lb ? la - lb : lb - la) > limit)
        return limit + 1;
    size_t rows[3][WH_STRICT_SUGGEST_MAX + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2]; /* rows i-2, i-1, i */
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        size_t best = cur[0];
        for (size_t j = 1; j <= lb; j++) {
            size_t v = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < v)
                v = prev[j] + 1;
            if (cur[j - 1] + 1 < v)
                v = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < v)
                v = prev2[j - 2] + 1;
            cur[j] = v;
            if (v < best)
                best = v;
        }
        if (best > limit)
            return limit + 1;
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

/* The nearest name among candidates (stride apart), NULL when none is near:
 * within a third of the key's length (at least 1, at most 3 edits). */
static const char *nearest(const char *key, const char *const *names, size_t n, size_t stride)
{
    size_t len = strlen(key);
    if (len > WH_STRICT_SUGGEST_MAX)
        return NULL;
    size_t limit = len / 3 < 1 ? 1 : len / 3 > 3 ? 3 : len / 3;
    const char *best = NULL;
    size_t best_d = limit + 1;
    for (size_t i = 0; i < n && best_d > 0; i++) {
        const char *name = *(const char *const *)((const char *)names + i * stride);
        size_t d = distance(key, name, best_d - 1);
        if (d < best_d) {
            best_d = d;
            best = name;
        }
    }
    return best;
}

static enum wh_err unknown_field(struct walk *w, const struct wh_strict_node *n, const char *key)
{
    if (w->found++ >= WH_STRICT_MAX_FINDINGS)
        return WH_OK; /* counted; said once at the end */
    const char *near = nearest(key, &wh_strict_fields[n->first].name, (size_t)n->n,
                               sizeof(struct wh_strict_field));
    wh_buf_reset(&w->msg);
    enum wh_err err = wh_buf_addf(&w->msg, "%s: unknown field", wh_buf_ptr(&w->path));
    if (!err && near)
        err = wh_buf_addf(&w->msg, "; did you mean %s?", near);
    return err ? err : w->sink(w->ctx, wh_buf_ptr(&w->path), wh_buf_ptr(&w->msg), near);
}

static enum wh_err walk_value(struct walk *w, const cJSON *v, int node);

/* Appends ".key" (or "key" at the top) or "[i]" to the path, walks, and
 * takes it off again. */
static enum wh_err walk_key(struct walk *w, const cJSON *v, int node, const char *key)
{
    size_t keep = wh_buf_len(&w->path);
    enum wh_err err = keep ? wh_buf_addc(&w->path, '.') : WH_OK;
    if (!err)
        err = wh_buf_add(&w->path, key);
    if (!err)
        err = walk_value(w, v, node);
    wh_buf_truncate(&w->path, keep);
    return err;
}

static enum wh_err walk_value(struct walk *w, const cJSON *v, int node)
{
    const struct wh_strict_node *n = &wh_strict_nodes[node];
    enum wh_err err = WH_OK;
    switch (n->kind) {
    case WH_SN_SCALAR:
    case WH_SN_OPEN: return WH_OK;
    case WH_SN_ARRAY: {
        if (!cJSON_IsArray(v))
            return WH_OK; /* a wrong type is the API server's to refuse, not an unknown field */
        size_t keep = wh_buf_len(&w->path), i = 0;
        for (const cJSON *x = v->child; !err && x; x = x->next, i++) {
            err = wh_buf_addf(&w->path, "[%zu]", i);
            if (!err)
                err = walk_value(w, x, n->child);
            wh_buf_truncate(&w->path, keep);
        }
        return err;
    }
    case WH_SN_MAP:
        if (!cJSON_IsObject(v) || wh_strict_nodes[n->child].kind == WH_SN_SCALAR ||
            wh_strict_nodes[n->child].kind == WH_SN_OPEN)
            return WH_OK; /* nothing to check in string values */
        for (const cJSON *x = v->child; !err && x; x = x->next)
            err = walk_key(w, x, n->child, x->string);
        return err;
    case WH_SN_OBJECT:
        if (!cJSON_IsObject(v))
            return WH_OK;
        for (const cJSON *x = v->child; !err && x; x = x->next) {
            const struct wh_strict_field *f = field_of(n, x->string);
            if (f)
                err = walk_key(w, x, f->node, x->string);
            else if (n->rest >= 0)
                err = walk_key(w, x, n->rest, x->string);
            else {
                size_t keep = wh_buf_len(&w->path);
                err = keep ? wh_buf_addc(&w->path, '.') : WH_OK;
                if (!err)
                    err = wh_buf_add(&w->path, x->string);
                if (!err)
                    err = unknown_field(w, n, x->string);
                wh_buf_truncate(&w->path, keep);
            }
        }
        return err;
    }
    return WH_OK;
}

/* The group of an apiVersion: "" for "v1", "ray.io" for "ray.io/v1". */
static size_t group_len(const char *api_version)
{
    const char *slash = strchr(api_version, '/');
    return slash ? (size_t)(slash - api_version) : 0;
}

static bool same_group(const char *a, const char *b)
{
    size_t la = group_len(a), lb = group_len(b);
    return la == lb && !strncmp(a, b, la);
}

/* An unknown kind or version in a known group: one finding that lists what
 * the group has. */
static enum wh_err unknown_kind(struct walk *w, const char *api_version, const char *kind,
                                bool version_known)
{
    size_t g = group_len(api_version);
    const char *group = g ? api_version : "core";
    int glen = g ? (int)g : 4;
    wh_buf_reset(&w->msg);
    const char *names[64];
    size_t n = 0;
    enum wh_err err;
    if (version_known) {
        err = wh_buf_addf(&w->msg, "kind %s: unknown kind in %s; known kinds:", kind, api_version);
        for (size_t i = 0; !err && i < wh_strict_n_kinds; i++) {
            if (strcmp(wh_strict_kinds[i].api_version, api_version))
                continue;
            err = wh_buf_addf(&w->msg, "%s %s", n ? "," : "", wh_strict_kinds[i].kind);
            if (n < sizeof(names) / sizeof(names[0]))
                names[n++] = wh_strict_kinds[i].kind;
        }
    } else {
        err = wh_buf_addf(&w->msg, "apiVersion %s: unknown version of %.*s; known:", api_version,
                          glen, group);
        const char *last = "";
        for (size_t i = 0; !err && i < wh_strict_n_kinds; i++) {
            const char *av = wh_strict_kinds[i].api_version;
            if (!same_group(av, api_version) || !strcmp(av, last))
                continue;
            err = wh_buf_addf(&w->msg, "%s %s", last[0] ? "," : "", av);
            last = av;
        }
    }
    const char *near = version_known ? nearest(kind, names, n, sizeof(names[0])) : NULL;
    if (!err && near)
        err = wh_buf_addf(&w->msg, "; did you mean %s?", near);
    return err ? err
               : w->sink(w->ctx, version_known ? "kind" : "apiVersion", wh_buf_ptr(&w->msg), near);
}

enum wh_err wh_strict_object(const cJSON *obj, wh_strict_sink sink, void *ctx,
                             enum wh_strict_verdict *verdict)
{
    enum wh_strict_verdict dummy;
    if (!verdict)
        verdict = &dummy;
    *verdict = WH_STRICT_OTHER_GROUP;
    const char *api_version = wh_json_str(obj, "apiVersion"), *kind = wh_json_str(obj, "kind");
    if (!api_version || !kind)
        return WH_OK;
    const struct wh_strict_kind *k = NULL;
    bool group_known = false, version_known = false;
    for (size_t i = 0; i < wh_strict_n_kinds && !k; i++) {
        const char *av = wh_strict_kinds[i].api_version;
        if (!same_group(av, api_version))
            continue;
        group_known = true;
        if (!strcmp(av, api_version)) {
            version_known = true;
            if (!strcmp(wh_strict_kinds[i].kind, kind))
                k = &wh_strict_kinds[i];
        }
    }
    if (!group_known)
        return WH_OK;
    struct walk w = {.sink = sink, .ctx = ctx};
    wh_buf_init(&w.path, PATH_MAX_BYTES);
    wh_buf_init(&w.msg, PATH_MAX_BYTES + 1024);
    enum wh_err err = WH_OK;
    if (!k) {
        *verdict = WH_STRICT_UNKNOWN;
        err = unknown_kind(&w, api_version, kind, version_known);
    } else if (k->root < 0) {
        *verdict = WH_STRICT_KNOWN;
    } else {
        *verdict = WH_STRICT_CHECKED;
        err = walk_value(&w, obj, k->root);
        if (!err && w.found > WH_STRICT_MAX_FINDINGS) {
            wh_buf_reset(&w.msg);
            err = wh_buf_addf(&w.msg, "and %zu more unknown field(s)",
                              w.found - WH_STRICT_MAX_FINDINGS);
            if (!err)
                err = sink(ctx, "", wh_buf_ptr(&w.msg), NULL);
        }
    }
    wh_buf_free(&w.path);
    wh_buf_free(&w.msg);
    return err;
}
