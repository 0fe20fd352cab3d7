/* test_patch.c: JSON Patch operations and the env writer (D5 one entry per
 * name, D6 no operation for an identical entry, anchor §2.7 array creation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "../testutil.h"
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
    cJSON *ops = NULL;
    assert_int_equal(wh_patch_op(&ops, "add", "/spec/hostname", cJSON_CreateString("h")), WH_OK);
    assert_int_equal(wh_patch_op(&ops, "replace", "/a", cJSON_CreateNumber(1)), WH_OK);
    assert_ops(ops, "[{\"op\":\"add\",\"path\":\"/spec/hostname\",\"value\":\"h\"},"
                    "{\"op\":\"replace\",\"path\":\"/a\",\"value\":1}]");
    assert_int_equal(wh_patch_op(&ops, "add", "/b", NULL), WH_ERR_NOMEM);
    assert_int_equal(cJSON_GetArraySize(ops), 2);
    cJSON_Delete(ops);
    cJSON *none = NULL;
    assert_int_equal(wh_patch_op(&none, "add", "/b", NULL), WH_ERR_NOMEM);
    assert_null(none);
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
        cJSON *env = env_of(empties[i]), *ops = NULL;
        struct wh_env_writer w;
        wh_env_writer_init(&w, &ops, 2, env);
        assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-0"), WH_OK);
        assert_int_equal(wh_env_set(&w, "TPU_WORKER_ID", "1"), WH_OK);
        assert_int_equal(wh_env_set_field_ref(&w, "TPU_DEVICE_PLUGIN_HOST_IP", "status.hostIP"), WH_OK);
        assert_ops(ops,
                   "[{\"op\":\"add\",\"path\":\"/spec/containers/2/env\",\"value\":"
                   "[{\"name\":\"TPU_NAME\",\"value\":\"g-0\"}]},"
                   "{\"op\":\"add\",\"path\":\"/spec/containers/2/env/-\",\"value\":"
                   "{\"name\":\"TPU_WORKER_ID\",\"value\":\"1\"}},"
                   "{\"op\":\"add\",\"path\":\"/spec/containers/2/env/-\",\"value\":"
                   "{\"name\":\"TPU_DEVICE_PLUGIN_HOST_IP\",\"valueFrom\":{\"fieldRef\":"
                   "{\"fieldPath\":\"status.hostIP\"}}}}]");
        cJSON_Delete(ops);
        cJSON_Delete(env);
    }
}

static void test_appends_to_existing(void **unused)
{
    (void)unused;
    cJSON *env = env_of("[{\"name\":\"JAX_PLATFORMS\",\"value\":\"tpu\"}]"), *ops = NULL;
    struct wh_env_writer w;
    wh_env_writer_init(&w, &ops, 0, env);
    assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-0"), WH_OK);
    assert_ops(ops, "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":"
                    "{\"name\":\"TPU_NAME\",\"value\":\"g-0\"}}]");
    cJSON_Delete(ops);
    cJSON_Delete(env);
}

static void test_replaces_in_place(void **unused)
{
    (void)unused;
    cJSON *env = env_of("[{\"name\":\"A\",\"value\":\"x\"},"
                        "{\"name\":\"TPU_WORKER_HOSTNAMES\",\"value\":\"localhost\"},"
                        "{\"name\":\"TPU_WORKER_ID\",\"value\":\"\"},"
                        "{\"name\":\"TPU_WORKER_ID\",\"value\":\"0\"},"
                        "{\"name\":\"HOST\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}}]");
    cJSON *ops = NULL;
    struct wh_env_writer w;
    wh_env_writer_init(&w, &ops, 1, env);
    assert_int_equal(wh_env_set(&w, "TPU_WORKER_HOSTNAMES", "g-0-0.c-headless,g-0-1.c-headless"), WH_OK);
    /* the deciding entry (index 3) is replaced, not the empty one before it */
    assert_int_equal(wh_env_set(&w, "TPU_WORKER_ID", "3"), WH_OK);
    assert_int_equal(wh_env_set_field_ref(&w, "HOST", "status.hostIP"), WH_OK);
    assert_ops(ops,
               "[{\"op\":\"replace\",\"path\":\"/spec/containers/1/env/1\",\"value\":"
               "{\"name\":\"TPU_WORKER_HOSTNAMES\",\"value\":\"g-0-0.c-headless,g-0-1.c-headless\"}},"
               "{\"op\":\"replace\",\"path\":\"/spec/containers/1/env/3\",\"value\":"
               "{\"name\":\"TPU_WORKER_ID\",\"value\":\"3\"}},"
               "{\"op\":\"replace\",\"path\":\"/spec/containers/1/env/4\",\"value\":"
               "{\"name\":\"HOST\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}}}]");
    cJSON_Delete(ops);
    cJSON_Delete(env);
}

