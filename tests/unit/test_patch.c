/* test_patch.c: JSON Patch operations and the env writer (D5 one entry per
 * name, D6 no operation for an identical entry, array creation of
 * docs/internals/reference-behaviour.md §2.7). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "../testutil.h"
#include "wh/decision.h"
#include "wh/patch.h"

static void assert_ops(cJSON *ops, const char *want)
{
    char *got = ops ? cJSON_PrintUnformatted(ops) : NULL;
    if (!want) {
        if (got)
            fail_msg("expected no operation, got %s", got);
        return;
    }
    if (!got || strcmp(got, want))
        fail_msg("operations\n got  %s\n want %s", got ? got : "(none)", want);
    cJSON_free(got);
}

static void test_patch_op(void **unused)
{
    (void)unused;
    struct wh_decision d;
    wh_decision_init(&d);
    assert_int_equal(wh_patch_op(&d, "add", "/spec/hostname", cJSON_CreateString("h")), WH_OK);
    assert_int_equal(wh_patch_op(&d, "replace", "/a", cJSON_CreateNumber(1)), WH_OK);
    assert_ops(d.patch, "[{\"op\":\"add\",\"path\":\"/spec/hostname\",\"value\":\"h\"},"
                        "{\"op\":\"replace\",\"path\":\"/a\",\"value\":1}]");
    assert_int_equal(wh_patch_op(&d, "add", "/b", NULL), WH_ERR_NOMEM);
    assert_int_equal(cJSON_GetArraySize(d.patch), 2);
    wh_decision_free(&d);
    assert_int_equal(wh_patch_op(&d, "add", "/b", NULL), WH_ERR_NOMEM);
    assert_null(d.patch);
}

/* Issue 10: a 1.9 KB review made a 46 MB patch. Operations are counted as
 * they are added and refused past WH_PATCH_MAX_BYTES, leaving the patch as it
 * was. */
static void test_patch_op_bounded(void **unused)
{
    (void)unused;
    static char value[64 * 1024];
    memset(value, 'v', sizeof(value) - 1);
    struct wh_decision d;
    wh_decision_init(&d);
    size_t n = 0;
    enum wh_err err;
    while (!(err = wh_patch_op(&d, "add", "/x", cJSON_CreateString(value))))
        n++;
    assert_int_equal(err, WH_ERR_TOOBIG);
    assert_int_equal(n, WH_PATCH_MAX_BYTES / sizeof(value) - 1);
    assert_int_equal(cJSON_GetArraySize(d.patch), n);
    assert_true(d.patch_bytes <= WH_PATCH_MAX_BYTES);
    char *text = cJSON_PrintUnformatted(d.patch);
    assert_non_null(text);
    assert_true(strlen(text) <= WH_PATCH_MAX_BYTES);
    assert_true(strlen(text) + sizeof(value) + 32 > d.patch_bytes); /* the count is close */
    cJSON_free(text);
    /* a small one still fits */
    assert_int_equal(wh_patch_op(&d, "add", "/y", cJSON_CreateString("y")), WH_OK);
    wh_decision_free(&d);
}

static void test_pointer_escape(void **unused)
{
    (void)unused;
    char out[64];
    wh_pointer_escape("ray.io/cluster", out, sizeof(out));
    assert_string_equal(out, "ray.io~1cluster");
    wh_pointer_escape("a~b/c", out, sizeof(out));
    assert_string_equal(out, "a~0b~1c");
    wh_pointer_escape("", out, sizeof(out));
    assert_string_equal(out, "");
    /* bounded: never writes past out_len, always terminated */
    char small[6];
    memset(small, 'X', sizeof(small));
    wh_pointer_escape("//////////", small, sizeof(small));
    assert_true(strlen(small) < sizeof(small));
    wh_pointer_escape("abcdefghij", small, sizeof(small));
    assert_true(strlen(small) < sizeof(small));
}

static cJSON *env_of(const char *json)
{
    return json ? wh_test_parse(json) : NULL;
}

static void test_first_op_creates_array(void **unused)
{
    (void)unused;
    static const char *const empties[] = {NULL, "[]"};
    for (int i = 0; i < 2; i++) {
        cJSON *env = env_of(empties[i]);
        struct wh_decision d;
        wh_decision_init(&d);
        struct wh_env_writer w;
        wh_env_writer_init(&w, &d, 2, env);
        assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-0"), WH_OK);
        assert_int_equal(wh_env_set(&w, "TPU_WORKER_ID", "1"), WH_OK);
        assert_int_equal(wh_env_set_field_ref(&w, "TPU_DEVICE_PLUGIN_HOST_IP", "status.hostIP"),
                         WH_OK);
        assert_ops(d.patch, "[{\"op\":\"add\",\"path\":\"/spec/containers/2/env\",\"value\":"
                            "[{\"name\":\"TPU_NAME\",\"value\":\"g-0\"}]},"
                            "{\"op\":\"add\",\"path\":\"/spec/containers/2/env/-\",\"value\":"
                            "{\"name\":\"TPU_WORKER_ID\",\"value\":\"1\"}},"
                            "{\"op\":\"add\",\"path\":\"/spec/containers/2/env/-\",\"value\":"
                            "{\"name\":\"TPU_DEVICE_PLUGIN_HOST_IP\",\"valueFrom\":{\"fieldRef\":"
                            "{\"fieldPath\":\"status.hostIP\"}}}}]");
        wh_decision_free(&d);
        cJSON_Delete(env);
    }
}

