/* test_quantity.c: Kubernetes quantities rounded up to whole units. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "wh/quantity.h"

static void q_ok(const char *s, long want)
{
    long v = -12345;
    if (!wh_quantity_ceil_str(s, &v))
        fail_msg("quantity \"%s\" refused", s);
    if (v != want)
        fail_msg("quantity \"%s\" = %ld, want %ld", s, v, want);
    /* the JSON-string form gives the same */
    cJSON *j = cJSON_CreateString(s);
    v = -12345;
    assert_true(wh_quantity_ceil(j, &v));
    assert_int_equal(v, want);
    cJSON_Delete(j);
}

static void q_bad(const char *s)
{
    long v = -12345;
    if (wh_quantity_ceil_str(s, &v))
        fail_msg("quantity \"%s\" accepted (%ld)", s, v);
    cJSON *j = cJSON_CreateString(s);
    assert_false(wh_quantity_ceil(j, &v));
    cJSON_Delete(j);
}

static void test_plain(void **unused)
{
    (void)unused;
    q_ok("4", 4);
    q_ok("0", 0);
    q_ok("+4", 4);
    q_ok("8", 8);
    q_ok("2.0", 2);
    q_ok("1.5", 2);
    q_ok("0.1", 1);
    q_ok(".5", 1);
    q_ok("3.", 3);
}

static void test_suffixes(void **unused)
{
    (void)unused;
    q_ok("500m", 1);
    q_ok("1000m", 1);
    q_ok("1001m", 2);
    q_ok("4000m", 4);
    q_ok("100n", 1);
    q_ok("5u", 1);
    q_ok("1k", 1000);
    q_ok("2M", 2000000);
    q_ok("1Ki", 1024);
    q_ok("2Ki", 2048);
    q_ok("1Mi", 1048576);
    q_ok("0.5Ki", 512);
}

static void test_exponents(void **unused)
{
    (void)unused;
    q_ok("1e3", 1000);
    q_ok("1E3", 1000);
    q_ok("1e+3", 1000);
    q_ok("4e0", 4);
    q_ok("1e-3", 1);
    q_ok("25e-1", 3);
}

static void test_negative_is_zero(void **unused)
{
    (void)unused;
    q_ok("-1", 0);
    q_ok("-500m", 0);
    q_ok("-1e3", 0);
}

static void test_clamped(void **unused)
{
    (void)unused;
    q_ok("1e18", WH_QUANTITY_MAX);
    q_ok("1E", WH_QUANTITY_MAX); /* exa */
    q_ok("9Ei", WH_QUANTITY_MAX);
    q_ok("99999999999999999999", WH_QUANTITY_MAX);
    q_ok("1000000000", WH_QUANTITY_MAX);
    q_ok("999999999", 999999999);
    q_ok("1e9999", WH_QUANTITY_MAX);
}

static void test_garbage(void **unused)
{
    (void)unused;
    q_bad("");
    q_bad("abc");
    q_bad("four");
    q_bad("1x");
    q_bad("1 ");
    q_bad(" 1");
    q_bad("1.5.5");
    q_bad("e3");
    q_bad("1e");
    q_bad("1ee3");
    q_bad("1e3k");
    q_bad("Ki");
    q_bad("1KI");
    q_bad("1ki");
    q_bad("--1");
    q_bad("-");
    q_bad(".");
    q_bad("1,000");
    q_bad("11111111111111111111111111111111111111111"); /* more than 40 digits */
}

static void test_json_numbers(void **unused)
{
    (void)unused;
    long v = -1;
    cJSON *n = cJSON_CreateNumber(4);
    assert_true(wh_quantity_ceil(n, &v));
    assert_int_equal(v, 4);
    cJSON_Delete(n);
    n = cJSON_CreateNumber(0.5);
    assert_true(wh_quantity_ceil(n, &v));
    assert_int_equal(v, 1);
    cJSON_Delete(n);
    n = cJSON_CreateNumber(-3);
    assert_true(wh_quantity_ceil(n, &v));
    assert_int_equal(v, 0);
    cJSON_Delete(n);
    n = cJSON_CreateNumber(1e300);
    assert_true(wh_quantity_ceil(n, &v));
    assert_int_equal(v, WH_QUANTITY_MAX);
    cJSON_Delete(n);
    cJSON *b = cJSON_CreateTrue(), *z = cJSON_CreateNull(), *o = cJSON_CreateObject();
    assert_false(wh_quantity_ceil(b, &v));
    assert_false(wh_quantity_ceil(z, &v));
    assert_false(wh_quantity_ceil(o, &v));
    assert_false(wh_quantity_ceil(NULL, &v));
    cJSON_Delete(b);
    cJSON_Delete(z);
    cJSON_Delete(o);
}

/* The unrounded, unclamped value (memory in bytes for KubeRay's
 * --memory), shared by wh_quantity_ceil_str and the offline pod builder. */
static void test_parse_value(void **unused)
{
    (void)unused;
    double v = 0;
    assert_true(wh_quantity_parse("200Gi", &v));
    assert_true(v == 214748364800.0);
    assert_true(wh_quantity_parse("200G", &v));
    assert_true(v == 2e11);
    assert_true(wh_quantity_parse("1e12", &v)); /* above WH_QUANTITY_MAX: not clamped */
    assert_true(v == 1e12);
    assert_true(wh_quantity_parse("-1.5", &v));
    assert_true(v == -1.5);
    assert_true(wh_quantity_parse("500m", &v));
    assert_true(v > 0.4999 && v < 0.5001);
    assert_false(wh_quantity_parse("1Gb", &v));
    assert_false(wh_quantity_parse("", &v));
    assert_false(wh_quantity_parse("inf", &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),        cmocka_unit_test(test_suffixes),
        cmocka_unit_test(test_exponents),    cmocka_unit_test(test_negative_is_zero),
        cmocka_unit_test(test_clamped),      cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_json_numbers), cmocka_unit_test(test_parse_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
