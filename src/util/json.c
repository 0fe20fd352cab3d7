/* json.c: cJSON helpers. */
#include "wh/json.h"

#include <limits.h> /* LONG_MAX */
#include <stdarg.h> /* va_list */
#include <math.h>   /* isfinite, floor, fabs, signbit */
#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strlen */

#include "wh/buf.h"    /* wh_buf */
#include "wh/jparse.h" /* wh_jparse */
#include "wh/mem.h"    /* wh_mem_bulk */
#include "wh/utf8.h"   /* wh_utf8_char_len, wh_utf8_is_ascii */

const cJSON *wh_json_get(const cJSON *obj, const char *key)
{
    if (!cJSON_IsObject(obj))
        return NULL;
    /* cJSON_GetObjectItemCaseSensitive's answer (the first match; a member
     * without a key ends the search), with the first byte compared before
     * strcmp is called: most keys of an object differ there, and this
     * lookup is most of the engine's strcmp calls. */
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (!c->string)
            return NULL;
        if (c->string[0] == key[0] && !strcmp(c->string, key))
            return c;
    }
    return NULL;
}

const cJSON *wh_json_path(const cJSON *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    const char *key;
    while (obj && (key = va_arg(ap, const char *)) != NULL)
        obj = wh_json_get(obj, key);
    va_end(ap);
    return obj;
}

const char *wh_json_str(const cJSON *obj, const char *key)
{
    const cJSON *v = wh_json_get(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *wh_json_str0(const cJSON *obj, const char *key)
{
    const char *s = wh_json_str(obj, key);
    return s ? s : "";
}

bool wh_json_has(const cJSON *obj, const char *key)
{
    return wh_json_get(obj, key) != NULL;
}

enum wh_err wh_json_add(cJSON *array, cJSON *item)
{
    if (!item)
        return WH_ERR_NOMEM;
    if (!cJSON_AddItemToArray(array, item)) {
        cJSON_Delete(item);
        return WH_ERR_NOMEM;
    }
    return WH_OK;
}

/* A member with its key copied, or pointed at (literal). */
static enum wh_err set_member(cJSON *obj, const char *key, cJSON *item, bool literal)
{
    if (!item)
        return WH_ERR_NOMEM;
    if (!(literal ? cJSON_AddItemToObjectCS(obj, key, item)
                  : cJSON_AddItemToObject(obj, key, item))) {
        cJSON_Delete(item);
        return WH_ERR_NOMEM;
    }
    return WH_OK;
}

enum wh_err wh_json_set(cJSON *obj, const char *key, cJSON *item)
{
    return set_member(obj, key, item, false);
}

enum wh_err wh_json_set_str(cJSON *obj, const char *key, const char *value)
{
    return wh_json_set(obj, key, cJSON_CreateString(value));
}

enum wh_err wh_json_set_lit(cJSON *obj, const char *key, cJSON *item)
{
    return set_member(obj, key, item, true);
}

enum wh_err wh_json_set_str_lit(cJSON *obj, const char *key, const char *value)
{
    return wh_json_set_lit(obj, key, cJSON_CreateString(value));
}

void wh_json_delete(cJSON *item)
{
    if (!wh_mem_bulk(item))
        cJSON_Delete(item);
}

enum wh_err wh_json_parse(const char *text, size_t len, cJSON **out, char *errbuf)
{
    *out = NULL;
    if (len == 0)
        return wh_fail(errbuf, WH_ERR_INVALID, "empty body");
    size_t at;
    int trailing;
    enum wh_err err = wh_jparse(text, len, out, &at, &trailing);
    if (err == WH_ERR_NOMEM)
        return wh_fail(errbuf, err, "out of memory parsing JSON");
    if (err && trailing)
        return wh_fail(errbuf, err, "trailing data after JSON value at byte %zu", at);
    if (err)
        return wh_fail(errbuf, err, "not valid JSON (syntax error near byte %zu)", at);
    return WH_OK;
}

enum wh_err wh_json_print(const cJSON *item, char **out)
{
    *out = cJSON_PrintUnformatted(item);
    return *out ? WH_OK : WH_ERR_NOMEM;
}

bool wh_json_whole(const cJSON *v, long lo, long hi, long *out)
{
    /* (double)LONG_MAX rounds up to 2^63, which long cannot hold. */
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= (double)lo && v->valuedouble <= (double)hi) ||
        !(v->valuedouble >= -0x1p63 && v->valuedouble < 0x1p63))
        return false;
    long n = (long)v->valuedouble;
    if ((double)n != v->valuedouble)
        return false;
    *out = n;
    return true;
}

