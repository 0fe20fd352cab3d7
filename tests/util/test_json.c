/* test_json.c: cJSON helpers, wh_json_parse and wh_parse_long. */
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

#include "testutil.h"
#include "wh/buf.h"
#include "wh/json.h"
#include "wh/utf8.h"

static void long_ok(const char *s, long want)
{
    long v = 12345;
    if (!wh_parse_long(s, &v))
        fail_msg("wh_parse_long(\"%s\") refused", s);
    assert_int_equal(v, want);
}

static void long_bad(const char *s)
{
    long v = 12345;
    if (wh_parse_long(s, &v))
        fail_msg("wh_parse_long(\"%s\") accepted (%ld)", s ? s : "(null)", v);
    assert_int_equal(v, 12345); /* untouched */
}

static void test_parse_long(void **unused)
{
    (void)unused;
    long_ok("0", 0);
    long_ok("-0", 0);
    long_ok("+0", 0);
    long_ok("7", 7);
    long_ok("+15", 15);
    long_ok("-15", -15);
    long_ok("007", 7);
    char buf[32];
    snprintf(buf, sizeof(buf), "%ld", LONG_MAX);
    long_ok(buf, LONG_MAX);
    snprintf(buf, sizeof(buf), "-%ld", LONG_MAX);
    long_ok(buf, -LONG_MAX);
}

static void test_parse_long_rejects(void **unused)
{
    (void)unused;
    long_bad(NULL);
    long_bad("");
    long_bad("-");
    long_bad("+");
    long_bad("--1");
    long_bad("+-1");
    long_bad(" 1");
    long_bad("1 ");
    long_bad("1a");
    long_bad("a1");
    long_bad("0x10");
    long_bad("1.0");
    long_bad("1e3");
    long_bad("9223372036854775808"); /* LONG_MAX + 1 */
    long_bad("99999999999999999999999");
    long_bad("-99999999999999999999999");
}

static void test_json_whole(void **unused)
{
    (void)unused;
    static const struct {
        const char *json;
        bool ok;
        long n;
    } cases[] = {
        {"0", true, 0},
        {"-7", true, -7},
        {"2147483647", true, 2147483647L},
        {"2147483648", false, 0},
        {"1.5", false, 0},
        {"3.33e61", false, 0},
        {"-1e300", false, 0},
        {"\"4\"", false, 0},
        {"null", false, 0},
        {"-2147483648", true, -2147483647L - 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *v = cJSON_Parse(cases[i].json);
        assert_non_null(v);
        long n = 99;
        assert_int_equal(wh_json_whole(v, INT32_MIN, INT32_MAX, &n), cases[i].ok);
        assert_int_equal(n, cases[i].ok ? cases[i].n : 99); /* untouched on failure */
        cJSON_Delete(v);
    }
    assert_false(wh_json_whole(NULL, 0, 1, &(long){0}));
    /* The full range of long: 2^63 is (double)LONG_MAX yet beyond it. */
    cJSON *big = cJSON_CreateNumber(0x1p63), *low = cJSON_CreateNumber(-0x1p63);
    assert_non_null(big);
    assert_non_null(low);
    long n = 0;
    assert_false(wh_json_whole(big, LONG_MIN, LONG_MAX, &n));
    assert_true(wh_json_whole(low, LONG_MIN, LONG_MAX, &n));
    assert_true(n == LONG_MIN);
    cJSON_Delete(big);
    cJSON_Delete(low);
}

static void test_parse_ok(void **unused)
{
    (void)unused;
    char errbuf[WH_ERRBUF_LEN];
    cJSON *j = NULL;
    const char text[] = "{\"a\":1} \n\t\r";
    assert_int_equal(wh_json_parse(text, strlen(text), &j, errbuf), WH_OK);
    assert_true(cJSON_IsObject(j));
    cJSON_Delete(j);
    /* not NUL-terminated: only len bytes are read */
    const char part[] = "[1,2]garbage";
    assert_int_equal(wh_json_parse(part, 5, &j, errbuf), WH_OK);
    assert_int_equal(cJSON_GetArraySize(j), 2);
    cJSON_Delete(j);
    /* scalars are JSON values too */
    assert_int_equal(wh_json_parse("\"s\"", 3, &j, errbuf), WH_OK);
    assert_true(cJSON_IsString(j));
    cJSON_Delete(j);
}

static void parse_bad(const char *text, size_t len, const char *why)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *j = (cJSON *)1;
    assert_int_equal(wh_json_parse(text, len, &j, errbuf), WH_ERR_INVALID);
    assert_null(j);
    if (!strstr(errbuf, why))
        fail_msg("error for %.40s is \"%s\", expected it to mention \"%s\"", text, errbuf, why);
}

