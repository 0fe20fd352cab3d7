/* jsonpatch.c: RFC 6902 (add, remove, replace, move, copy, test) over
 * RFC 6901 JSON Pointers. */
#include "wh/jsonpatch.h"

#include <stdbool.h> /* bool */
#include <string.h>  /* strcmp, strlen */

#include "wh/json.h" /* wh_json_str */
#include "wh/mem.h"  /* wh_malloc, wh_free */

/* Decode one reference token [p, end) (~1 -> '/', ~0 -> '~') into out
 * (malloc'd). NULL on a bad escape or OOM. */
static char *decode_token(const char *p, const char *end)
{
    char *out = wh_malloc((size_t)(end - p) + 1), *o = out;
    if (!out)
        return NULL;
    for (; p < end; p++) {
        if (*p != '~') {
            *o++ = *p;
            continue;
        }
        if (p + 1 >= end || (p[1] != '0' && p[1] != '1')) {
            wh_free(out);
            return NULL;
        }
        *o++ = p[1] == '0' ? '~' : '/';
        p++;
    }
    *o = '\0';
    return out;
}

/* Array index token: digits without leading zeros. -1 for "-", -2 if bad. */
static long array_index(const char *tok)
{
    if (!strcmp(tok, "-"))
        return -1;
    if (!*tok || (tok[0] == '0' && tok[1]))
        return -2;
    long v;
    if (!wh_parse_long(tok, &v) || v < 0 || tok[0] == '+' || tok[0] == '-')
        return -2;
    return v;
}

/* Resolve the pointer to (parent, last token). For the root pointer "",
 * *parent is NULL. Tokens are malloc'd; caller frees *last. */
static enum wh_err resolve_parent(cJSON *root, const char *ptr, cJSON **parent, char **last)
{
    *parent = NULL;
    *last = NULL;
    if (!*ptr)
        return WH_OK;
    if (*ptr != '/')
        return WH_ERR_INVALID;
    cJSON *cur = root;
    const char *p = ptr + 1;
    for (;;) {
        const char *slash = strchr(p, '/');
        const char *end = slash ? slash : p + strlen(p);
        char *tok = decode_token(p, end);
        if (!tok)
            return WH_ERR_INVALID;
        if (!slash) {
            *parent = cur;
            *last = tok;
            return WH_OK;
        }
        cJSON *next = NULL;
        if (cJSON_IsObject(cur)) {
            next = cJSON_GetObjectItemCaseSensitive(cur, tok);
        } else if (cJSON_IsArray(cur)) {
            long i = array_index(tok);
            next = i >= 0 ? cJSON_GetArrayItem(cur, (int)i) : NULL;
        }
        wh_free(tok);
        if (!next)
            return WH_ERR_INVALID;
        cur = next;
        p = slash + 1;
    }
}

static cJSON *get_child(cJSON *parent, const char *tok)
{
    if (cJSON_IsObject(parent))
        return cJSON_GetObjectItemCaseSensitive(parent, tok);
    if (cJSON_IsArray(parent)) {
        long i = array_index(tok);
        return i >= 0 ? cJSON_GetArrayItem(parent, (int)i) : NULL;
    }
    return NULL;
}

static cJSON *lookup(cJSON *root, const char *ptr)
{
    cJSON *parent;
    char *last;
    if (resolve_parent(root, ptr, &parent, &last))
        return NULL;
    cJSON *v = parent ? get_child(parent, last) : root;
    wh_free(last);
    return v;
}

/* Insert value before element i (0 <= i < size). Debian 12's cJSON 1.7.15
 * cJSON_InsertItemInArray refuses new items past index 0, so the tail is
 * detached and re-appended instead: O(n), which patches never notice. On
 * failure nothing changed and value is still the caller's. */
static enum wh_err array_insert(cJSON *array, long i, cJSON *value)
{
    cJSON *tail = cJSON_CreateArray();
    if (!tail)
        return WH_ERR_NOMEM;
    long n = cJSON_GetArraySize(array);
    for (long k = i; k < n; k++)
        cJSON_AddItemToArray(tail, cJSON_DetachItemFromArray(array, (int)i));
    cJSON_AddItemToArray(array, value);
    while (tail->child)
        cJSON_AddItemToArray(array, cJSON_DetachItemViaPointer(tail, tail->child));
    cJSON_Delete(tail);
    return WH_OK;
}

/* Insert value (owned) at ptr; on failure value is deleted. *root may be
 * replaced when ptr is "". */
