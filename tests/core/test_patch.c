/* test_patch.c: JSON Patch operations and the env writer (D5 one entry per
 * name, D6 no operation for an identical entry, array creation of
 * docs/internals/reference-behaviour.md §2.7). */
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
#include "wh/decision.h"
#include "wh/json.h"
#include "wh/mem.h"
#include "wh/patch.h"

/* The patch text is the answer's bytes: compared whole. */
static void assert_ops(const struct wh_decision *d, const char *want)
{
    const char *got = wh_buf_ptr(&d->patch);
    if (!want) {
        if (*got || d->n_ops)
            fail_msg("expected no operation, got %s", got);
        return;
    }
    if (strcmp(got, want))
        fail_msg("operations\n got  %s\n want %s", got, want);
    cJSON *parsed = wh_test_parse(got); /* a whole document after every operation */
    assert_int_equal(cJSON_GetArraySize(parsed), d->n_ops);
    cJSON_Delete(parsed);
}

static void test_patch_op(void **unused)
{
    (void)unused;
    struct wh_decision d;
    wh_decision_init(&d);
    assert_int_equal(wh_patch_add_string(&d, "add", "/spec/hostname", "h"), WH_OK);
    assert_ops(&d, "[{\"op\":\"add\",\"path\":\"/spec/hostname\",\"value\":\"h\"}]");
    cJSON *one = cJSON_CreateNumber(1);
    assert_int_equal(wh_patch_add_json(&d, "replace", "/a", one), WH_OK);
    cJSON_Delete(one); /* borrowed */
    /* escaped as wh_json_write escapes them */
    assert_int_equal(wh_patch_add_string(&d, "add", "/b\"", "q\"\n\x01"), WH_OK);
    assert_ops(&d, "[{\"op\":\"add\",\"path\":\"/spec/hostname\",\"value\":\"h\"},"
                   "{\"op\":\"replace\",\"path\":\"/a\",\"value\":1},"
                   "{\"op\":\"add\",\"path\":\"/b\\\"\",\"value\":\"q\\\"\\n\\u0001\"}]");
    assert_int_equal(wh_patch_add_json(&d, "add", "/b", NULL), WH_ERR_INVALID);
    assert_int_equal(d.n_ops, 3);
    assert_null(d.bad_name);
    wh_decision_free(&d);
    assert_ops(&d, NULL);
}

/* Issue 10: a 1.9 KB review made a 46 MB patch. The text is the patch: its
 * length is checked exactly against WH_PATCH_MAX_BYTES as each operation is
 * written; the one that does not fit empties it (the caller denies) and
 * says how much it needed. */
static void test_patch_op_bounded(void **unused)
{
    (void)unused;
    static char value[64 * 1024];
    memset(value, 'v', sizeof(value) - 1);
    struct wh_decision d;
    wh_decision_init(&d);
    size_t n = 0, len = 0;
    enum wh_err err;
    while (!(err = wh_patch_add_string(&d, "add", "/x", value))) {
        n++;
        len = wh_buf_len(&d.patch);
        assert_true(len <= WH_PATCH_MAX_BYTES);
    }
    assert_int_equal(err, WH_ERR_TOOBIG);
    assert_int_equal(n, WH_PATCH_MAX_BYTES / sizeof(value) - 1);
    /* "," {"op":"add","path":"/x","value":"<value>"} "]" */
    size_t op = sizeof(value) - 1 + 35;
    assert_int_equal(len, 1 + n * op + (n - 1) + 1);
    assert_int_equal(d.patch_need, len + op + 1);
    assert_true(d.patch_need > WH_PATCH_MAX_BYTES);
    assert_ops(&d, NULL);
    wh_decision_free(&d);

    /* escapes count: 170,000 control characters are 1,020,000 bytes of
     * text, and one more operation passes the limit */
    static char ctl[170 * 1000 + 1];
    memset(ctl, '\x01', sizeof(ctl) - 1);
    wh_decision_init(&d);
    assert_int_equal(wh_patch_add_string(&d, "add", "/x", ctl), WH_OK);
    assert_int_equal(wh_buf_len(&d.patch), 6 * (sizeof(ctl) - 1) + 37);
    assert_int_equal(wh_patch_add_string(&d, "add", "/y", value), WH_ERR_TOOBIG);
    assert_int_equal(d.patch_need, 6 * (sizeof(ctl) - 1) + 37 + sizeof(value) - 1 + 36);
    wh_decision_free(&d);
}

