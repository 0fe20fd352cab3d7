/* yaml.c: YAML (or JSON) text to cJSON with Kubernetes (sigs.k8s.io/yaml)
 * semantics; plain scalars are typed by yaml_scalar.c, and yaml_emit.c writes
 * YAML back.
 *
 * Loading is event-driven: libyaml's events build cJSON directly on a stack
 * of open collections. Anchored nodes are copied into an anchor table so that
 * later edits of the tree (merges) never change what an alias expands to;
 * every node created, copies included, counts against WH_YAML_MAX_NODES
 * BEFORE it is allocated, which is what stops alias bombs. */
#include "wh/yaml.h"

#include <math.h> /* isfinite, floor, fabs */
#include <stdbool.h>
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, free, qsort, bsearch */
#include <string.h> /* memcmp, strcmp, strlen */

#include <yaml.h> /* yaml_parser_*, yaml_event_* */

#include "wh/json.h"        /* wh_json_parse, wh_json_add */
#include "wh/utf8.h"        /* wh_utf8_char_len */
#include "wh/yaml_scalar.h" /* wh_yaml_resolve_plain, wh_yaml_shortest_double */

struct keymark {
    const char *key; /* borrowed from the item in the mapping */
    unsigned line, col;
};

struct frame {
    cJSON *node; /* the array or object being built */
    bool is_map;
    char *anchor; /* malloc'd, or NULL */
    long size;    /* nodes in this subtree so far, this one included */
    int height;   /* 1 + tallest child */
    unsigned line, col;
    /* mappings only */
    bool have_key;
    bool key_is_merge;
    char *key;
    unsigned key_line, key_col;
    struct keymark *keys;
    size_t n_keys, cap_keys;
    cJSON *merges; /* array of merge sources (objects), or NULL */
};

struct anchor {
    char *name;
    cJSON *node; /* private copy */
    long size;
    int height;
};

struct loader {
    yaml_parser_t parser;
    bool parser_ready;
    struct frame stack[WH_YAML_MAX_DEPTH];
    size_t depth;
    struct anchor *anchors;
    size_t n_anchors, cap_anchors;
    long nodes;
    cJSON *docs;
    cJSON *root; /* the current document's value */
    unsigned doc_line;
    unsigned *lines;
    size_t n_lines, cap_lines;
    char *errbuf;
    struct wh_yaml_pos *where; /* NULL, or where the error is */
};

/* Record where the error is, for wh_yaml_load_at's caller. */
static void locate(struct loader *L, size_t line, size_t col)
{
    if (L->where)
        *L->where = (struct wh_yaml_pos){(unsigned)line, (unsigned)col};
}

/* Room for one more element in a growing array of n elements: arr itself
 * or a bigger copy (*cap updated), NULL when out of memory (arr is then
 * still valid and still the caller's). */
static void *grow(void *arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return arr;
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(arr, c * size);
    if (p)
        *cap = c;
    return p;
}

static enum wh_err at(struct loader *L, unsigned line, unsigned col, enum wh_err err,
                      const char *what)
{
    locate(L, line, col);
    return wh_fail(L->errbuf, err, "line %u, column %u: %s", line, col, what);
}

static enum wh_err count_nodes(struct loader *L, long n, unsigned line, unsigned col)
{
    if (n > WH_YAML_MAX_NODES - L->nodes) {
        locate(L, line, col);
        return wh_fail(L->errbuf, WH_ERR_TOOBIG,
                       "line %u, column %u: the input expands to more than %ld nodes "
                       "(alias bomb or oversized input); split it or drop the aliases",
                       line, col, WH_YAML_MAX_NODES);
    }
    L->nodes += n;
    return WH_OK;
}

static void frame_clear(struct frame *f)
{
    cJSON_Delete(f->node);
    free(f->anchor);
    free(f->key);
    free(f->keys);
    cJSON_Delete(f->merges);
    memset(f, 0, sizeof(*f));
}

static enum wh_err add_anchor(struct loader *L, const char *name, const cJSON *node, long size,
                              int height, unsigned line, unsigned col)
{
    enum wh_err err = count_nodes(L, size, line, col);
    if (err)
        return err;
    struct anchor *grown = grow(L->anchors, &L->cap_anchors, L->n_anchors, sizeof(*grown));
    if (!grown)
        return WH_ERR_NOMEM;
    L->anchors = grown;
    struct anchor *a = &L->anchors[L->n_anchors];
    a->name = strdup(name);
    a->node = cJSON_Duplicate(node, 1);
    if (!a->name || !a->node) {
        free(a->name);
        cJSON_Delete(a->node);
        return WH_ERR_NOMEM;
    }
    a->size = size;
    a->height = height;
    L->n_anchors++;
    return WH_OK;
}