static void test_empty_entry_replaced(void **unused)
{
    (void)unused;
    /* only an empty entry: it is corrected where it is (first_index) */
    cJSON *env = env_of("[{\"name\":\"B\",\"value\":\"b\"},{\"name\":\"TPU_NAME\",\"value\":\"\"},"
                        "{\"name\":\"TPU_NAME\"}]");
    cJSON *ops = NULL;
    struct wh_env_writer w;
    wh_env_writer_init(&w, &ops, 0, env);
    assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-1"), WH_OK);
    assert_ops(ops, "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/env/1\",\"value\":"
                    "{\"name\":\"TPU_NAME\",\"value\":\"g-1\"}}]");
    cJSON_Delete(ops);
    cJSON_Delete(env);
}

static void test_identical_is_no_op(void **unused)
{
    (void)unused;
    cJSON *env = env_of("[{\"name\":\"TPU_NAME\",\"value\":\"g-0\"},"
                        "{\"name\":\"TPU_DEVICE_PLUGIN_HOST_IP\",\"valueFrom\":{\"fieldRef\":"
                        "{\"fieldPath\":\"status.hostIP\"}}}]");
    cJSON *ops = NULL;
    struct wh_env_writer w;
    wh_env_writer_init(&w, &ops, 0, env);
    assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-0"), WH_OK);
    assert_int_equal(wh_env_set_field_ref(&w, "TPU_DEVICE_PLUGIN_HOST_IP", "status.hostIP"), WH_OK);
    assert_ops(ops, NULL);
    /* a different value still gives an operation */
    assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-1"), WH_OK);
    assert_int_equal(cJSON_GetArraySize(ops), 1);
    cJSON_Delete(ops);
    cJSON_Delete(env);
}

static void test_writers_per_container(void **unused)
{
    (void)unused;
    /* "initialised" is per container: each empty container creates its array */
    cJSON *ops = NULL;
    struct wh_env_writer w0, w1;
    wh_env_writer_init(&w0, &ops, 0, NULL);
    wh_env_writer_init(&w1, &ops, 3, NULL);
    assert_int_equal(wh_env_set(&w0, "A", "1"), WH_OK);
    assert_int_equal(wh_env_set(&w1, "A", "1"), WH_OK);
    assert_int_equal(wh_env_set(&w0, "B", "2"), WH_OK);
    assert_ops(ops, "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":[{\"name\":\"A\",\"value\":\"1\"}]},"
                    "{\"op\":\"add\",\"path\":\"/spec/containers/3/env\",\"value\":[{\"name\":\"A\",\"value\":\"1\"}]},"
                    "{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"B\",\"value\":\"2\"}}]");
    cJSON_Delete(ops);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patch_op),             cmocka_unit_test(test_pointer_escape),
        cmocka_unit_test(test_first_op_creates_array), cmocka_unit_test(test_appends_to_existing),
        cmocka_unit_test(test_replaces_in_place),    cmocka_unit_test(test_empty_entry_replaced),
        cmocka_unit_test(test_identical_is_no_op),   cmocka_unit_test(test_writers_per_container),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