static void test_appends_to_existing(void **unused)
{
    (void)unused;
    cJSON *env = env_of("[{\"name\":\"JAX_PLATFORMS\",\"value\":\"tpu\"}]");
    struct wh_decision d;
    wh_decision_init(&d);
    struct wh_env_writer w;
    wh_env_writer_init(&w, &d, 0, env);
    assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-0"), WH_OK);
    assert_ops(d.patch, "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":"
                        "{\"name\":\"TPU_NAME\",\"value\":\"g-0\"}}]");
    wh_decision_free(&d);
    cJSON_Delete(env);
}

static void test_replaces_in_place(void **unused)
{
    (void)unused;
    cJSON *env = env_of(
        "[{\"name\":\"A\",\"value\":\"x\"},"
        "{\"name\":\"TPU_WORKER_HOSTNAMES\",\"value\":\"localhost\"},"
        "{\"name\":\"TPU_WORKER_ID\",\"value\":\"\"},"
        "{\"name\":\"TPU_WORKER_ID\",\"value\":\"0\"},"
        "{\"name\":\"HOST\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}}]");
    struct wh_decision d;
    wh_decision_init(&d);
    struct wh_env_writer w;
    wh_env_writer_init(&w, &d, 1, env);
    assert_int_equal(wh_env_set(&w, "TPU_WORKER_HOSTNAMES", "g-0-0.c-headless,g-0-1.c-headless"),
                     WH_OK);
    /* the deciding entry (index 3) is replaced, not the empty one before it */
    assert_int_equal(wh_env_set(&w, "TPU_WORKER_ID", "3"), WH_OK);
    assert_int_equal(wh_env_set_field_ref(&w, "HOST", "status.hostIP"), WH_OK);
    assert_ops(d.patch,
               "[{\"op\":\"replace\",\"path\":\"/spec/containers/1/env/1\",\"value\":"
               "{\"name\":\"TPU_WORKER_HOSTNAMES\",\"value\":\"g-0-0.c-headless,g-0-1.c-headless\"}},"
               "{\"op\":\"replace\",\"path\":\"/spec/containers/1/env/3\",\"value\":"
               "{\"name\":\"TPU_WORKER_ID\",\"value\":\"3\"}},"
               "{\"op\":\"replace\",\"path\":\"/spec/containers/1/env/4\",\"value\":"
               "{\"name\":\"HOST\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}}}]");
    wh_decision_free(&d);
    cJSON_Delete(env);
}

static void test_empty_entry_replaced(void **unused)
{
    (void)unused;
    /* only an empty entry: it is corrected where it is (first_index) */
    cJSON *env = env_of("[{\"name\":\"B\",\"value\":\"b\"},{\"name\":\"TPU_NAME\",\"value\":\"\"},"
                        "{\"name\":\"TPU_NAME\"}]");
    struct wh_decision d;
    wh_decision_init(&d);
    struct wh_env_writer w;
    wh_env_writer_init(&w, &d, 0, env);
    assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-1"), WH_OK);
    assert_ops(d.patch, "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/env/1\",\"value\":"
                        "{\"name\":\"TPU_NAME\",\"value\":\"g-1\"}}]");
    wh_decision_free(&d);
    cJSON_Delete(env);
}

static void test_identical_is_no_op(void **unused)
{
    (void)unused;
    cJSON *env = env_of("[{\"name\":\"TPU_NAME\",\"value\":\"g-0\"},"
                        "{\"name\":\"TPU_DEVICE_PLUGIN_HOST_IP\",\"valueFrom\":{\"fieldRef\":"
                        "{\"fieldPath\":\"status.hostIP\"}}}]");
    struct wh_decision d;
    wh_decision_init(&d);
    struct wh_env_writer w;
    wh_env_writer_init(&w, &d, 0, env);
    assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-0"), WH_OK);
    assert_int_equal(wh_env_set_field_ref(&w, "TPU_DEVICE_PLUGIN_HOST_IP", "status.hostIP"), WH_OK);
    assert_ops(d.patch, NULL);
    /* a different value still gives an operation */
    assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-1"), WH_OK);
    assert_int_equal(cJSON_GetArraySize(d.patch), 1);
    wh_decision_free(&d);
    cJSON_Delete(env);
}

static void test_writers_per_container(void **unused)
{
    (void)unused;
    /* "initialised" is per container: each empty container creates its array */
    struct wh_decision d;
    wh_decision_init(&d);
    struct wh_env_writer w0, w1;
    wh_env_writer_init(&w0, &d, 0, NULL);
    wh_env_writer_init(&w1, &d, 3, NULL);
    assert_int_equal(wh_env_set(&w0, "A", "1"), WH_OK);
    assert_int_equal(wh_env_set(&w1, "A", "1"), WH_OK);
    assert_int_equal(wh_env_set(&w0, "B", "2"), WH_OK);
    assert_ops(
        d.patch,
        "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":[{\"name\":\"A\",\"value\":\"1\"}]},"
        "{\"op\":\"add\",\"path\":\"/spec/containers/3/env\",\"value\":[{\"name\":\"A\",\"value\":\"1\"}]},"
        "{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"B\",\"value\":\"2\"}}]");
    wh_decision_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patch_op),
        cmocka_unit_test(test_patch_op_bounded),
        cmocka_unit_test(test_pointer_escape),
        cmocka_unit_test(test_first_op_creates_array),
        cmocka_unit_test(test_appends_to_existing),
        cmocka_unit_test(test_replaces_in_place),
        cmocka_unit_test(test_empty_entry_replaced),
        cmocka_unit_test(test_identical_is_no_op),
        cmocka_unit_test(test_writers_per_container),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