/* Mapping keys become strings the way sigs.k8s.io/yaml converts them. */
static enum wh_err key_text(struct loader *L, const cJSON *v, unsigned line, unsigned col,
                            char **out)
{
    char tmp[64];
    const char *s = NULL;
    if (cJSON_IsString(v)) {
        s = v->valuestring;
    } else if (cJSON_IsBool(v)) {
        s = cJSON_IsTrue(v) ? "true" : "false";
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 1e19)
            snprintf(tmp, sizeof(tmp), "%.0f", d);
        else
            wh_yaml_shortest_double(d, tmp);
        s = tmp;
    } else if (cJSON_IsNull(v)) {
        return at(L, line, col, WH_ERR_INVALID,
                  "a mapping key is null; quote it if it is meant as text");
    } else {
        return at(L, line, col, WH_ERR_INVALID,
                  "a mapping key is a list or a mapping; JSON keys must be strings");
    }
    *out = strdup(s);
    return *out ? WH_OK : WH_ERR_NOMEM;
}

static enum wh_err add_keymark(struct frame *f, const char *key, unsigned line, unsigned col)
{
    struct keymark *grown = grow(f->keys, &f->cap_keys, f->n_keys, sizeof(*grown));
    if (!grown)
        return WH_ERR_NOMEM;
    f->keys = grown;
    f->keys[f->n_keys++] = (struct keymark){key, line, col};
    return WH_OK;
}

/* Put a finished value v (owned) into the open collection or the document. */
static enum wh_err attach(struct loader *L, cJSON *v, long size, int height, bool merge_key,
                          unsigned line, unsigned col)
{
    enum wh_err err = WH_OK;
    if (L->depth == 0) {
        L->root = v;
        return WH_OK;
    }
    struct frame *f = &L->stack[L->depth - 1];
    f->size += size;
    if (height + 1 > f->height)
        f->height = height + 1;
    if (!f->is_map)
        return wh_json_add(f->node, v);
    if (!f->have_key) {
        f->key_is_merge = merge_key;
        err = key_text(L, v, line, col, &f->key);
        cJSON_Delete(v);
        if (err)
            return err;
        f->have_key = true;
        f->key_line = line;
        f->key_col = col;
        return WH_OK;
    }
    f->have_key = false;
    if (f->key_is_merge) {
        free(f->key);
        f->key = NULL;
        bool ok = cJSON_IsObject(v);
        for (const cJSON *c = cJSON_IsArray(v) ? v->child : NULL; c; c = c->next)
            ok = cJSON_IsObject(c) && (ok || c == v->child);
        if (cJSON_IsArray(v) && !v->child)
            ok = false;
        if (!ok) {
            cJSON_Delete(v);
            return at(L, line, col, WH_ERR_INVALID,
                      "a merge key (<<) needs a mapping or a list of mappings");
        }
        if (!f->merges && !(f->merges = cJSON_CreateArray())) {
            cJSON_Delete(v);
            return WH_ERR_NOMEM;
        }
        return wh_json_add(f->merges, v);
    }
    char *key = f->key;
    f->key = NULL;
    if (!cJSON_AddItemToObject(f->node, key, v)) {
        free(key);
        cJSON_Delete(v);
        return WH_ERR_NOMEM;
    }
    free(key);
    /* The item's own copy of the key outlives this call. */
    cJSON *last = f->node->child ? f->node->child->prev : NULL;
    return add_keymark(f, last ? last->string : "", f->key_line, f->key_col);
}

static int cmp_keymark(const void *a, const void *b)
{
    const struct keymark *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->line != y->line ? (x->line < y->line ? -1 : 1) : (x->col < y->col ? -1 : 1);
}

static int cmp_keystr(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const struct keymark *)elem)->key);
}

/* A key offered by a merge source, with its place among all sources. */
struct offer {
    cJSON *parent, *item; /* item is still a child of parent */
    size_t ord;
    bool take;
};

static int cmp_offer_key(const void *a, const void *b)
{
    const struct offer *x = a, *y = b;
    int c = strcmp(x->item->string, y->item->string);
    return c ? c : (x->ord < y->ord ? -1 : x->ord > y->ord);
}

