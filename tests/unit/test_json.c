/* test_json.c: cJSON helpers, wh_json_parse and wh_parse_long. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../testutil.h"
#include "wh/json.h"

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
    long_bad("9223372036854775808");  /* LONG_MAX + 1 */
    long_bad("99999999999999999999999");
    long_bad("-99999999999999999999999");
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
    assert_null(wh_json_str(j, "num"));              /* not a string */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_long),   cmocka_unit_test(test_parse_long_rejects),
        cmocka_unit_test(test_parse_ok),     cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_getters),      cmocka_unit_test(test_add_set_ownership),
        cmocka_unit_test(test_repair_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
