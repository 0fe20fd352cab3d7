/* test_buf.c: struct wh_buf (bounds, failed appends, printf, JSON escaping). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/buf.h"

static void test_empty(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 16);
    assert_string_equal(wh_buf_ptr(&b), "");
    assert_int_equal(wh_buf_len(&b), 0);
    assert_null(b.ptr); /* init allocates nothing */
    size_t len = 99;
    char *p = wh_buf_take(&b, &len);
    assert_non_null(p);
    assert_string_equal(p, "");
    assert_int_equal(len, 0);
    free(p);
    wh_buf_free(&b);
    wh_buf_free(NULL); /* NULL-safe */
}

static void test_append_and_take(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 1024);
    assert_int_equal(wh_buf_add(&b, "abc"), WH_OK);
    assert_int_equal(wh_buf_addc(&b, '-'), WH_OK);
    assert_int_equal(wh_buf_addn(&b, "xyz123", 3), WH_OK);
    assert_int_equal(wh_buf_addn(&b, NULL, 0), WH_OK);
    assert_int_equal(wh_buf_addf(&b, "/%d/%s", 42, "q"), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), "abc-xyz/42/q");
    assert_int_equal(wh_buf_len(&b), 12);
    size_t len;
    char *p = wh_buf_take(&b, &len);
    assert_string_equal(p, "abc-xyz/42/q");
    assert_int_equal(len, 12);
    free(p);
    /* the buffer is empty and reusable after take */
    assert_int_equal(wh_buf_len(&b), 0);
    assert_string_equal(wh_buf_ptr(&b), "");
    assert_int_equal(wh_buf_add(&b, "again"), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), "again");
    wh_buf_free(&b);
}

static void test_reset_keeps_memory(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 1024);
    assert_int_equal(wh_buf_add(&b, "hello"), WH_OK);
    char *before = b.ptr;
    wh_buf_reset(&b);
    assert_int_equal(wh_buf_len(&b), 0);
    assert_string_equal(wh_buf_ptr(&b), "");
    assert_ptr_equal(b.ptr, before);
    assert_int_equal(wh_buf_add(&b, "x"), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), "x");
    wh_buf_free(&b);
}

static void test_bounds_exact_fit(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 8);
    assert_int_equal(wh_buf_add(&b, "12345678"), WH_OK); /* max counts bytes, not the NUL */
    assert_string_equal(wh_buf_ptr(&b), "12345678");
    assert_int_equal(wh_buf_addn(&b, "", 0), WH_OK);
    wh_buf_free(&b);
}

static void test_failed_append_frees(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 8);
    assert_int_equal(wh_buf_add(&b, "1234"), WH_OK);
    assert_int_equal(wh_buf_add(&b, "56789"), WH_ERR_TOOBIG);
    /* freed and empty, still usable (ASan checks nothing is left behind) */
    assert_null(b.ptr);
    assert_int_equal(wh_buf_len(&b), 0);
    assert_string_equal(wh_buf_ptr(&b), "");
    assert_int_equal(wh_buf_add(&b, "ok"), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), "ok");
    assert_int_equal(wh_buf_addc(&b, 'x'), WH_OK);
    assert_int_equal(wh_buf_add(&b, "123456"), WH_ERR_TOOBIG);
    assert_null(b.ptr);
    wh_buf_free(&b);
}

static void test_reserve(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 100);
    assert_int_equal(wh_buf_reserve(&b, 100), WH_OK);
    assert_true(b.cap >= 101);
    assert_int_equal(wh_buf_add(&b, "a"), WH_OK);
    assert_int_equal(wh_buf_reserve(&b, 100), WH_ERR_TOOBIG);
    assert_null(b.ptr);
    /* a request whose size would overflow is refused, not wrapped */
    assert_int_equal(wh_buf_reserve(&b, (size_t)-1), WH_ERR_TOOBIG);
    wh_buf_free(&b);
}

/* Issue 10: a reserve on an empty buffer allocated without writing the NUL,
 * so wh_buf_ptr() read whatever the heap held (an earlier request's bytes).
 * Each size first gets a block of that size filled with 'X' and freed, so
 * that the allocator hands the stale bytes back to the reserve. */