static int cmp_offer_ord(const void *a, const void *b)
{
    const struct offer *x = a, *y = b;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* Apply the pending merges of a finished mapping: keys it already has win,
 * then earlier sources beat later ones (YAML merge-key spec). All offers are
 * sorted once (by key, then source order), so a mapping with many keys and
 * many merge sources costs n log n, not n * m. Merged keys are appended in
 * source order. f->keys must be sorted. */
static enum wh_err apply_merges(struct frame *f)
{
    size_t n = 0;
    for (cJSON *src = f->merges ? f->merges->child : NULL; src; src = src->next)
        for (cJSON *m = cJSON_IsArray(src) ? src->child : src; m;
             m = cJSON_IsArray(src) ? m->next : NULL)
            for (cJSON *c = m->child; c; c = c->next)
                n++;
    if (n == 0)
        return WH_OK;
    struct offer *o = malloc(n * sizeof(*o));
    if (!o)
        return WH_ERR_NOMEM;
    size_t k = 0;
    for (cJSON *src = f->merges->child; src; src = src->next)
        for (cJSON *m = cJSON_IsArray(src) ? src->child : src; m;
             m = cJSON_IsArray(src) ? m->next : NULL)
            for (cJSON *c = m->child; c; c = c->next, k++)
                o[k] = (struct offer){m, c, k, false};
    qsort(o, n, sizeof(*o), cmp_offer_key);
    for (size_t i = 0; i < n; i++) {
        bool first = i == 0 || strcmp(o[i].item->string, o[i - 1].item->string);
        o[i].take = first && !(f->n_keys && bsearch(o[i].item->string, f->keys, f->n_keys,
                                                    sizeof(*f->keys), cmp_keystr));
    }
    qsort(o, n, sizeof(*o), cmp_offer_ord);
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < n && !err; i++) {
        if (!o[i].take)
            continue;
        /* The rest of the source is freed with f->merges. */
        cJSON *c = cJSON_DetachItemViaPointer(o[i].parent, o[i].item);
        if (!cJSON_AddItemToObject(f->node, c->string, c)) {
            cJSON_Delete(c);
            err = WH_ERR_NOMEM;
        }
    }
    free(o);
    return err;
}

static enum wh_err finish_mapping(struct loader *L, struct frame *f)
{
    if (f->n_keys > 1)
        qsort(f->keys, f->n_keys, sizeof(*f->keys), cmp_keymark);
    for (size_t i = 1; i < f->n_keys; i++) {
        if (!strcmp(f->keys[i].key, f->keys[i - 1].key)) {
            char msg[WH_ERRBUF_LEN];
            snprintf(msg, sizeof(msg),
                     "duplicate key \"%.200s\" in one mapping (first at line %u); "
                     "Kubernetes would silently keep only one, remove the other",
                     f->keys[i].key, f->keys[i - 1].line);
            return at(L, f->keys[i].line, f->keys[i].col, WH_ERR_INVALID, msg);
        }
    }
    return apply_merges(f);
}

static enum wh_err start_collection(struct loader *L, bool is_map, const char *anchor,
                                    unsigned line, unsigned col)
{
    if (L->depth >= WH_YAML_MAX_DEPTH) {
        char msg[128];
        snprintf(msg, sizeof(msg), "nesting deeper than %d levels", WH_YAML_MAX_DEPTH);
        return at(L, line, col, WH_ERR_TOOBIG, msg);
    }
    enum wh_err err = count_nodes(L, 1, line, col);
    if (err)
        return err;
    struct frame *f = &L->stack[L->depth];
    memset(f, 0, sizeof(*f));
    f->node = is_map ? cJSON_CreateObject() : cJSON_CreateArray();
    f->anchor = anchor ? strdup(anchor) : NULL;
    if (!f->node || (anchor && !f->anchor)) {
        frame_clear(f);
        return WH_ERR_NOMEM;
    }
    f->is_map = is_map;
    f->size = 1;
    f->height = 1;
    f->line = line;
    f->col = col;
    L->depth++;
    return WH_OK;
}

static enum wh_err end_collection(struct loader *L)
{
    struct frame *f = &L->stack[L->depth - 1];
    enum wh_err err = f->is_map ? finish_mapping(L, f) : WH_OK;
    if (!err && f->anchor)
        err = add_anchor(L, f->anchor, f->node, f->size, f->height, f->line, f->col);
    if (err) {
        frame_clear(f);
        L->depth--;
        return err;
    }
    cJSON *node = f->node;
    f->node = NULL;
    long size = f->size;
    int height = f->height;
    unsigned line = f->line, col = f->col;
    frame_clear(f);
    L->depth--;
    return attach(L, node, size, height, false, line, col);
}

