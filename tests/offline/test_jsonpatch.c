/* test_jsonpatch.c: the RFC 6902 applier (operations, arrays, "-", RFC 6901
 * escapes, all-or-nothing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/jsonpatch.h"

/* Apply patch to doc; returns the resulting document text (malloc'd) or NULL
 * on failure, in which case the document must be unchanged. */
static char *apply(const char *doc_text, const char *patch_text, char *errbuf)
{
    cJSON *doc = wh_test_parse(doc_text), *patch = wh_test_parse(patch_text);
    cJSON *before = doc;
    char *orig = cJSON_PrintUnformatted(doc);
    errbuf[0] = '\0';
    enum wh_err err = wh_jsonpatch_apply(&doc, patch, errbuf);
    char *out = cJSON_PrintUnformatted(doc);
    char *ret = NULL;
    if (err) {
        assert_ptr_equal(doc, before); /* all-or-nothing */
        assert_string_equal(out, orig);
        assert_true(errbuf[0] != '\0');
    } else {
        ret = strdup(out);
    }
    cJSON_free(orig);
    cJSON_free(out);
    cJSON_Delete(doc);
    cJSON_Delete(patch);
    return ret;
}

static void ok(const char *doc, const char *patch, const char *want)
{
    char errbuf[WH_ERRBUF_LEN];
    char *got = apply(doc, patch, errbuf);
    if (!got)
        fail_msg("patch %s on %s failed: %s", patch, doc, errbuf);
    if (strcmp(got, want))
        fail_msg("patch %s on %s gave %s, want %s", patch, doc, got, want);
    free(got);
}

static void bad(const char *doc, const char *patch, const char *why)
{
    char errbuf[WH_ERRBUF_LEN];
    char *got = apply(doc, patch, errbuf);
    if (got)
        fail_msg("patch %s on %s applied: %s", patch, doc, got);
    if (why && !strstr(errbuf, why))
        fail_msg("patch %s: error \"%s\" does not mention \"%s\"", patch, errbuf, why);
}

static void test_add(void **unused)
{
    (void)unused;
    ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2}]", "{\"a\":1,\"b\":2}");
    ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":[3]}]", "{\"a\":[3]}");
    ok("{\"a\":{}}", "[{\"op\":\"add\",\"path\":\"/a/b\",\"value\":{\"c\":null}}]",
       "{\"a\":{\"b\":{\"c\":null}}}");
    ok("{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/-\",\"value\":3}]", "{\"a\":[1,2,3]}");
    ok("{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/2\",\"value\":3}]", "{\"a\":[1,2,3]}");
    ok("{\"a\":[]}", "[{\"op\":\"add\",\"path\":\"/a/0\",\"value\":3}]", "{\"a\":[3]}");
    ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"\",\"value\":[true]}]", "[true]");
    ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/\",\"value\":2}]", "{\"a\":1,\"\":2}");
    bad("{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/3\",\"value\":3}]", "operation 0");
    bad("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":3}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a/b\",\"value\":3}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\"}]", NULL); /* no value */
    bad("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"b\",\"value\":1}]", NULL);
    bad("{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/01\",\"value\":1}]", NULL);
    bad("{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/-1\",\"value\":1}]", NULL);
}

/* Inserting inside an array (Debian 12's cJSON_InsertItemInArray refuses new
 * items past index 0, so the applier must not rely on it). */
static void test_add_array_index(void **unused)
{
    (void)unused;
    ok("{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/0\",\"value\":0}]", "{\"a\":[0,1,2]}");
    ok("{\"a\":[1,3]}", "[{\"op\":\"add\",\"path\":\"/a/1\",\"value\":2}]", "{\"a\":[1,2,3]}");
    ok("{\"a\":[1,2,4]}",
       "[{\"op\":\"add\",\"path\":\"/a/2\",\"value\":3},"
       "{\"op\":\"add\",\"path\":\"/a/1\",\"value\":{\"x\":1}}]",
       "{\"a\":[1,{\"x\":1},2,3,4]}");
}

static void test_remove(void **unused)
{
    (void)unused;
    ok("{\"a\":1,\"b\":2}", "[{\"op\":\"remove\",\"path\":\"/a\"}]", "{\"b\":2}");
    ok("{\"a\":[1,2,3]}", "[{\"op\":\"remove\",\"path\":\"/a/1\"}]", "{\"a\":[1,3]}");
    ok("{\"a\":[1,2,3]}",
       "[{\"op\":\"remove\",\"path\":\"/a/0\"},{\"op\":\"remove\",\"path\":\"/a/0\"}]",
       "{\"a\":[3]}");
    bad("{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/b\"}]", NULL);
    bad("{\"a\":[1]}", "[{\"op\":\"remove\",\"path\":\"/a/1\"}]", NULL);
    bad("{\"a\":[1]}", "[{\"op\":\"remove\",\"path\":\"/a/-\"}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"\"}]", NULL);
}

static void test_replace(void **unused)
{
    (void)unused;
    ok("{\"a\":1,\"b\":2}", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":{\"x\":1}}]",
       "{\"a\":{\"x\":1},\"b\":2}");
    ok("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":5}]", "5");
    bad("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":2}]", NULL);
    bad("{\"a\":[1]}", "[{\"op\":\"replace\",\"path\":\"/a/1\",\"value\":2}]", NULL);
    bad("{\"a\":[1]}", "[{\"op\":\"replace\",\"path\":\"/a/-\",\"value\":2}]", NULL);
}