/* Allocations fail while fail_mallocs is set (wh_mem_install). */
static bool fail_mallocs;

static void *failing_malloc(size_t n)
{
    return fail_mallocs ? NULL : malloc(n);
}

/* patch.h: any failed operation empties the patch, WH_ERR_NOMEM too, also
 * when it is the copy of a refused name's message that fails. */
static void test_failed_op_empties_patch(void **unused)
{
    (void)unused;
    struct wh_mem_hooks h = {failing_malloc, realloc, free, NULL};
    wh_mem_install(&h);
    struct wh_decision d;
    wh_decision_init(&d);
    assert_int_equal(wh_patch_add_string(&d, "add", "/spec/subdomain", "rc-headless"), WH_OK);
    fail_mallocs = true; /* the patch has its room: only the message needs memory */
    enum wh_err err = wh_patch_add_string(&d, "add", "/spec/hostname", "Not_A_Label");
    fail_mallocs = false;
    assert_int_equal(err, WH_ERR_NOMEM);
    assert_null(d.bad_name);
    assert_ops(&d, NULL);
    wh_decision_free(&d);
    wh_mem_install(NULL);
}

/* The API server's name rules are checked as operations are written: the
 * first offender is kept as the message the caller denies with, and the
 * patch goes on (an error or a limit met later wins, as before). */
static void test_names_checked_as_written(void **unused)
{
    (void)unused;
    struct wh_decision d;
    wh_decision_init(&d);
    assert_int_equal(wh_patch_add_string(&d, "add", "/spec/hostname", "g-0-0"), WH_OK);
    assert_null(d.bad_name);
    assert_int_equal(wh_patch_add_string(&d, "add", "/metadata/labels/replicaIndex", "-g"), WH_OK);
    assert_non_null(d.bad_name);
    assert_non_null(strstr(d.bad_name, "label value \"-g\" (/metadata/labels/replicaIndex)"));
    struct wh_env_writer w;
    wh_env_writer_init(&w, &d, 0, NULL);
    assert_int_equal(wh_env_set(&w, "1B", "x"), WH_OK); /* the first offender stays */
    assert_non_null(strstr(d.bad_name, "label value"));
    assert_int_equal(d.n_ops, 3);
    assert_int_equal(wh_decision_deny(&d, "%s", d.bad_name), WH_OK);
    assert_null(d.bad_name);
    assert_non_null(strstr(d.message, "label value \"-g\""));
    wh_decision_free(&d);

    wh_decision_init(&d);
    wh_env_writer_init(&w, &d, 1, NULL);
    assert_int_equal(wh_env_set_field_ref(&w, "A=B", "status.hostIP"), WH_OK);
    assert_non_null(strstr(d.bad_name, "env var name \"A=B\" (/spec/containers/1/env)"));
    wh_decision_free(&d);
}

static enum wh_err write_object(struct wh_buf *b, const void *arg)
{
    enum wh_err err = wh_buf_add(b, "{\"k\":");
    if (!err)
        err = wh_json_write_string(b, arg);
    return err ? err : wh_buf_addc(b, '}');
}

/* A value written by the caller's writer: in the text as written, refused
 * where a name goes, measured when it passes the limit. */