static bool is_tag(const yaml_char_t *tag, const char *name)
{
    static const char prefix[] = "tag:yaml.org,2002:";
    const char *t = (const char *)tag;
    return t && !strncmp(t, prefix, sizeof(prefix) - 1) && !strcmp(t + sizeof(prefix) - 1, name);
}

static enum wh_err scalar(struct loader *L, const yaml_event_t *ev, unsigned line, unsigned col)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const yaml_char_t *tag = ev->data.scalar.tag;
    if (strlen(s) != n)
        return at(L, line, col, WH_ERR_INVALID, "a string contains a NUL character");
    enum wh_err err = count_nodes(L, 1, line, col);
    if (err)
        return err;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    bool as_str = !plain || is_tag(tag, "str") || is_tag(tag, "binary") ||
                  is_tag(tag, "timestamp") || (tag && !strcmp((const char *)tag, "!"));
    double num = 0;
    bool b = false;
    enum wh_yaml_sval kind = as_str ? WH_YAML_STR : wh_yaml_resolve_plain(s, n, &num, &b);
    if (kind == WH_YAML_NONFINITE)
        return at(L, line, col, WH_ERR_INVALID,
                  "infinity/NaN cannot be represented in JSON; quote it if it is text");
    if (tag && !as_str) {
        static const char *const typed[] = {"int", "float", "bool", "null"};
        static const enum wh_yaml_sval want[] = {WH_YAML_NUM, WH_YAML_NUM, WH_YAML_BOOL,
                                                 WH_YAML_NULL};
        for (size_t i = 0; i < 4; i++) {
            if (is_tag(tag, typed[i]) && kind != want[i]) {
                char msg[WH_ERRBUF_LEN];
                snprintf(msg, sizeof(msg), "\"%.100s\" is not a valid !!%s", s, typed[i]);
                return at(L, line, col, WH_ERR_INVALID, msg);
            }
        }
    }
    cJSON *v = kind == WH_YAML_NULL   ? cJSON_CreateNull()
               : kind == WH_YAML_BOOL ? cJSON_CreateBool(b)
               : kind == WH_YAML_NUM  ? cJSON_CreateNumber(num)
                                      : cJSON_CreateString(s);
    if (!v)
        return WH_ERR_NOMEM;
    const char *anchor = (const char *)ev->data.scalar.anchor;
    if (anchor && (err = add_anchor(L, anchor, v, 1, 0, line, col))) {
        cJSON_Delete(v);
        return err;
    }
    bool merge = plain && !tag && !strcmp(s, "<<");
    return attach(L, v, 1, 0, merge, line, col);
}

static enum wh_err alias(struct loader *L, const yaml_event_t *ev, unsigned line, unsigned col)
{
    const char *name = (const char *)ev->data.alias.anchor;
    const struct anchor *a = NULL;
    for (size_t i = L->n_anchors; i-- > 0;) {
        if (!strcmp(L->anchors[i].name, name)) {
            a = &L->anchors[i];
            break;
        }
    }
    char msg[WH_ERRBUF_LEN];
    if (!a) {
        snprintf(msg, sizeof(msg), "alias *%.100s names no anchor defined before it", name);
        return at(L, line, col, WH_ERR_INVALID, msg);
    }
    if (L->depth + (size_t)a->height > WH_YAML_MAX_DEPTH) {
        snprintf(msg, sizeof(msg), "alias *%.100s nests deeper than %d levels", name,
                 WH_YAML_MAX_DEPTH);
        return at(L, line, col, WH_ERR_TOOBIG, msg);
    }
    enum wh_err err = count_nodes(L, a->size, line, col);
    if (err)
        return err;
    cJSON *v = cJSON_Duplicate(a->node, 1);
    if (!v)
        return WH_ERR_NOMEM;
    return attach(L, v, a->size, a->height, false, line, col);
}

static enum wh_err end_document(struct loader *L)
{
    cJSON *doc = L->root;
    L->root = NULL;
    if (!doc || cJSON_IsNull(doc)) {
        cJSON_Delete(doc);
        return WH_OK;
    }
    enum wh_err err = wh_json_add(L->docs, doc);
    if (err)
        return err;
    unsigned *grown = grow(L->lines, &L->cap_lines, L->n_lines, sizeof(*grown));
    if (!grown)
        return WH_ERR_NOMEM;
    L->lines = grown;
    L->lines[L->n_lines++] = L->doc_line;
    return WH_OK;
}

