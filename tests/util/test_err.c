/* test_err.c: error codes and wh_fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wh/err.h"

static void test_strerror(void **unused)
{
    (void)unused;
    assert_string_equal(wh_strerror(WH_OK), "ok");
    assert_string_equal(wh_strerror(WH_ERR_NOMEM), "out of memory");
    for (int i = 0; i < WH_ERR__COUNT; i++) {
        const char *t = wh_strerror((enum wh_err)i);
        assert_non_null(t);
        assert_true(strlen(t) > 0);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(t, wh_strerror((enum wh_err)j));
    }
    assert_string_equal(wh_strerror(WH_ERR__COUNT), "unknown error");
    assert_string_equal(wh_strerror((enum wh_err) - 1), "unknown error");
    assert_string_equal(wh_strerror((enum wh_err)12345), "unknown error");
}

static void test_fail(void **unused)
{
    (void)unused;
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(wh_fail(errbuf, WH_ERR_INVALID, "bad %s: %d", "field", 7), WH_ERR_INVALID);
    assert_string_equal(errbuf, "bad field: 7");
    assert_int_equal(wh_fail(NULL, WH_ERR_IO, "no buffer %d", 1), WH_ERR_IO);
}

static void test_fail_truncates(void **unused)
{
    (void)unused;
    char big[2 * WH_ERRBUF_LEN];
    memset(big, 'e', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    struct {
        char errbuf[WH_ERRBUF_LEN];
        char guard[16];
    } s;
    memset(s.guard, 'G', sizeof(s.guard));
    assert_int_equal(wh_fail(s.errbuf, WH_ERR_TOOBIG, "%s", big), WH_ERR_TOOBIG);
    assert_int_equal(strlen(s.errbuf), WH_ERRBUF_LEN - 1);
    for (size_t i = 0; i < sizeof(s.guard); i++)
        assert_int_equal(s.guard[i], 'G');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_fail),
        cmocka_unit_test(test_fail_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