static void test_reserve_keeps_nul(void **unused)
{
    (void)unused;
    for (size_t size = 64; size <= 8192; size *= 2) {
        char *stale = malloc(size);
        assert_non_null(stale);
        memset(stale, 'X', size);
        free(stale);
        struct wh_buf b;
        wh_buf_init(&b, 1 << 20);
        assert_int_equal(wh_buf_reserve(&b, size - 1), WH_OK);
        assert_non_null(b.ptr);
        assert_string_equal(wh_buf_ptr(&b), "");
        assert_int_equal(wh_buf_len(&b), 0);
        char *taken = wh_buf_take(&b, NULL);
        assert_string_equal(taken, "");
        free(taken);
    }
}

static void test_addf_long(void **unused)
{
    (void)unused;
    char big[5000];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    assert_int_equal(wh_buf_add(&b, "<"), WH_OK);
    /* longer than the 256-byte fast path */
    assert_int_equal(wh_buf_addf(&b, "%s|%d|%s", big, 7, big), WH_OK);
    assert_int_equal(wh_buf_addc(&b, '>'), WH_OK);
    assert_int_equal(wh_buf_len(&b), 1 + 4999 + 3 + 4999 + 1);
    const char *p = wh_buf_ptr(&b);
    assert_int_equal(p[0], '<');
    assert_memory_equal(p + 1, big, 4999);
    assert_memory_equal(p + 5000, "|7|", 3);
    assert_memory_equal(p + 5003, big, 4999);
    assert_string_equal(p + 10002, ">");
    wh_buf_free(&b);
    /* exactly 255 and 256 characters: the edge of the stack buffer */
    for (int n = 254; n <= 258; n++) {
        wh_buf_init(&b, 1024);
        assert_int_equal(wh_buf_addf(&b, "%.*s", n, big), WH_OK);
        assert_int_equal(wh_buf_len(&b), (size_t)n);
        assert_int_equal(strlen(wh_buf_ptr(&b)), (size_t)n);
        wh_buf_free(&b);
    }
}

static void test_addf_over_max(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 300);
    assert_int_equal(wh_buf_add(&b, "x"), WH_OK);
    assert_int_equal(wh_buf_addf(&b, "%0400d", 1), WH_ERR_TOOBIG);
    assert_null(b.ptr);
    assert_int_equal(wh_buf_addf(&b, "%s", "short"), WH_OK);
    assert_int_equal(wh_buf_addf(&b, "%0100d", 2), WH_OK);
    assert_int_equal(wh_buf_addf(&b, "%0200d", 3), WH_ERR_TOOBIG);
    assert_int_equal(wh_buf_len(&b), 0);
    wh_buf_free(&b);
}

/* in escaped is want, and as a whole JSON string "want", after a prefix
 * (so that the string does not start the buffer). */
static void escaped(const char *in, size_t n, const char *want)
{
    struct wh_buf b;
    wh_buf_init(&b, 4096);
    assert_int_equal(wh_buf_add_json_escaped(&b, in, n), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), want);
    wh_buf_reset(&b);
    assert_int_equal(wh_buf_add(&b, "x:"), WH_OK);
    assert_int_equal(wh_buf_add_json_string(&b, in, n), WH_OK);
    assert_int_equal(wh_buf_len(&b), 2 + strlen(want) + 2);
    assert_memory_equal(wh_buf_ptr(&b), "x:\"", 3);
    assert_memory_equal(wh_buf_ptr(&b) + 3, want, strlen(want));
    assert_string_equal(wh_buf_ptr(&b) + 3 + strlen(want), "\"");
    wh_buf_free(&b);
}

static void test_json_escaping(void **unused)
{
    (void)unused;
    escaped("plain text", 10, "plain text");
    escaped("", 0, "");
    escaped("a\"b\\c", 5, "a\\\"b\\\\c");
    escaped("\n\r\t\b\f", 5, "\\n\\r\\t\\b\\f");
    escaped("\x01\x1f x", 4, "\\u0001\\u001f x");
    escaped("a\0b", 3, "a\\u0000b"); /* n, not strlen, bounds the input */
    escaped("/slash/ and \x7f", 13, "/slash/ and \x7f");
    escaped("h\xc3\xa9llo \xe2\x82\xac", 10, "h\xc3\xa9llo \xe2\x82\xac"); /* UTF-8 untouched */
    escaped("abcdef", 3, "abc");
}

