/* test_hex.c: hexadecimal digit values (one helper for the request-path and
 * YAML integer parsers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "wh/hex.h"

static void test_digits(void **unused)
{
    (void)unused;
    const char *digits = "0123456789abcdef", *upper = "ABCDEF";
    for (int i = 0; i < 16; i++)
        assert_int_equal(wh_hex_digit(digits[i]), i);
    for (int i = 0; i < 6; i++)
        assert_int_equal(wh_hex_digit(upper[i]), 10 + i);
}

static void test_not_digits(void **unused)
{
    (void)unused;
    int accepted = 0;
    for (int c = -128; c < 128; c++)
        accepted += wh_hex_digit((char)c) >= 0;
    assert_int_equal(accepted, 22); /* 10 + 6 + 6, and nothing else */
    assert_int_equal(wh_hex_digit('g'), -1);
    assert_int_equal(wh_hex_digit('G'), -1);
    assert_int_equal(wh_hex_digit('/'), -1); /* '0' - 1 */
    assert_int_equal(wh_hex_digit(':'), -1); /* '9' + 1 */
    assert_int_equal(wh_hex_digit('@'), -1); /* 'A' - 1 */
    assert_int_equal(wh_hex_digit('`'), -1); /* 'a' - 1 */
    assert_int_equal(wh_hex_digit('\0'), -1);
    assert_int_equal(wh_hex_digit((char)0xe0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digits),
        cmocka_unit_test(test_not_digits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
