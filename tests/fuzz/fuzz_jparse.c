/* fuzz_jparse.c: differential harness, wh_jparse against cJSON.
 *
 * Every input goes to three readers: wh_jparse (src/util/jparse.c), cJSON's
 * own parser with the trailing-data rule of wh_json_parse, and valid() below,
 * a small recursive RFC 8259 recogniser written independently of both. The
 * harness aborts when
 *   - wh_jparse's verdict differs from valid()'s (it must accept exactly the
 *     valid texts, refusing only what cJSON refuses too: lone surrogates and
 *     nesting over CJSON_NESTING_LIMIT), or it fails without saying where;
 *   - both parsers accept a text and their trees differ in any field: type,
 *     valueint, the bits of valuedouble, valuestring, the key, the order of
 *     children, child->prev (the last child, as cJSON links it), or
 *     cJSON_Compare says they differ (for trees it can judge: comparable());
 *   - the text parsed again in an arena (nodes carved out of larger blocks,
 *     as in the server) gives another verdict, offset or tree.
 * Texts only cJSON accepts (not JSON: leading zeros, "1.", raw control
 * characters, other white space, \u with non-hex digits) are allowed, and
 * so are valid texts only wh_jparse accepts (a byte order mark before a
 * one-byte value); with WH_JPARSE_VERBOSE set in the
 * environment each is printed, which is how docs/internals/json-parser.md
 * lists them.
 *
 * Build and run (clang only): scripts/fuzz.sh -t 600 jparse, or
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DWH_FUZZ=ON
 *   cmake --build build-fuzz -j2 --target fuzz_jparse
 *   build-fuzz/tests/fuzz/fuzz_jparse -dict=tests/fuzz/jparse.dict \
 *       /tmp/jparse-corpus tests/fuzz/jparse-corpus
 * fuzz_jparse_replay (any compiler) runs it under ctest over the committed
 * corpora (tests/fuzz/jparse-corpus, tests/fuzz/corpus, the JSON fixtures),
 * on the C heap and, with --arena, in a request arena (carved nodes).
 */
#include <math.h>    /* isfinite */
#include <stdbool.h> /* bool */
#include <stdint.h>  /* uint8_t */
#include <stdio.h>   /* fprintf */
#include <stdlib.h>  /* abort, getenv */
#include <string.h>  /* memcmp, strcmp */

#include <cjson/cJSON.h>

#include "wh/jparse.h" /* wh_jparse */
#include "wh/json.h"   /* wh_json_delete */
#include "wh/mem.h"    /* wh_malloc, wh_mem_bulk */

#include "../arenahooks.h" /* wh_test_arena_install */
#include "../jsontree.h"   /* wh_test_same_tree */

/* ---- an RFC 8259 recogniser: no tree, recursion bounded by the limit ---- */

struct rd {
    const uint8_t *p, *end;
};

static bool ws(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip(struct rd *r)
{
    while (r->p < r->end && ws(*r->p))
        r->p++;
}

static bool eat(struct rd *r, char c)
{
    skip(r);
    if (r->p < r->end && *r->p == (uint8_t)c) {
        r->p++;
        return true;
    }
    return false;
}

static bool is_digit(const struct rd *r)
{
    return r->p < r->end && *r->p >= '0' && *r->p <= '9';
}

static bool digits(struct rd *r)
{
    if (!is_digit(r))
        return false;
    while (is_digit(r))
        r->p++;
    return true;
}

static bool num(struct rd *r)
{
    if (r->p < r->end && *r->p == '-')
        r->p++;
    if (r->p < r->end && *r->p == '0')
        r->p++;
    else if (!digits(r))
        return false;
    if (r->p < r->end && *r->p == '.' && (r->p++, !digits(r)))
        return false;
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
            r->p++;
        return digits(r);
    }
    return true;
}

/* \uXXXX at r->p (after the backslash and the u): its value, or -1. */
static long hex(struct rd *r)
{
    if (r->end - r->p < 4)
        return -1;
    char h[5] = {0};
    memcpy(h, r->p, 4);
    for (int i = 0; i < 4; i++)
        if (!h[i] || !strchr("0123456789abcdefABCDEF", h[i]))
            return -1;
    r->p += 4;
    return strtol(h, NULL, 16);
}

static bool str(struct rd *r)
{
    for (;;) {
        if (r->p == r->end || *r->p < 0x20)
            return false;
        uint8_t c = *r->p++;
        if (c == '"')
            return true;
        if (c != '\\')
            continue;
        if (r->p == r->end || !*r->p || !strchr("\"\\/bfnrtu", *r->p))
            return false;
        if (*r->p++ != 'u')
            continue;
        long u = hex(r);
        if (u >= 0xDC00 && u <= 0xDFFF)
            return false; /* lone low surrogate (cJSON refuses it too) */
        if (u >= 0xD800 && u <= 0xDBFF) {
            if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
                return false;
            r->p += 2;
            long lo = hex(r);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return false;
        } else if (u < 0) {
            return false;
        }
    }
}

static bool lit(struct rd *r, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n))
        return false;
    r->p += n;
    return true;
}

