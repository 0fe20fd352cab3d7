/* test_term.c: terminal-safe text (wh/term.h): every control byte and
 * character shown as a visible escape, the rest kept; JSON text kept JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wh/buf.h"
#include "wh/term.h"

static void check_text(const char *in, size_t n, const char *want)
{
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    assert_int_equal(wh_term_escape(&b, in, n), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), want);
    assert_int_equal(wh_term_escaped_len(in, n), strlen(want));
    wh_buf_free(&b);
}

#define TEXT(in, want) check_text(in, sizeof(in) - 1, want)

static void test_text(void **unused)
{
    (void)unused;
    TEXT("tpu-worker-0", "tpu-worker-0");
    TEXT("", "");
    TEXT("caf\xc3\xa9 \xe6\x97\xa5", "caf\xc3\xa9 \xe6\x97\xa5"); /* UTF-8 kept */
    TEXT("a\x1b[2Jb", "a\\x1b[2Jb");                              /* ESC: clear screen */
    TEXT("\x1b]0;title\x07", "\\x1b]0;title\\x07");               /* OSC title, BEL */
    TEXT("x\ny\r\tz\x7f", "x\\ny\\r\\tz\\x7f");
    TEXT("\xc2\x9b"
         "31m",
         "\\u{009b}31m");          /* C1 CSI */
    TEXT("\xc2\x85", "\\u{0085}"); /* C1 NEL */
    TEXT("\xc2\xa0", "\xc2\xa0");  /* U+00A0 is no control */
    TEXT("ab\xe2\x80\xae"
         "cd",
         "ab\\u{202e}cd"); /* RTL override */
    TEXT("\xe2\x81\xa6\xe2\x80\xa8", "\\u{2066}\\u{2028}");
    TEXT("\x9b"
         "31m\xff",
         "\\x9b31m\\xff");          /* bytes that are no UTF-8 */
    TEXT("\xe2\x80", "\\xe2\\x80"); /* cut short */
    TEXT("a\\x1b", "a\\\\x1b");     /* an escape cannot be forged */
    check_text("a\0b", 3, "a\\x00b");
}

static void check_json(const char *in, const char *want)
{
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    assert_int_equal(wh_term_json(&b, in, strlen(in)), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), want);
    wh_buf_free(&b);
}

static void test_json(void **unused)
{
    (void)unused;
    check_json("{\"a\":\"x\\u001b[2J\\\\\"}", "{\"a\":\"x\\u001b[2J\\\\\"}"); /* kept */
    check_json("{\"a\":\"\x7f\xc2\x9b\xe2\x80\xae\xc3\xa9\"}",
               "{\"a\":\"\\u007f\\u009b\\u202e\xc3\xa9\"}");
    check_json("[\"\xff\"]", "[\"\\ufffd\"]");
    check_json("{\n\t\"a\": 1\n}", "{\n\t\"a\": 1\n}"); /* white space between tokens */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