static enum wh_err syntax_error(struct loader *L)
{
    const yaml_parser_t *p = &L->parser;
    if (p->error == YAML_MEMORY_ERROR)
        return wh_fail(L->errbuf, WH_ERR_NOMEM, "out of memory while parsing YAML");
    const char *problem = p->problem ? p->problem : "syntax error";
    locate(L, p->problem_mark.line + 1, p->problem_mark.column + 1);
    if (p->context) {
        return wh_fail(L->errbuf, WH_ERR_INVALID,
                       "line %zu, column %zu: %s (%s at line %zu, column %zu)",
                       p->problem_mark.line + 1, p->problem_mark.column + 1, problem, p->context,
                       p->context_mark.line + 1, p->context_mark.column + 1);
    }
    return wh_fail(L->errbuf, WH_ERR_INVALID, "line %zu, column %zu: %s", p->problem_mark.line + 1,
                   p->problem_mark.column + 1, problem);
}

static enum wh_err handle_event(struct loader *L, const yaml_event_t *ev, bool *done)
{
    unsigned line = (unsigned)ev->start_mark.line + 1, col = (unsigned)ev->start_mark.column + 1;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT: L->doc_line = line; return WH_OK;
    case YAML_DOCUMENT_END_EVENT: return end_document(L);
    case YAML_SCALAR_EVENT: return scalar(L, ev, line, col);
    case YAML_ALIAS_EVENT: return alias(L, ev, line, col);
    case YAML_SEQUENCE_START_EVENT:
        return start_collection(L, false, (const char *)ev->data.sequence_start.anchor, line, col);
    case YAML_MAPPING_START_EVENT:
        return start_collection(L, true, (const char *)ev->data.mapping_start.anchor, line, col);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: return end_collection(L);
    case YAML_STREAM_END_EVENT: *done = true; return WH_OK;
    default: return WH_OK;
    }
}

static void loader_free(struct loader *L)
{
    while (L->depth > 0)
        frame_clear(&L->stack[--L->depth]);
    for (size_t i = 0; i < L->n_anchors; i++) {
        free(L->anchors[i].name);
        cJSON_Delete(L->anchors[i].node);
    }
    free(L->anchors);
    cJSON_Delete(L->root);
    if (L->parser_ready)
        yaml_parser_delete(&L->parser);
}

static enum wh_err load_yaml(const char *text, size_t len, struct loader *L)
{
    if (!yaml_parser_initialize(&L->parser))
        return WH_ERR_NOMEM;
    L->parser_ready = true;
    yaml_parser_set_input_string(&L->parser, (const unsigned char *)text, len);
    enum wh_err err = WH_OK;
    bool done = false;
    while (!err && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&L->parser, &ev))
            return syntax_error(L);
        err = handle_event(L, &ev, &done);
        yaml_event_delete(&ev);
    }
    return err;
}

/* Depth of a cJSON tree, stopping once past limit. */
static int json_depth(const cJSON *j, int limit)
{
    int best = 0;
    for (const cJSON *c = j->child; c && best <= limit; c = c->next) {
        int d = json_depth(c, limit - 1);
        if (d > best)
            best = d;
    }
    return (cJSON_IsArray(j) || cJSON_IsObject(j)) ? best + 1 : 0;
}

/* Well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF), as
 * libyaml's reader demands; cJSON would pass any bytes through. */
static bool utf8_ok(const unsigned char *p, size_t n)
{
    for (size_t i = 0, len; i < n; i += len)
        if (!(len = wh_utf8_char_len((const char *)p + i, n - i)))
            return false;
    return true;
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* True when cJSON's reading of j (depth already bounded) differs from
 * kubectl's, so that the YAML path must decide (it refuses or converts with a
 * location), or when memory runs out:
 *   - an object repeats a key: cJSON keeps both, our getters read the first
 *     where Kubernetes keeps the last;
 *   - a number overflows (1e400): cJSON makes it infinity, printed as null;
 *     go-yaml, and so the YAML path, keeps the text as a string. */