static bool value(struct rd *r, int depth)
{
    skip(r);
    if (r->p == r->end)
        return false;
    uint8_t c = *r->p;
    if (c == '{' || c == '[') {
        if (depth >= CJSON_NESTING_LIMIT)
            return false;
        r->p++;
        char close = c == '{' ? '}' : ']';
        if (eat(r, close))
            return true;
        do {
            if (c == '{' && !(eat(r, '"') && str(r) && eat(r, ':')))
                return false;
            if (!value(r, depth + 1))
                return false;
        } while (eat(r, ','));
        return eat(r, close);
    }
    if (c == '"')
        return r->p++, str(r);
    if (c == '-' || (c >= '0' && c <= '9'))
        return num(r);
    return lit(r, "true") || lit(r, "false") || lit(r, "null");
}

/* The whole input is one value: a BOM before it (cJSON skips one), white
 * space or NULs after it (wh_json_parse's rule). */
static bool valid(const uint8_t *d, size_t n)
{
    struct rd r = {d, d + n};
    if (n >= 3 && !memcmp(d, "\xEF\xBB\xBF", 3))
        r.p += 3;
    if (!value(&r, 0))
        return false;
    while (r.p < r.end && (ws(*r.p) || !*r.p))
        r.p++;
    return r.p == r.end;
}

/* ---- the comparison ----------------------------------------------------- */

/* Trees cJSON_Compare can judge: it looks each key up by name (so it fails
 * on duplicate keys) and compares numbers by their difference (NaN for two
 * infinities). */
static bool comparable(const cJSON *t)
{
    if (cJSON_IsNumber(t) && !isfinite(t->valuedouble))
        return false;
    for (const cJSON *c = t->child; c; c = c->next) {
        for (const cJSON *d = c->next; cJSON_IsObject(t) && d; d = d->next)
            if (!strcmp(c->string, d->string))
                return false;
        if (!comparable(c))
            return false;
    }
    return true;
}

/* cJSON's verdict under wh_json_parse's former rule: one value, then only
 * white space and NULs. */
static cJSON *cjson_parse(const uint8_t *d, size_t n)
{
    const char *end = NULL;
    cJSON *j = n ? cJSON_ParseWithLengthOpts((const char *)d, n, &end, 0) : NULL;
    for (const char *p = end; j && p < (const char *)d + n; p++) {
        if (!ws((uint8_t)*p) && *p) {
            cJSON_Delete(j);
            return NULL;
        }
    }
    return j;
}

/* ---- the carved tree ---------------------------------------------------- */

static struct wh_arena *arena; /* reset after each input, kept to the end */

/* When the harness runs on the C heap: the text parsed again with nodes and
 * strings carved out of an arena's blocks (how the server parses) gives the
 * same verdict, error offset and tree. */
static void check_carved(const uint8_t *data, size_t size, const cJSON *mine, size_t at)
{
    void *probe = wh_malloc(1);
    bool heap = probe && !wh_mem_bulk(probe);
    wh_free(probe);
    if (!heap)
        return; /* fuzz_replay --arena: the tree was carved already */
    if (!arena && !(arena = wh_arena_new(NULL)))
        abort();
    wh_test_arena_install(arena);
    cJSON *carved = NULL;
    size_t at2 = 0;
    int trailing;
    enum wh_err err = wh_jparse((const char *)data, size, &carved, &at2, &trailing);
    bool same = mine ? !err && wh_test_same_tree(mine, carved) : err == WH_ERR_INVALID && at2 == at;
    wh_test_arena_install(NULL);
    wh_arena_reset(arena);
    if (!same) {
        fprintf(stderr, "fuzz_jparse: the carved tree differs from the heap's\n");
        abort();
    }
}

static void report(const char *what, const uint8_t *d, size_t n, size_t at)
{
    if (!getenv("WH_JPARSE_VERBOSE"))
        return;
    size_t from = at > 24 ? at - 24 : 0, to = at + 24 < n ? at + 24 : n;
    fprintf(stderr, "%s at byte %zu: ", what, at);
    for (size_t i = from; i < to; i++)
        fprintf(stderr, d[i] >= 0x20 && d[i] < 0x7F ? "%c" : "\\x%02x", d[i]);
    fprintf(stderr, "\n");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *mine = NULL;
    size_t at = 0;
    int trailing = 0;
    enum wh_err err = wh_jparse((const char *)data, size, &mine, &at, &trailing);
    bool ok = valid(data, size);
    if ((err == WH_OK) != ok || (err && err != WH_ERR_INVALID) || (err && at > size)) {
        fprintf(stderr, "fuzz_jparse: wh_jparse says %d (byte %zu), RFC 8259 says %s\n", (int)err,
                at, ok ? "valid" : "invalid");
        abort();
    }
    cJSON *theirs = cjson_parse(data, size);
    if (mine && theirs &&
        (!wh_test_same_tree(mine, theirs) ||
         (comparable(mine) && !cJSON_Compare(mine, theirs, true)))) {
        fprintf(stderr, "fuzz_jparse: the trees differ\n");
        abort();
    }
    if (!mine && theirs)
        report("only cJSON accepts (not JSON)", data, size, at);
    if (mine && !theirs)
        report("only wh_jparse accepts", data, size, 0);
    cJSON_Delete(theirs);
    check_carved(data, size, mine, at);
    wh_json_delete(mine);
    return 0;
}
