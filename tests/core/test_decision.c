/* test_decision.c: decisions (denial empties the patch, warnings cut to
 * WH_WARNING_MAX characters, notes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "wh/decision.h"
#include "wh/patch.h"

static void test_init_free(void **unused)
{
    (void)unused;
    struct wh_decision d;
    wh_decision_init(&d);
    assert_true(d.allowed);
    assert_null(d.message);
    assert_int_equal(wh_buf_len(&d.patch), 0);
    assert_null(d.warnings);
    assert_false(d.assigned);
    wh_decision_free(&d);
    assert_true(d.allowed); /* left initialised */
    wh_decision_free(&d);   /* twice is fine */
    wh_decision_free(NULL);
}

static void test_deny(void **unused)
{
    (void)unused;
    struct wh_decision d;
    wh_decision_init(&d);
    assert_int_equal(wh_patch_add_string(&d, "add", "/spec/hostname", "h"), WH_OK);
    assert_int_equal(d.n_ops, 1);
    d.assigned = true;
    assert_int_equal(wh_decision_deny(&d, "Pod \"%s\": %s is %d", "ns/p", "x", 3), WH_OK);
    assert_false(d.allowed);
    assert_string_equal(d.message, "Pod \"ns/p\": x is 3");
    assert_int_equal(wh_buf_len(&d.patch), 0); /* never a partial patch with a denial */
    assert_int_equal(d.n_ops, 0);
    assert_false(d.assigned);
    /* a second denial replaces the message */
    assert_int_equal(wh_decision_deny(&d, "%s", "second"), WH_OK);
    assert_string_equal(d.message, "second");
    /* long messages are kept whole */
    char big[3000];
    memset(big, 'm', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(wh_decision_deny(&d, "%s!", big), WH_OK);
    assert_int_equal(strlen(d.message), sizeof(big));
    wh_decision_free(&d);
}

/* Issue 10: a message over the limit made the whole review fail (HTTP 400
 * "size limit exceeded"); now it is cut on a character boundary. */
static void test_deny_long_message_cut(void **unused)
{
    (void)unused;
    static char huge[3 * WH_MESSAGE_MAX];
    for (size_t i = 0; i + 2 < sizeof(huge); i += 2)
        memcpy(huge + i, "\xc3\xa9", 2); /* é */
    huge[sizeof(huge) - 1] = '\0';
    for (int shift = 0; shift < 2; shift++) {
        struct wh_decision d;
        wh_decision_init(&d);
        assert_int_equal(wh_decision_deny(&d, "%.*s%s", shift, "x", huge), WH_OK);
        assert_false(d.allowed);
        size_t n = strlen(d.message);
        assert_true(n <= WH_MESSAGE_MAX);
        assert_true(n > WH_MESSAGE_MAX - 20);
        assert_string_equal(d.message + n - strlen(" [message cut]"), " [message cut]");
        /* the kept text ends on a whole é */
        size_t body = n - strlen(" [message cut]");
        assert_int_equal((body - (size_t)shift) % 2, 0);
        assert_int_equal((unsigned char)d.message[body - 1], 0xa9);
        wh_decision_free(&d);
    }
}

static const char *warning(const struct wh_decision *d, int i)
{
    const cJSON *w = cJSON_GetArrayItem(d->warnings, i);
    assert_true(cJSON_IsString(w));
    return w->valuestring;
}

static void test_warnings(void **unused)
{
    (void)unused;
    char text[400];
    struct wh_decision d;
    wh_decision_init(&d);
    assert_int_equal(wh_decision_warn(&d, "short %d", 1), WH_OK);
    /* exactly WH_WARNING_MAX characters: kept as is */
    memset(text, 'a', WH_WARNING_MAX);
    text[WH_WARNING_MAX] = '\0';
    assert_int_equal(wh_decision_warn(&d, "%s", text), WH_OK);
    /* one more: cut to WH_WARNING_MAX with "..." */
    memset(text, 'b', WH_WARNING_MAX + 1);
    text[WH_WARNING_MAX + 1] = '\0';
    assert_int_equal(wh_decision_warn(&d, "%s", text), WH_OK);
    /* much longer */
    memset(text, 'c', 399);
    text[399] = '\0';
    assert_int_equal(wh_decision_warn(&d, "group \"%s\": %s", "g", text), WH_OK);
    assert_int_equal(cJSON_GetArraySize(d.warnings), 4);
    assert_string_equal(warning(&d, 0), "short 1");
    assert_int_equal(strlen(warning(&d, 1)), WH_WARNING_MAX);
    assert_int_equal(strlen(warning(&d, 2)), WH_WARNING_MAX);
    assert_memory_equal(warning(&d, 2) + WH_WARNING_MAX - 3, "...", 3);
    assert_int_equal(warning(&d, 2)[0], 'b');
    assert_int_equal(strlen(warning(&d, 3)), WH_WARNING_MAX);
    assert_memory_equal(warning(&d, 3), "group \"g\": ccc", 14);
    assert_memory_equal(warning(&d, 3) + WH_WARNING_MAX - 3, "...", 3);
    for (int i = 0; i < 4; i++)
        assert_true(strlen(warning(&d, i)) < 120); /* D8: under 120 characters */
    /* a cut never splits a character: 200 "é" cut to whole ones + "..." */
    text[0] = '\0';
    for (int i = 0; i < 100; i++)
        strcat(text, "\xc3\xa9");
    assert_int_equal(wh_decision_warn(&d, "%s", text), WH_OK);
    const char *w = warning(&d, 4);
    size_t wn = strlen(w);
    assert_true(wn <= WH_WARNING_MAX);
    assert_string_equal(w + wn - 3, "...");
    assert_int_equal((wn - 3) % 2, 0);
    assert_int_equal((unsigned char)w[wn - 4], 0xa9);
    /* warnings do not change the verdict */
    assert_true(d.allowed);
    wh_decision_free(&d);
}

static void test_notes(void **unused)
{
    (void)unused;
    struct wh_decision d;
    wh_decision_init(&d);
    assert_int_equal(wh_decision_note(&d, "skipped pod %s", "a"), WH_OK);
    assert_int_equal(wh_decision_note(&d, "n=%d", 2), WH_OK);
    assert_string_equal(wh_buf_ptr(&d.notes), "skipped pod a\nn=2\n");
    wh_decision_free(&d);
}

/* Issue 22: at most WH_WARNINGS_MAX listed, then one line counting the
 * rest, each warning O(1). */
static void test_warnings_capped(void **unused)
{
    (void)unused;
    struct wh_decision d;
    wh_decision_init(&d);
    for (int i = 0; i < 16000; i++)
        assert_int_equal(wh_decision_warn(&d, "warning %d", i), WH_OK);
    assert_int_equal(d.n_warnings, 16000);
    assert_int_equal(cJSON_GetArraySize(d.warnings), WH_WARNINGS_MAX + 1);
    assert_string_equal(warning(&d, 0), "warning 0");
    assert_string_equal(warning(&d, WH_WARNINGS_MAX - 1), "warning 49");
    assert_string_equal(warning(&d, WH_WARNINGS_MAX),
                        "and 15950 more warnings not listed (fix the ones above to see them)");
    assert_true(strlen(warning(&d, WH_WARNINGS_MAX)) <= WH_WARNING_MAX);
    wh_decision_free(&d);
    /* exactly the cap: no extra line; one more: "and 1 more" */
    for (int i = 0; i < WH_WARNINGS_MAX; i++)
        assert_int_equal(wh_decision_warn(&d, "w%d", i), WH_OK);
    assert_int_equal(cJSON_GetArraySize(d.warnings), WH_WARNINGS_MAX);
    char text[300];
    memset(text, 'x', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    assert_int_equal(wh_decision_warn_text(&d, text), WH_OK);
    assert_int_equal(cJSON_GetArraySize(d.warnings), WH_WARNINGS_MAX + 1);
    assert_string_equal(warning(&d, WH_WARNINGS_MAX),
                        "and 1 more warnings not listed (fix the ones above to see them)");
    assert_int_equal(strlen(text), WH_WARNING_MAX); /* cut in place as listed ones are */
    assert_string_equal(text + WH_WARNING_MAX - 3, "...");
    wh_decision_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_free),
        cmocka_unit_test(test_deny),
        cmocka_unit_test(test_deny_long_message_cut),
        cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_warnings_capped),
        cmocka_unit_test(test_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