static bool json_needs_yaml(const cJSON *j)
{
    if (cJSON_IsNumber(j))
        return !isfinite(j->valuedouble);
    if (cJSON_IsObject(j) && j->child && j->child->next) {
        size_t n = 0, k = 0;
        for (const cJSON *c = j->child; c; c = c->next)
            n++;
        const char **keys = malloc(n * sizeof(*keys));
        if (!keys)
            return true;
        for (const cJSON *c = j->child; c; c = c->next)
            keys[k++] = c->string;
        qsort(keys, n, sizeof(*keys), cmp_strp);
        bool dup = false;
        for (size_t i = 1; i < n && !dup; i++)
            dup = !strcmp(keys[i], keys[i - 1]);
        free(keys);
        if (dup)
            return true;
    }
    for (const cJSON *c = j->child; c; c = c->next)
        if (json_needs_yaml(c))
            return true;
    return false;
}

/* The fast path: one JSON value. Returns false (and no error) when the text
 * is not plain JSON, so the YAML parser can say where it is wrong. */
static bool try_json(const char *text, size_t len, struct loader *L)
{
    size_t i = 0;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        i = 3;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (i >= len || (text[i] != '{' && text[i] != '['))
        return false;
    /* Bound the tree before cJSON allocates it: every node but the first
     * follows a ',' or opens a collection. */
    long tokens = 0;
    bool in_str = false;
    for (size_t k = i; k < len; k++) {
        char c = text[k];
        if (in_str) {
            /* cJSON ends a string at an escaped NUL and silently drops the
             * rest; the YAML path refuses it with a location. */
            if (c == '\\' && k + 5 < len && !memcmp(text + k + 1, "u0000", 5))
                return false;
            if (c == '\\')
                k++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == ',' || c == '[' || c == '{') {
            if (++tokens > WH_YAML_MAX_NODES)
                return false; /* the YAML path reports it with a location */
        }
    }
    if (!utf8_ok((const unsigned char *)text + i, len - i))
        return false; /* the YAML path names the bad byte's place */
    char ignored[WH_ERRBUF_LEN];
    cJSON *j = NULL;
    if (wh_json_parse(text + i, len - i, &j, ignored))
        return false;
    if (json_depth(j, WH_YAML_MAX_DEPTH) > WH_YAML_MAX_DEPTH || json_needs_yaml(j)) {
        cJSON_Delete(j);
        return false; /* let the YAML path report it with a location */
    }
    L->root = j;
    L->doc_line = 1;
    return true;
}

enum wh_err wh_yaml_load(const char *text, size_t len, cJSON **docs, unsigned **lines, char *errbuf)
{
    return wh_yaml_load_at(text, len, docs, lines, NULL, errbuf);
}

enum wh_err wh_yaml_load_at(const char *text, size_t len, cJSON **docs, unsigned **lines,
                            struct wh_yaml_pos *where, char *errbuf)
{
    *docs = NULL;
    if (where)
        *where = (struct wh_yaml_pos){0, 0};
    if (lines)
        *lines = NULL;
    if (len > WH_YAML_MAX_BYTES)
        return wh_fail(errbuf, WH_ERR_TOOBIG, "input is %zu bytes, over the %zu-byte limit", len,
                       WH_YAML_MAX_BYTES);
    struct loader *L = calloc(1, sizeof(*L));
    if (!L)
        return WH_ERR_NOMEM;
    L->errbuf = errbuf;
    L->where = where;
    enum wh_err err = WH_OK;
    if (!(L->docs = cJSON_CreateArray())) {
        err = WH_ERR_NOMEM;
        goto out;
    }
    if (try_json(text, len, L))
        err = end_document(L);
    else
        err = load_yaml(text, len, L);
    if (err == WH_ERR_NOMEM && !errbuf[0])
        wh_fail(errbuf, err, "out of memory while loading YAML");
out:
    if (!err) {
        *docs = L->docs;
        L->docs = NULL;
        if (lines) {
            *lines = L->lines;
            L->lines = NULL;
        }
    }
    loader_free(L);
    cJSON_Delete(L->docs);
    free(L->lines);
    free(L);
    return err;
}

enum wh_err wh_yaml_load_one(const char *text, size_t len, cJSON **doc, char *errbuf)
{
    cJSON *docs = NULL;
    *doc = NULL;
    enum wh_err err = wh_yaml_load(text, len, &docs, NULL, errbuf);
    if (err)
        return err;
    int n = cJSON_GetArraySize(docs);
    if (n != 1) {
        cJSON_Delete(docs);
        return wh_fail(errbuf, WH_ERR_INVALID,
                       n == 0 ? "the input holds no document"
                              : "the input holds %d documents where one is expected",
                       n);
    }
    *doc = cJSON_DetachItemFromArray(docs, 0);
    cJSON_Delete(docs);
    return WH_OK;
}