/* One byte to escape at every position of a 120-byte run: each of the scan
 * widths (32 bytes with AVX2 for runs of 64 or more, 16, 8, one) finds it,
 * and the run after it is copied by the others. */
static void test_json_escaping_every_position(void **unused)
{
    (void)unused;
    static const struct {
        char c;
        const char *esc;
    } special[] = {{'"', "\\\""},
                   {'\\', "\\\\"},
                   {'\n', "\\n"},
                   {'\x01', "\\u0001"},
                   {'\xff', "\\ufffd"}};
    for (size_t k = 0; k < sizeof(special) / sizeof(special[0]); k++) {
        for (size_t i = 0; i < 120; i++) {
            char in[120], want[140];
            memset(in, 'a', sizeof(in));
            in[i] = special[k].c;
            snprintf(want, sizeof(want), "%.*s%s%.*s", (int)i, in, special[k].esc,
                     (int)(sizeof(in) - i - 1), in + i + 1);
            escaped(in, sizeof(in), want);
        }
    }
}

static void test_json_escaping_round_trip(void **unused)
{
    (void)unused;
    char all[256];
    for (int i = 0; i < 255; i++)
        all[i] = (char)(i + 1);
    all[255] = '\0';
    struct wh_buf b;
    wh_buf_init(&b, 4096);
    assert_int_equal(wh_buf_addc(&b, '"'), WH_OK);
    assert_int_equal(wh_buf_add_json_escaped(&b, all, 127), WH_OK); /* ASCII 1..127 */
    assert_int_equal(wh_buf_addc(&b, '"'), WH_OK);
    cJSON *j = wh_test_parse(wh_buf_ptr(&b));
    assert_true(cJSON_IsString(j));
    assert_int_equal(strlen(j->valuestring), 127);
    assert_memory_equal(j->valuestring, all, 127);
    cJSON_Delete(j);
    wh_buf_free(&b);
}

/* Issue 10: bytes that are not UTF-8 were echoed into answers; each becomes
 * U+FFFD (as Go's encoding/json writes it), whole characters stay, including
 * ones that straddle the 8-byte fast path. */
static void test_json_escaping_invalid_utf8(void **unused)
{
    (void)unused;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"caf\xc3\xa9", "caf\xc3\xa9"},
        {"\xff", "\\ufffd"},
        {"a\x80"
         "b",
         "a\\ufffdb"},
        {"\xc3", "\\ufffd"},                       /* cut short at the end */
        {"\xe2\x82x", "\\ufffd\\ufffdx"},          /* cut short inside */
        {"\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd"}, /* surrogate */
        {"\xc0\xaf\"", "\\ufffd\\ufffd\\\""},      /* overlong, then an escape */
        {"1234567\xe2\x82\xac"
         "89",
         "1234567\xe2\x82\xac"
         "89"}, /* € across a word edge */
        {"12345678\xf0\x9f\x98\x80", "12345678\xf0\x9f\x98\x80"},
        {"\xc2\x85", "\xc2\x85"}, /* U+0085 is a character */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct wh_buf b;
        wh_buf_init(&b, 4096);
        assert_int_equal(wh_buf_add_json_escaped(&b, cases[i].in, strlen(cases[i].in)), WH_OK);
        assert_string_equal(wh_buf_ptr(&b), cases[i].out);
        wh_buf_free(&b);
    }
}

static void test_json_escaping_bounded(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 5);
    assert_int_equal(wh_buf_add_json_escaped(&b, "\"\"\"", 3), WH_ERR_TOOBIG);
    assert_null(b.ptr);
    wh_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_append_and_take),
        cmocka_unit_test(test_reset_keeps_memory),
        cmocka_unit_test(test_bounds_exact_fit),
        cmocka_unit_test(test_failed_append_frees),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_reserve_keeps_nul),
        cmocka_unit_test(test_addf_long),
        cmocka_unit_test(test_addf_over_max),
        cmocka_unit_test(test_json_escaping),
        cmocka_unit_test(test_json_escaping_round_trip),
        cmocka_unit_test(test_json_escaping_every_position),
        cmocka_unit_test(test_json_escaping_invalid_utf8),
        cmocka_unit_test(test_json_escaping_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
