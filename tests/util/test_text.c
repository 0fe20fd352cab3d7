/* test_text.c: text in fixed arrays without printf: the bytes snprintf
 * writes, cut where snprintf cuts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "wh/text.h"

static void test_as_snprintf(void **unused)
{
    (void)unused;
    static const long values[] = {0, 7, -7, 10, 99, 100, -100, 123456789, LONG_MAX, LONG_MIN};
    static const char *const words[] = {"", "g", "tpu-group", "0123456789012345678901234567"};
    static const size_t caps[] = {1, 2, 5, 12, 30, 64};
    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
        for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
            for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
                char want[64], got[65];
                memset(got, 'X', sizeof(got));
                snprintf(want, caps[c], "%s-%ld-%ld", words[w], values[v], values[v] / 3);
                struct wh_text t;
                wh_text_init(&t, got, caps[c]);
                wh_text_add(&t, words[w]);
                wh_text_addn(&t, "-x", 1);
                wh_text_addl(&t, values[v]);
                wh_text_add(&t, "-");
                wh_text_addl(&t, values[v] / 3);
                if (strcmp(got, want))
                    fail_msg("cap %zu: got \"%s\", want \"%s\"", caps[c], got, want);
                assert_int_equal(t.len, strlen(want));
                assert_int_equal(got[caps[c]], 'X'); /* nothing past the array */
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_as_snprintf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
