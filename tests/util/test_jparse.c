/* test_jparse.c: wh_jparse, the grammar's edges, against cJSON's trees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arenahooks.h" /* wh_test_arena_install */
#include "jsontree.h"   /* wh_test_same_tree */
#include "testutil.h"
#include "wh/arena.h"
#include "wh/jparse.h"
#include "wh/mem.h"

/* Parse text (len bytes) or fail the test. */
static cJSON *parse_n(const char *text, size_t len)
{
    cJSON *j = NULL;
    size_t at = 0;
    int trailing = 0;
    enum wh_err err = wh_jparse(text, len, &j, &at, &trailing);
    if (err)
        fail_msg("wh_jparse refused %.60s: error %d at byte %zu", text, (int)err, at);
    return j;
}

static cJSON *parse(const char *text)
{
    return parse_n(text, strlen(text));
}

/* text parses to the tree cJSON builds from it. */
static void like_cjson_n(const char *text, size_t len)
{
    cJSON *mine = parse_n(text, len);
    cJSON *theirs = cJSON_ParseWithLength(text, len);
    assert_non_null(theirs);
    if (!wh_test_same_tree(mine, theirs))
        fail_msg("the trees of %.60s differ", text);
    cJSON_Delete(mine);
    cJSON_Delete(theirs);
}

static void like_cjson(const char *text)
{
    like_cjson_n(text, strlen(text));
}

/* text is refused at byte want_at (trailing: as trailing data). */
static void refused_n(const char *text, size_t len, size_t want_at, int want_trailing)
{
    cJSON *j = (cJSON *)1;
    size_t at = 12345;
    int trailing = -1;
    assert_int_equal(wh_jparse(text, len, &j, &at, &trailing), WH_ERR_INVALID);
    assert_null(j);
    if (at != want_at || trailing != want_trailing)
        fail_msg("%.60s: refused at byte %zu (trailing %d), expected %zu (%d)", text, at, trailing,
                 want_at, want_trailing);
}

static void refused(const char *text, size_t want_at)
{
    refused_n(text, strlen(text), want_at, 0);
}

static double num(const char *text)
{
    cJSON *j = parse(text);
    assert_true(cJSON_IsNumber(j));
    double d = j->valuedouble;
    like_cjson(text);
    cJSON_Delete(j);
    return d;
}

static int num_int(const char *text)
{
    cJSON *j = parse(text);
    int v = j->valueint;
    cJSON_Delete(j);
    return v;
}

static void test_numbers(void **unused)
{
    (void)unused;
    double z = num("-0");
    assert_true(z == 0 && signbit(z));
    assert_false(signbit(num("0")));
    assert_true(signbit(num("-0.0e7")));
    assert_true(isinf(num("1e400")) && num("1e400") > 0);
    assert_true(isinf(num("-1e400")) && num("-1e400") < 0);
    assert_true(num("1e-400") == 0);
    assert_true(num("9007199254740993") == 0x1p53); /* 2^53 + 1: ties to even */
    assert_true(num("9007199254740995") == 0x1p53 + 4);
    assert_true(num("9223372036854775808") == 0x1p63);
    assert_true(num("18446744073709551616") == 0x1p64);
    assert_true(num("0.1") == 0.1);
    assert_true(num("1.5e-7") == 1.5e-7);
    assert_true(num("123456789012345678901234567890") == 123456789012345678901234567890.0);
    assert_true(num("1.7976931348623157e308") == 1.7976931348623157e308);
    assert_true(num("5e-324") == 5e-324);
    assert_true(num("2.2250738585072011e-308") == 2.2250738585072011e-308);
    assert_true(num("1E+2") == 100 && num("1e-2") == 0.01 && num("-12.5E1") == -125);
    assert_true(num("1e22") == 1e22 && num("1e23") == 1e23 && num("4.35e-23") == 4.35e-23);
    /* more digits than any double holds, far past the fast path */
    char longnum[200];
    memset(longnum, '7', sizeof(longnum) - 1);
    longnum[sizeof(longnum) - 1] = '\0';
    longnum[1] = '.';
    assert_true(num(longnum) == strtod(longnum, NULL));
    /* valueint saturates as cJSON's does */
    assert_int_equal(num_int("2147483647"), INT_MAX);
    assert_int_equal(num_int("2147483648"), INT_MAX);
    assert_int_equal(num_int("1e400"), INT_MAX);
    assert_int_equal(num_int("-2147483648"), INT_MIN);
    assert_int_equal(num_int("-2147483649"), INT_MIN);
    assert_int_equal(num_int("-1.9"), -1);
    assert_int_equal(num_int("2147483646.5"), 2147483646);
    /* not RFC 8259 numbers (cJSON takes some of them) */
    refused("01", 1);
    refused("-01", 2);
    refused("1.", 2);
    refused(".5", 0);
    refused("+1", 0);
    refused("1e", 2);
    refused("1e+", 3);
    refused("-", 1);
    refused("[1.2.3]", 4);
    refused_n("0x10", 4, 1, 1); /* "0", then more */
    refused("[-]", 2);
}