static void test_patch_op_written(void **unused)
{
    (void)unused;
    struct wh_decision d;
    wh_decision_init(&d);
    assert_int_equal(wh_patch_add_written(&d, "add", "/spec/affinity", write_object, "v"), WH_OK);
    assert_ops(&d, "[{\"op\":\"add\",\"path\":\"/spec/affinity\",\"value\":{\"k\":\"v\"}}]");
    assert_null(d.bad_name);
    assert_int_equal(wh_patch_add_written(&d, "add", "/spec/hostname", write_object, "v"), WH_OK);
    assert_non_null(strstr(d.bad_name, "hostname \"(not a string)\""));
    wh_decision_free(&d);

    static char big[WH_PATCH_MAX_BYTES];
    memset(big, 'b', sizeof(big) - 1);
    wh_decision_init(&d);
    assert_int_equal(wh_patch_add_written(&d, "add", "/a", write_object, big), WH_ERR_TOOBIG);
    /* [ {"op":"add","path":"/a","value":{"k":"<big>"}} ] */
    assert_int_equal(d.patch_need, 1 + 32 + 5 + sizeof(big) - 1 + 2 + 1 + 1 + 1);
    assert_ops(&d, NULL);
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
        assert_ops(&d, "[{\"op\":\"add\",\"path\":\"/spec/containers/2/env\",\"value\":"
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
    assert_ops(&d, "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":"
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
    assert_ops(&d,
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
    assert_ops(&d, "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/env/1\",\"value\":"
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
    assert_ops(&d, NULL);
    /* a different value still gives an operation */
    assert_int_equal(wh_env_set(&w, "TPU_NAME", "g-1"), WH_OK);
    assert_int_equal(d.n_ops, 1);
    wh_decision_free(&d);
    cJSON_Delete(env);
}

/* D6 without a tree: an existing entry counts as the wanted one exactly
 * when cJSON_Compare finds it equal to the entry as a tree (wh_env_entry). */
static void test_identical_as_cjson_compares(void **unused)
{
    (void)unused;
    static const char *const entries[] = {
        "{\"name\":\"V\",\"value\":\"x\"}",
        "{\"value\":\"x\",\"name\":\"V\"}",
        "{\"name\":\"V\",\"value\":\"x\",\"name\":\"V\"}",
        "{\"name\":\"V\",\"value\":\"x\",\"value\":\"y\"}",
        "{\"name\":\"V\",\"value\":\"x\",\"other\":1}",
        "{\"name\":\"V\",\"value\":\"y\"}",
        "{\"name\":\"V\",\"value\":1}",
        "{\"name\":\"V\"}",
        "{\"name\":\"V\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}}",
        "{\"name\":\"V\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\","
        "\"fieldPath\":\"status.hostIP\"}}}",
        "{\"name\":\"V\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\","
        "\"apiVersion\":\"v1\"}}}",
        "{\"name\":\"V\",\"valueFrom\":{\"fieldRef\":{}}}",
        "{\"name\":\"V\",\"valueFrom\":{}}",
        "{\"name\":\"V\",\"value\":\"x\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}}",
    };
    cJSON *want[2] = {wh_env_entry("V", "x", NULL), wh_env_entry("V", NULL, "status.hostIP")};
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "[%s]", entries[i]);
        cJSON *env = wh_test_parse(text);
        for (int k = 0; k < 2; k++) {
            struct wh_decision d;
            wh_decision_init(&d);
            struct wh_env_writer w;
            wh_env_writer_init(&w, &d, 0, env);
            assert_int_equal(k ? wh_env_set_field_ref(&w, "V", "status.hostIP")
                               : wh_env_set(&w, "V", "x"),
                             WH_OK);
            bool same = cJSON_Compare(env->child, want[k], 1);
            if (same != (d.n_ops == 0))
                fail_msg("%s against %s: %zu operations", entries[i], k ? "valueFrom" : "value",
                         d.n_ops);
            wh_decision_free(&d);
        }
        cJSON_Delete(env);
    }
    cJSON_Delete(want[0]);
    cJSON_Delete(want[1]);
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
        &d,
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
        cmocka_unit_test(test_names_checked_as_written),
        cmocka_unit_test(test_failed_op_empties_patch),
        cmocka_unit_test(test_patch_op_written),
        cmocka_unit_test(test_pointer_escape),
        cmocka_unit_test(test_first_op_creates_array),
        cmocka_unit_test(test_appends_to_existing),
        cmocka_unit_test(test_replaces_in_place),
        cmocka_unit_test(test_empty_entry_replaced),
        cmocka_unit_test(test_identical_is_no_op),
        cmocka_unit_test(test_identical_as_cjson_compares),
        cmocka_unit_test(test_writers_per_container),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