static void test_parse_errors(void **unused)
{
    (void)unused;
    parse_bad("", 0, "empty");
    parse_bad("   ", 3, "not valid JSON");
    parse_bad("{\"a\":", 5, "not valid JSON");
    parse_bad("{\"a\":1}}", 8, "trailing data");
    parse_bad("{} x", 4, "trailing data after JSON value at byte 3");
    parse_bad("{}{}", 4, "trailing data");
    parse_bad("[1] [2]", 7, "trailing data");
    parse_bad("{\"a\":1}\0x", 9, "trailing data");
    parse_bad("nul", 3, "not valid JSON");
}

static void test_getters(void **unused)
{
    (void)unused;
    cJSON *j = wh_test_parse("{\"name\":\"n\",\"Name\":\"N\",\"num\":3,\"nul\":null,"
                             "\"obj\":{\"inner\":{\"leaf\":\"x\"}},\"arr\":[1]}");
    assert_string_equal(wh_json_str(j, "name"), "n");
    assert_string_equal(wh_json_str(j, "Name"), "N"); /* case-sensitive */
    assert_null(wh_json_str(j, "NAME"));
    assert_null(wh_json_str(j, "num")); /* not a string */
    assert_string_equal(wh_json_str0(j, "num"), "");
    assert_string_equal(wh_json_str0(j, "missing"), "");
    assert_true(wh_json_has(j, "nul"));
    assert_false(wh_json_has(j, "missing"));
    assert_null(wh_json_get(wh_json_get(j, "arr"), "0")); /* arrays have no keys */
    assert_null(wh_json_get(NULL, "x"));
    assert_string_equal(wh_json_str(wh_json_path(j, "obj", "inner", NULL), "leaf"), "x");
    assert_null(wh_json_path(j, "obj", "missing", "leaf", NULL));
    assert_null(wh_json_path(j, "num", "x", NULL));
    assert_ptr_equal(wh_json_path(j, NULL), j);
    cJSON_Delete(j);
}

static void test_add_set_ownership(void **unused)
{
    (void)unused;
    cJSON *arr = cJSON_CreateArray(), *obj = cJSON_CreateObject();
    assert_int_equal(wh_json_add(arr, cJSON_CreateNumber(1)), WH_OK);
    assert_int_equal(wh_json_add(arr, NULL), WH_ERR_NOMEM);
    assert_int_equal(wh_json_set(obj, "k", cJSON_CreateString("v")), WH_OK);
    assert_int_equal(wh_json_set(obj, "k2", NULL), WH_ERR_NOMEM);
    assert_int_equal(wh_json_set_str(obj, "s", "t"), WH_OK);
    assert_int_equal(cJSON_GetArraySize(arr), 1);
    char *text = NULL;
    assert_int_equal(wh_json_print(obj, &text), WH_OK);
    assert_string_equal(text, "{\"k\":\"v\",\"s\":\"t\"}");
    cJSON_free(text);
    cJSON_Delete(arr);
    cJSON_Delete(obj);
}

/* Issue 10 (found by fuzz_review): a label that is not UTF-8 reached the
 * patch as U+FFFD but stayed raw in the pod, so the re-review patched again.
 * Strings and keys are repaired at parse time, as Go decodes them. */
static void test_repair_utf8(void **unused)
{
    (void)unused;
    static const char text[] = "{\"k\xff\":[\"a\xc3(\",{\"ok\":\"caf\xc3\xa9\"}],\"n\":1}";
    cJSON *j = NULL;
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(wh_json_parse(text, sizeof(text) - 1, &j, errbuf), WH_OK);
    assert_int_equal(wh_json_repair_utf8(j), WH_OK);
    const cJSON *arr = wh_json_get(j, "k\xef\xbf\xbd");
    assert_true(cJSON_IsArray(arr));
    assert_string_equal(cJSON_GetArrayItem(arr, 0)->valuestring, "a\xef\xbf\xbd(");
    assert_string_equal(wh_json_str(cJSON_GetArrayItem(arr, 1), "ok"), "caf\xc3\xa9");
    assert_int_equal(wh_json_get(j, "n")->valueint, 1);
    cJSON_Delete(j);
}