static enum wh_err do_add(cJSON **root, const char *ptr, cJSON *value)
{
    cJSON *parent;
    char *last;
    if (resolve_parent(*root, ptr, &parent, &last)) {
        cJSON_Delete(value);
        return WH_ERR_INVALID;
    }
    enum wh_err err = WH_OK;
    if (!parent) {
        cJSON_Delete(*root);
        *root = value;
    } else if (cJSON_IsObject(parent)) {
        if (cJSON_GetObjectItemCaseSensitive(parent, last))
            cJSON_ReplaceItemInObjectCaseSensitive(parent, last, value);
        else if (!cJSON_AddItemToObject(parent, last, value))
            err = WH_ERR_NOMEM;
    } else if (cJSON_IsArray(parent)) {
        long i = array_index(last);
        long n = cJSON_GetArraySize(parent);
        if (i == -1 || i == n) {
            if (!cJSON_AddItemToArray(parent, value))
                err = WH_ERR_NOMEM;
        } else if (i >= 0 && i < n) {
            err = array_insert(parent, i, value);
        } else {
            err = WH_ERR_INVALID;
        }
    } else {
        err = WH_ERR_INVALID;
    }
    if (err && parent)
        cJSON_Delete(value);
    wh_free(last);
    return err;
}

/* Replace the existing value at ptr with a copy of value (RFC 6902 §4.3). */
static enum wh_err do_replace(cJSON **root, const char *ptr, const cJSON *value)
{
    cJSON *cur = lookup(*root, ptr);
    if (!cur)
        return WH_ERR_INVALID;
    cJSON *copy = cJSON_Duplicate(value, 1);
    if (!copy)
        return WH_ERR_NOMEM;
    if (cur == *root) {
        cJSON_Delete(*root);
        *root = copy;
        return WH_OK;
    }
    cJSON *parent;
    char *last;
    if (resolve_parent(*root, ptr, &parent, &last)) {
        cJSON_Delete(copy);
        return WH_ERR_INVALID;
    }
    /* In an object the member keeps its key (ReplaceItemInObject sets it). */
    bool ok = cJSON_IsObject(parent) ? cJSON_ReplaceItemInObjectCaseSensitive(parent, last, copy)
                                     : cJSON_ReplaceItemViaPointer(parent, cur, copy);
    wh_free(last);
    if (!ok) {
        cJSON_Delete(copy);
        return WH_ERR_NOMEM;
    }
    return WH_OK;
}

/* Detach the value at ptr; NULL when absent. */
static cJSON *do_detach(cJSON *root, const char *ptr)
{
    cJSON *parent;
    char *last;
    if (resolve_parent(root, ptr, &parent, &last) || !parent) {
        wh_free(last);
        return NULL;
    }
    cJSON *item = get_child(parent, last);
    wh_free(last);
    return item ? cJSON_DetachItemViaPointer(parent, item) : NULL;
}

static enum wh_err apply_op(cJSON **root, const cJSON *op)
{
    const char *name = wh_json_str(op, "op");
    const char *path = wh_json_str(op, "path");
    const cJSON *value = wh_json_get(op, "value");
    const char *from = wh_json_str(op, "from");
    if (!name || !path)
        return WH_ERR_INVALID;
    if (!strcmp(name, "add")) {
        if (!value)
            return WH_ERR_INVALID;
        cJSON *copy = cJSON_Duplicate(value, 1);
        return copy ? do_add(root, path, copy) : WH_ERR_NOMEM;
    }
    if (!strcmp(name, "replace"))
        return value ? do_replace(root, path, value) : WH_ERR_INVALID;
    if (!strcmp(name, "remove")) {
        cJSON *item = do_detach(*root, path);
        if (!item)
            return WH_ERR_INVALID;
        cJSON_Delete(item);
        return WH_OK;
    }
    if (!strcmp(name, "test")) {
        const cJSON *cur = lookup(*root, path);
        return value && cur && cJSON_Compare(cur, value, 1) ? WH_OK : WH_ERR_INVALID;
    }
    if (!from)
        return WH_ERR_INVALID;
    if (!strcmp(name, "copy")) {
        const cJSON *src = lookup(*root, from);
        cJSON *copy = src ? cJSON_Duplicate(src, 1) : NULL;
        return copy ? do_add(root, path, copy) : WH_ERR_INVALID;
    }
    if (!strcmp(name, "move")) {
        size_t fl = strlen(from);
        if (!strncmp(path, from, fl) && path[fl] == '/')
            return WH_ERR_INVALID; /* cannot move into its own child */
        cJSON *item = do_detach(*root, from);
        return item ? do_add(root, path, item) : WH_ERR_INVALID;
    }
    return WH_ERR_INVALID;
}

enum wh_err wh_jsonpatch_apply(cJSON **doc, const cJSON *patch, char *errbuf)
{
    if (!cJSON_IsArray(patch))
        return wh_fail(errbuf, WH_ERR_INVALID, "a JSON Patch must be a JSON array");
    cJSON *work = cJSON_Duplicate(*doc, 1);
    if (!work && *doc)
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    int i = 0;
    for (const cJSON *op = patch->child; op; op = op->next, i++) {
        enum wh_err err = apply_op(&work, op);
        if (err) {
            wh_fail(errbuf, err, "patch operation %d (%s %s) does not apply", i,
                    wh_json_str0(op, "op"), wh_json_str0(op, "path"));
            cJSON_Delete(work);
            return err;
        }
    }
    cJSON_Delete(*doc);
    *doc = work;
    return WH_OK;
}
