/* test_utf8.c: UTF-8 validation and character-boundary cuts (issue 10:
 * "%.64s" cut a character in half and the answer was not UTF-8). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "wh/utf8.h"

static void test_char_len(void **unused)
{
    (void)unused;
    assert_int_equal(wh_utf8_char_len("a", 1), 1);
    assert_int_equal(wh_utf8_char_len("\xc3\xa9", 2), 2);         /* é */
    assert_int_equal(wh_utf8_char_len("\xe2\x82\xac", 3), 3);     /* € */
    assert_int_equal(wh_utf8_char_len("\xf0\x9f\x98\x80", 4), 4); /* 😀 */
    assert_int_equal(wh_utf8_char_len("\xc2\x85", 2), 2);         /* U+0085, a C1 control */
    /* not characters */
    assert_int_equal(wh_utf8_char_len("", 0), 0);
    assert_int_equal(wh_utf8_char_len("\x80", 1), 0);             /* stray continuation */
    assert_int_equal(wh_utf8_char_len("\xc0\xaf", 2), 0);         /* overlong '/' */
    assert_int_equal(wh_utf8_char_len("\xe0\x80\xaf", 3), 0);     /* overlong */
    assert_int_equal(wh_utf8_char_len("\xed\xa0\x80", 3), 0);     /* surrogate U+D800 */
    assert_int_equal(wh_utf8_char_len("\xf4\x90\x80\x80", 4), 0); /* past U+10FFFF */
    assert_int_equal(wh_utf8_char_len("\xff", 1), 0);
    assert_int_equal(wh_utf8_char_len("\xe2\x82\xac", 2), 0); /* cut short */
    assert_int_equal(wh_utf8_char_len("\xe2\x82x", 3), 0);
}

static void test_cut(void **unused)
{
    (void)unused;
    assert_int_equal(wh_utf8_cut("abc", 64), 3);
    assert_int_equal(wh_utf8_cut("abc", 3), 3);
    assert_int_equal(wh_utf8_cut("abcd", 3), 3);
    assert_int_equal(wh_utf8_cut("", 3), 0);
    /* "aé€" = 61 c3a9 e282ac: every cut inside a character backs off */
    const char *s = "a\xc3\xa9\xe2\x82\xac";
    size_t want[] = {0, 1, 1, 3, 3, 3, 6, 6};
    for (size_t max = 0; max < sizeof(want) / sizeof(want[0]); max++)
        assert_int_equal(wh_utf8_cut(s, max), want[max]);
    /* a 4-byte character cut after each of its bytes */
    const char *e = "\xf0\x9f\x98\x80!";
    for (size_t max = 0; max < 4; max++)
        assert_int_equal(wh_utf8_cut(e, max), 0);
    assert_int_equal(wh_utf8_cut(e, 4), 4);
    /* bytes that are not UTF-8 are cut where asked (nothing to keep whole) */
    assert_int_equal(wh_utf8_cut("\x80\x80\x80\x80\x80", 3), 3);
    /* the "%.*s" use: 64 bytes of "é" cut to 64 bytes is 32 whole ones; 63 gives 31 */
    char many[200] = "";
    for (int i = 0; i < 60; i++)
        strcat(many, "\xc3\xa9");
    assert_int_equal(wh_utf8_cut(many, 64), 64);
    assert_int_equal(wh_utf8_cut(many, 63), 62);
    char out[80];
    snprintf(out, sizeof(out), "%.*s", (int)wh_utf8_cut(many, 63), many);
    assert_int_equal(strlen(out), 62);
}

/* What snprintf(buf, size, "%s", src) leaves: at most size - 1 bytes. */
static void cut_copy(char *buf, size_t size, const char *src)
{
    size_t n = strlen(src) < size - 1 ? strlen(src) : size - 1;
    memcpy(buf, src, n);
    buf[n] = '\0';
}

static void test_trim_cut(void **unused)
{
    (void)unused;
    char buf[8];
    /* cut "abcde€" after the first byte of € */
    cut_copy(buf, sizeof(buf), "abcdef\xe2\x82\xac");
    assert_int_equal(strlen(buf), 7);
    wh_utf8_trim_cut(buf, sizeof(buf));
    assert_string_equal(buf, "abcdef");
    cut_copy(buf, sizeof(buf), "abcd\xe2\x82\xac!");
    assert_int_equal(strlen(buf), 7);
    wh_utf8_trim_cut(buf, sizeof(buf));
    assert_string_equal(buf, "abcd\xe2\x82\xac"); /* whole: kept */
    cut_copy(buf, sizeof(buf), "abcde\xe2\x82\xac");
    wh_utf8_trim_cut(buf, sizeof(buf));
    assert_string_equal(buf, "abcde");
    cut_copy(buf, sizeof(buf), "ab");
    wh_utf8_trim_cut(buf, sizeof(buf));
    assert_string_equal(buf, "ab");
    wh_utf8_trim_cut(buf, 0); /* nothing to do, no write */
}

static void test_is_ascii(void **unused)
{
    (void)unused;
    char s[40];
    memset(s, 'a', sizeof(s));
    assert_true(wh_utf8_is_ascii(s, sizeof(s)));
    assert_true(wh_utf8_is_ascii(s, 0));
    /* A high byte at every position: in a whole word and in the tail. */
    for (size_t i = 0; i < sizeof(s); i++) {
        s[i] = '\x80';
        assert_false(wh_utf8_is_ascii(s, sizeof(s)));
        assert_true(wh_utf8_is_ascii(s, i)); /* stops before it */
        s[i] = '\x7f';
        assert_true(wh_utf8_is_ascii(s, sizeof(s)));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_char_len),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_trim_cut),
        cmocka_unit_test(test_is_ascii),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