/* RFC 6902 §4.3: replace of an array element replaces it (the engine emits
 * such replaces for env entries, D5). */
static void test_replace_array_element(void **unused)
{
    (void)unused;
    ok("{\"a\":[1,2,3]}", "[{\"op\":\"replace\",\"path\":\"/a/1\",\"value\":9}]", "{\"a\":[1,9,3]}");
    ok("{\"a\":[1,2,3]}",
       "[{\"op\":\"replace\",\"path\":\"/a/0\",\"value\":0},"
       "{\"op\":\"replace\",\"path\":\"/a/2\",\"value\":[]}]",
       "{\"a\":[0,2,[]]}");
    ok("{\"e\":[{\"name\":\"A\",\"value\":\"\"}]}",
       "[{\"op\":\"replace\",\"path\":\"/e/0\",\"value\":{\"name\":\"A\",\"value\":\"1\"}}]",
       "{\"e\":[{\"name\":\"A\",\"value\":\"1\"}]}");
}

static void test_move_copy(void **unused)
{
    (void)unused;
    ok("{\"a\":1,\"b\":{}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/b/c\"}]",
       "{\"b\":{\"c\":1}}");
    ok("{\"a\":[1,2,3]}", "[{\"op\":\"move\",\"from\":\"/a/0\",\"path\":\"/a/-\"}]",
       "{\"a\":[2,3,1]}");
    ok("{\"a\":{\"x\":[1]}}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/b\"}]",
       "{\"a\":{\"x\":[1]},\"b\":{\"x\":[1]}}");
    ok("{\"a\":[1,2]}", "[{\"op\":\"copy\",\"from\":\"/a/1\",\"path\":\"/a/-\"}]",
       "{\"a\":[1,2,2]}");
    bad("{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/c\"}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/x\",\"path\":\"/b\"}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/b\"}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"copy\",\"path\":\"/b\"}]", NULL); /* no from */
}

static void test_test_op(void **unused)
{
    (void)unused;
    ok("{\"a\":{\"b\":[1,\"x\"]}}", "[{\"op\":\"test\",\"path\":\"/a/b\",\"value\":[1,\"x\"]}]",
       "{\"a\":{\"b\":[1,\"x\"]}}");
    ok("{\"a\":[1,2]}", "[{\"op\":\"test\",\"path\":\"/a/1\",\"value\":2}]", "{\"a\":[1,2]}");
    bad("{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":2}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":\"1\"}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/b\",\"value\":null}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\"}]", NULL);
}

static void test_escapes(void **unused)
{
    (void)unused;
    ok("{\"a/b\":1,\"m~n\":2}", "[{\"op\":\"replace\",\"path\":\"/a~1b\",\"value\":3}]",
       "{\"a/b\":3,\"m~n\":2}");
    ok("{\"a/b\":1,\"m~n\":2}", "[{\"op\":\"remove\",\"path\":\"/m~0n\"}]", "{\"a/b\":1}");
    /* ~01 is "~1" literally, not "/" */
    ok("{}", "[{\"op\":\"add\",\"path\":\"/~01\",\"value\":1}]", "{\"~1\":1}");
    ok("{\"labels\":{}}", "[{\"op\":\"add\",\"path\":\"/labels/ray.io~1cluster\",\"value\":\"c\"}]",
       "{\"labels\":{\"ray.io/cluster\":\"c\"}}");
    bad("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/~2\",\"value\":1}]", NULL);
    bad("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a~\",\"value\":1}]", NULL);
}

static void test_all_or_nothing(void **unused)
{
    (void)unused;
    bad("{\"a\":[1,2],\"b\":1}",
        "[{\"op\":\"add\",\"path\":\"/c\",\"value\":1},{\"op\":\"remove\",\"path\":\"/b\"},"
        "{\"op\":\"add\",\"path\":\"/a/-\",\"value\":3},{\"op\":\"remove\",\"path\":\"/nope\"}]",
        "patch operation 3 (remove /nope)");
    bad("{\"a\":1}",
        "[{\"op\":\"add\",\"path\":\"/b\",\"value\":1},{\"op\":\"test\",\"path\":\"/b\",\"value\":2}]",
        "operation 1 (test /b)");
}

static void test_malformed(void **unused)
{
    (void)unused;
    bad("{}", "{\"op\":\"add\",\"path\":\"/a\",\"value\":1}", "array");
    bad("{}", "[{\"op\":\"frobnicate\",\"path\":\"/a\",\"value\":1}]", NULL);
    bad("{}", "[{\"path\":\"/a\",\"value\":1}]", NULL);
    bad("{}", "[{\"op\":\"add\",\"value\":1}]", NULL);
    bad("{}", "[{\"op\":\"add\",\"path\":5,\"value\":1}]", NULL);
    bad("{}", "[5]", NULL);
    ok("{\"a\":1}", "[]", "{\"a\":1}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_add_array_index),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_replace),
        cmocka_unit_test(test_replace_array_element),
        cmocka_unit_test(test_move_copy),
        cmocka_unit_test(test_test_op),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_all_or_nothing),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