bool wh_parse_long(const char *s, long *out)
{
    if (!s)
        return false;
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (*p < '0' || *p > '9')
        return false;
    long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        int d = *p - '0';
        if (v > (LONG_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? -v : v;
    return true;
}

enum wh_err wh_json_write_string(struct wh_buf *b, const char *s)
{
    return wh_buf_add_json_string(b, s, strlen(s));
}

static enum wh_err write_number(struct wh_buf *b, double d)
{
    char num[32];
    if (!isfinite(d))
        return wh_buf_add(b, "null");
    if (d == floor(d) && fabs(d) < 1e15) {
        /* What "%.0f" prints, without printf: the digits, "-" below zero
         * and for -0. */
        enum wh_err err = signbit(d) ? wh_buf_addc(b, '-') : WH_OK;
        return err ? err : wh_buf_addu(b, (unsigned long)fabs(d));
    }
    snprintf(num, sizeof(num), "%.17g", d);
    return wh_buf_add(b, num);
}

enum wh_err wh_json_write(struct wh_buf *b, const cJSON *item)
{
    if (!item)
        return WH_ERR_INVALID;
    switch (item->type & 0xff) {
    case cJSON_NULL: return wh_buf_add(b, "null");
    case cJSON_False: return wh_buf_add(b, "false");
    case cJSON_True: return wh_buf_add(b, "true");
    case cJSON_Number: return write_number(b, item->valuedouble);
    case cJSON_String: return wh_json_write_string(b, item->valuestring ? item->valuestring : "");
    case cJSON_Raw: return wh_buf_add(b, item->valuestring ? item->valuestring : "null");
    case cJSON_Array:
    case cJSON_Object: {
        bool obj = cJSON_IsObject(item);
        enum wh_err err = wh_buf_addc(b, obj ? '{' : '[');
        for (const cJSON *c = item->child; c && !err; c = c->next) {
            if (c != item->child)
                err = wh_buf_addc(b, ',');
            if (!err && obj)
                err = wh_json_write_string(b, c->string ? c->string : "");
            if (!err && obj)
                err = wh_buf_addc(b, ':');
            if (!err)
                err = wh_json_write(b, c);
        }
        return err ? err : wh_buf_addc(b, obj ? '}' : ']');
    }
    default: return WH_ERR_INVALID;
    }
}

/* A copy of s with U+FFFD for each stray byte (cJSON's allocator), or s
 * itself when it is all UTF-8; NULL on OOM. */
static char *repaired(char *s)
{
    size_t n = strlen(s), bad = 0;
    if (wh_utf8_is_ascii(s, n))
        return s;
    for (size_t i = 0, len; i < n; i += len ? len : 1)
        bad += !(len = wh_utf8_char_len(s + i, n - i));
    if (!bad)
        return s;
    char *out = cJSON_malloc(n + 2 * bad + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0, len; i < n; i += len ? len : 1) {
        len = wh_utf8_char_len(s + i, n - i);
        if (len) {
            memcpy(o, s + i, len);
            o += len;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
        }
    }
    *o = '\0';
    return out;
}

/* Repair *field in place (a key or a string value of one item). */
static enum wh_err repair_field(char **field)
{
    char *r = repaired(*field);
    if (!r)
        return WH_ERR_NOMEM;
    if (r != *field) {
        cJSON_free(*field);
        *field = r;
    }
    return WH_OK;
}

enum wh_err wh_json_repair_utf8(cJSON *item)
{
    if (item->string && !(item->type & cJSON_StringIsConst))
        WH_TRY(repair_field(&item->string));
    if (cJSON_IsString(item) && item->valuestring)
        WH_TRY(repair_field(&item->valuestring));
    for (cJSON *c = item->child; c; c = c->next)
        WH_TRY(wh_json_repair_utf8(c));
    return WH_OK;
}