static void test_literals(void **unused)
{
    (void)unused;
    like_cjson("[true,false,null]");
    cJSON *t = parse("true");
    assert_true(cJSON_IsTrue(t));
    assert_int_equal(t->valueint, 1); /* as cJSON sets it */
    cJSON_Delete(t);
    refused("tru", 0);
    refused("[nul]", 1);
    refused("[True]", 1);
    refused_n("falsey", 6, 5, 1);
}

static void test_escapes(void **unused)
{
    (void)unused;
    cJSON *j = parse("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u0041\\u00e9\\u20AC\\ud83d\\ude00\"");
    assert_string_equal(j->valuestring,
                        "\" \\ / \b \f \n \r \t A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    cJSON_Delete(j);
    like_cjson("[\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\",\"\\u0041\\u00e9\\u20AC\\uD834\\uDD1E\"]");
    like_cjson("{\"\\u006b\\n\":\"v\"}");
    /* \u0000 ends the C string, as in cJSON's tree */
    j = parse("\"abc\\u0000def\"");
    assert_string_equal(j->valuestring, "abc");
    cJSON_Delete(j);
    like_cjson("[\"abc\\u0000def\",\"\\u0000\"]");
    /* lone or broken surrogates, bad escapes */
    refused("\"\\ud800\"", 1);
    refused("\"\\udc00\"", 1);
    refused("\"x\\ud800\\u0041\"", 2);
    refused("\"\\ud800\\\\udc00\"", 1);
    refused("\"\\ud83d\\ude0\"", 1);
    refused("\"\\u12\"", 1);
    refused("\"\\u12g4\"", 1);
    refused("\"\\u--99\"", 1); /* cJSON reads it as \u0000 */
    refused("\"\\x\"", 1);
    refused("\"\\'\"", 1);
    refused("\"ab\\", 4);
    refused("\"ab", 3);
    refused("\"a\tb\"", 2); /* raw control characters */
    refused("\"a\\n\x01\"", 4);
}

/* ---- in an arena: nodes carved out of larger blocks ---------------------- */

static struct wh_arena *arena;

static void arena_install(void)
{
    assert_non_null(arena = wh_arena_new(NULL));
    wh_test_arena_install(arena);
}

static void arena_uninstall(void)
{
    wh_test_arena_install(NULL);
    wh_arena_free(arena);
    arena = NULL;
}

/* Strings of every length around the 16-byte block, with an escape, a
 * control character or the closing quote at every offset, each at the very
 * end of the text (the scan's tail) and followed by more. */
static void long_strings(void)
{
    char text[128], want[128];
    for (size_t n = 0; n <= 70; n++) {
        for (size_t k = 0; k <= n; k++) {
            text[0] = '"';
            memset(text + 1, 'a', n);
            memset(want, 'a', n);
            memcpy(text + 1 + k, "\\n", 2);
            memset(text + 3 + k, 'b', n - k);
            memset(want + k, '\n', 1);
            memset(want + k + 1, 'b', n - k);
            want[n + 1] = '\0';
            text[n + 3] = '"';
            cJSON *j = parse_n(text, n + 4);
            assert_string_equal(j->valuestring, want);
            cJSON_Delete(j);
            like_cjson_n(text, n + 4);
            text[k + 1] = '\x1f';
            refused_n(text, n + 4, k + 1, 0);
        }
        text[0] = '"';
        memset(text + 1, 'c', n);
        text[n + 1] = '"';
        memcpy(text + n + 2, "  ", 2);
        for (size_t tail = 0; tail <= 2; tail++) {
            cJSON *j = parse_n(text, n + 2 + tail);
            assert_int_equal(strlen(j->valuestring), n);
            cJSON_Delete(j);
        }
        refused_n(text, n + 1, n + 1, 0); /* unterminated */
    }
}

/* On the heap, then in an arena (where short strings are stored straight
 * from the bytes scanned). */
static void test_long_strings(void **unused)
{
    (void)unused;
    long_strings();
    arena_install();
    long_strings();
    arena_uninstall();
}

static void test_containers(void **unused)
{
    (void)unused;
    like_cjson("[]");
    like_cjson("{}");
    like_cjson(" [ [ ] , { } , [ [ ] ] , { \"a\" : { } } ] ");
    like_cjson("{\"a\":1,\"b\":[1,2,3],\"c\":{\"d\":[{}]}}");
    /* duplicate keys stay, in order */
    cJSON *j = parse("{\"k\":1,\"k\":2,\"x\":0,\"k\":3}");
    int seen[3], n = 0;
    for (cJSON *c = j->child; c; c = c->next)
        if (!strcmp(c->string, "k"))
            seen[n++] = c->valueint;
    assert_int_equal(n, 3);
    assert_true(seen[0] == 1 && seen[1] == 2 && seen[2] == 3);
    assert_ptr_equal(j->child->prev, j->child->next->next->next); /* the last child */
    assert_null(j->child->prev->next);
    cJSON_Delete(j);
    like_cjson("{\"k\":1,\"k\":2,\"x\":0,\"k\":3}");
    refused("[1,]", 3);
    refused("[,1]", 1);
    refused("{\"a\":1,}", 7);
    refused("{\"a\"}", 4);
    refused("{\"a\" 1}", 5);
    refused("{1:2}", 1);
    refused("[1 2]", 3);
    refused("[1}", 2);
    refused("{\"a\":1]", 6);
    refused("[", 1);
    refused("{\"a\":", 5);
}

/* CJSON_NESTING_LIMIT containers deep is fine, one more is refused (at
 * its opening bracket), objects and arrays alternating. */
static void test_nesting(void **unused)
{
    (void)unused;
    for (size_t depth = CJSON_NESTING_LIMIT; depth <= CJSON_NESTING_LIMIT + 1; depth++) {
        char *t = malloc(8 * depth + 8), *o = t;
        assert_non_null(t);
        size_t last_open = 0;
        for (size_t i = 0; i < depth; i++) {
            last_open = (size_t)(o - t);
            o += sprintf(o, i % 2 ? "[" : "{\"k\":");
        }
        *o++ = '1';
        for (size_t i = depth; i-- > 0;)
            *o++ = i % 2 ? ']' : '}';
        *o = '\0';
        if (depth == CJSON_NESTING_LIMIT) {
            like_cjson(t);
        } else {
            assert_null(cJSON_Parse(t));
            refused(t, last_open);
        }
        free(t);
    }
}

static void test_top_level(void **unused)
{
    (void)unused;
    like_cjson("\"s\"");
    like_cjson("1");
    cJSON *j = parse_n("\xEF\xBB\xBF{\"a\":1}", 10); /* a byte order mark */
    assert_true(cJSON_IsObject(j));
    cJSON_Delete(j);
    j = parse_n("\xEF\xBB\xBF"
                "0",
                4); /* cJSON refuses this one */
    assert_true(cJSON_IsNumber(j));
    cJSON_Delete(j);
    refused_n("\xEF\xBB\xBF", 3, 3, 0);
    j = parse_n("{\"a\":1}\0\0 \n", 11);
    cJSON_Delete(j);
    j = parse_n("[1]garbage", 3); /* only len bytes are read */
    cJSON_Delete(j);
    refused_n("", 0, 0, 0);
    refused_n(" \n", 2, 2, 0);
    refused_n("{} x", 4, 3, 1);
    refused_n("{}{}", 4, 2, 1);
    refused_n("1 2", 3, 2, 1);
    refused_n("{\"a\":1}\0x", 9, 8, 1);
    refused_n("\f1", 2, 0, 0); /* cJSON's white space is any byte up to ' ' */
}

/* ---- memory ------------------------------------------------------------- */

static unsigned long live, allocs, fail_at;

static void *count_malloc(size_t n)
{
    if (fail_at && ++allocs >= fail_at)
        return NULL;
    void *p = malloc(n);
    live += p != NULL;
    return p;
}

static void *count_realloc(void *p, size_t n)
{
    return p ? realloc(p, n) : count_malloc(n);
}

static void count_free(void *p)
{
    live -= p != NULL;
    free(p);
}

/* A document with long strings, escapes, numbers and nesting. */
static char *big_doc(size_t items, size_t *len)
{
    char *t = malloc(items * 256 + 32), *o = t;
    assert_non_null(t);
    o += sprintf(o, "{\"items\":[");
    for (size_t i = 0; i < items; i++)
        o += sprintf(o,
                     "%s{\"name\":\"item-%zu\\t\\u00e9\",\"n\":%zu.5,\"tags\":[\"%0*d\"],\"e\":{}}",
                     i ? "," : "", i, i * 1000003, (int)(i % 97), 0);
    o += sprintf(o, "],\"last\":true}");
    *len = (size_t)(o - t);
    return t;
}

/* Every allocation failing in turn: WH_ERR_NOMEM, nothing left. */
static void test_oom_heap(void **unused)
{
    (void)unused;
    size_t len;
    char *doc = big_doc(40, &len);
    struct wh_mem_hooks h = {count_malloc, count_realloc, count_free, NULL};
    wh_mem_install(&h);
    fail_at = 0;
    allocs = 0;
    cJSON *ref = parse_n(doc, len);
    unsigned long total = live;
    cJSON_Delete(ref);
    assert_int_equal(live, 0);
    assert_true(total > 200);
    for (unsigned long n = 1; n <= total + 1; n++) {
        allocs = 0;
        fail_at = n;
        cJSON *j = (cJSON *)1;
        size_t at;
        int trailing;
        enum wh_err err = wh_jparse(doc, len, &j, &at, &trailing);
        fail_at = 0;
        if (n <= total) {
            assert_int_equal(err, WH_ERR_NOMEM);
            assert_null(j);
        } else {
            assert_int_equal(err, WH_OK);
            cJSON_Delete(j);
        }
        if (live)
            fail_msg("allocation %lu failing leaves %lu blocks", n, live);
    }
    wh_mem_install(NULL);
    free(doc);
}

static void test_arena(void **unused)
{
    (void)unused;
    size_t len;
    char *doc = big_doc(3000, &len); /* slabs up to their largest size */
    cJSON *heap = parse_n(doc, len);
    arena_install();
    cJSON *carved = parse_n(doc, len);
    assert_true(wh_test_same_tree(heap, carved));
    /* the tree is cJSON's to edit and delete */
    assert_non_null(cJSON_SetValuestring(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(carved, "items"), 7), "name"),
        "a longer name than the one it had"));
    cJSON_Delete(carved);
    /* a long string gets a block of its own */
    char *s = malloc(300001);
    assert_non_null(s);
    memset(s, 'x', 300000);
    s[0] = s[299999] = '"';
    s[300000] = '\0';
    cJSON *j = parse_n(s, 300000);
    assert_int_equal(strlen(j->valuestring), 299998);
    cJSON_Delete(j);
    /* an arena that runs out: WH_ERR_NOMEM */
    wh_arena_free(arena);
    struct wh_arena_opts small = {.first_chunk = 4096, .budget = 8192};
    assert_non_null(arena = wh_arena_new(&small));
    wh_test_arena_install(arena);
    j = (cJSON *)1;
    size_t at;
    int trailing;
    assert_int_equal(wh_jparse(doc, len, &j, &at, &trailing), WH_ERR_NOMEM);
    assert_null(j);
    arena_uninstall();
    cJSON_Delete(heap);
    free(s);
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers),    cmocka_unit_test(test_literals),
        cmocka_unit_test(test_escapes),    cmocka_unit_test(test_long_strings),
        cmocka_unit_test(test_containers), cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_top_level),  cmocka_unit_test(test_oom_heap),
        cmocka_unit_test(test_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