/* wh_json_write prints whole numbers without printf: the same digits as
 * "%.0f" (signs, -0 and the 1e15 edge included), others as "%.17g". */
static void test_write_numbers(void **unused)
{
    (void)unused;
    static const double nums[] = {
        0.0,  -0.0,  1,   -1,    7,    10,     42, -42, 1e14, 999999999999999.0, -999999999999999.0,
        1e15, -1e15, 0.5, -2.25, 1e20, 3.14159};
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        char want[40];
        double d = nums[i];
        snprintf(want, sizeof(want), d == floor(d) && fabs(d) < 1e15 ? "%.0f" : "%.17g", d);
        cJSON *n = cJSON_CreateNumber(d);
        struct wh_buf b;
        wh_buf_init(&b, 64);
        assert_int_equal(wh_json_write(&b, n), WH_OK);
        assert_string_equal(wh_buf_ptr(&b), want);
        wh_buf_free(&b);
        cJSON_Delete(n);
    }
}

/* Why an ASCII review skips wh_json_repair_utf8 (review.c): every \u escape
 * cJSON accepts decodes to well-formed UTF-8 (surrogates only as pairs), and
 * the others fail the parse. All of the BMP, the pairs' ends, lone halves. */
static bool all_utf8(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0, len; i < n; i += len)
        if (!(len = wh_utf8_char_len(s + i, n - i)))
            return false;
    return true;
}

static void test_escapes_decode_to_utf8(void **unused)
{
    (void)unused;
    char errbuf[WH_ERRBUF_LEN], text[64];
    size_t cap = 0x10000 * 9 + 16, n = 0;
    char *all = malloc(cap);
    assert_non_null(all);
    all[n++] = '[';
    for (unsigned u = 1; u <= 0xFFFF; u++)
        if (u < 0xD800 || u > 0xDFFF)
            n += (size_t)snprintf(all + n, cap - n, "%s\"\\u%04X\"", n > 1 ? "," : "", u);
    all[n++] = ']';
    cJSON *j = NULL;
    assert_int_equal(wh_json_parse(all, n, &j, errbuf), WH_OK);
    int count = 0;
    for (const cJSON *c = j->child; c; c = c->next, count++)
        assert_true(all_utf8(c->valuestring));
    assert_int_equal(count, 0xFFFF - 0x800);
    cJSON_Delete(j);
    free(all);
    static const char *const pairs[] = {"\\uD800\\uDC00", "\\uDBFF\\uDFFF", "\\uD83D\\uDE00"};
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        int len = snprintf(text, sizeof(text), "\"%s\"", pairs[i]);
        assert_int_equal(wh_json_parse(text, (size_t)len, &j, errbuf), WH_OK);
        assert_int_equal(strlen(j->valuestring), 4);
        assert_true(all_utf8(j->valuestring));
        cJSON_Delete(j);
    }
    static const char *const lone[] = {"\\uD800", "\\uDBFF\\u0041", "\\uDC00",
                                       "\\uDFFF", "\\uD800\\uD800", "x\\uDE00y"};
    for (size_t i = 0; i < sizeof(lone) / sizeof(lone[0]); i++) {
        int len = snprintf(text, sizeof(text), "\"%s\"", lone[i]);
        j = NULL;
        if (wh_json_parse(text, (size_t)len, &j, errbuf) == WH_OK)
            fail_msg("%s parsed to \"%s\"", lone[i], j->valuestring);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_long),    cmocka_unit_test(test_parse_long_rejects),
        cmocka_unit_test(test_parse_ok),      cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_getters),       cmocka_unit_test(test_add_set_ownership),
        cmocka_unit_test(test_repair_utf8),   cmocka_unit_test(test_escapes_decode_to_utf8),
        cmocka_unit_test(test_write_numbers), cmocka_unit_test(test_json_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
