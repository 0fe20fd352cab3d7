/* test_podspec.c: TPU requests (docs/internals/reference-behaviour.md
 * §2.2.2, §2.3), the env lookup rule
 * (§2.7.1), metadata helpers and the Kueue bypass managed() (§4.3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "testutil.h"
#include "wh/json.h"
#include "wh/podspec.h"

static struct wh_tpu_request tpu_of(const char *container_json)
{
    cJSON *c = wh_test_parse(container_json);
    struct wh_tpu_request rq = {true, -7};
    char errbuf[WH_ERRBUF_LEN];
    if (wh_container_tpu(c, &rq, errbuf))
        fail_msg("container %s refused: %s", container_json, errbuf);
    cJSON_Delete(c);
    return rq;
}

static void test_tpu_request(void **unused)
{
    (void)unused;
    struct wh_tpu_request rq;
    rq = tpu_of("{\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}}}");
    assert_true(rq.requests_tpu);
    assert_int_equal(rq.chips, 4);
    rq = tpu_of("{\"resources\":{\"requests\":{\"google.com/tpu\":\"4\"}}}");
    assert_true(rq.requests_tpu);
    assert_int_equal(rq.chips, 4);
    /* the request wins when non-zero */
    rq = tpu_of("{\"resources\":{\"limits\":{\"google.com/tpu\":\"8\"},"
                "\"requests\":{\"google.com/tpu\":\"2\"}}}");
    assert_int_equal(rq.chips, 2);
    /* a zero request falls back to the limit */
    rq = tpu_of("{\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"},"
                "\"requests\":{\"google.com/tpu\":\"0\"}}}");
    assert_true(rq.requests_tpu);
    assert_int_equal(rq.chips, 4);
    /* numbers and suffixes, rounded up */
    rq = tpu_of("{\"resources\":{\"limits\":{\"google.com/tpu\":4}}}");
    assert_int_equal(rq.chips, 4);
    rq = tpu_of("{\"resources\":{\"limits\":{\"google.com/tpu\":\"500m\"}}}");
    assert_true(rq.requests_tpu);
    assert_int_equal(rq.chips, 1);
}

static void test_no_tpu(void **unused)
{
    (void)unused;
    static const char *const none[] = {
        "{\"name\":\"c\"}",
        "{\"resources\":{}}",
        "{\"resources\":{\"limits\":{\"cpu\":\"4\",\"nvidia.com/gpu\":\"1\"}}}",
        "{\"resources\":{\"limits\":{\"google.com/tpu\":\"0\"},\"requests\":{\"google.com/tpu\":0}}}",
        "{\"resources\":{\"limits\":{\"google.com/tpu\":null}}}",
        "{\"resources\":{\"limits\":{\"Google.com/tpu\":\"4\"}}}", /* case-sensitive */
        "{\"resources\":{\"limits\":{\"google.com/tpu\":\"-4\"}}}",
    };
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        struct wh_tpu_request rq = tpu_of(none[i]);
        if (rq.requests_tpu)
            fail_msg("%s requests TPU", none[i]);
        assert_int_equal(rq.chips, 0);
        cJSON *c = wh_test_parse(none[i]);
        assert_false(wh_container_requests_tpu(c));
        cJSON_Delete(c);
    }
}

static void test_bad_quantity(void **unused)
{
    (void)unused;
    cJSON *c = wh_test_parse(
        "{\"name\":\"ray-worker\",\"resources\":{\"limits\":{\"google.com/tpu\":\"four\"}}}");
    struct wh_tpu_request rq;
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(wh_container_tpu(c, &rq, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "ray-worker"));
    assert_non_null(strstr(errbuf, "limits"));
    assert_non_null(strstr(errbuf, "\"four\""));
    /* lenient form: a bad quantity counts as 0 */
    assert_false(wh_container_requests_tpu(c));
    cJSON_Delete(c);
    c = wh_test_parse("{\"name\":\"w\",\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"},"
                      "\"requests\":{\"google.com/tpu\":true}}}");
    assert_int_equal(wh_container_tpu(c, &rq, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "requests"));
    assert_true(wh_container_requests_tpu(c)); /* the good limit still counts */
    cJSON_Delete(c);
}

static struct wh_env_lookup lookup(const char *env_json, const char *name)
{
    cJSON *env = wh_test_parse(env_json);
    struct wh_env_lookup lk;
    wh_env_lookup(env, name, &lk);
    /* value borrows from env: copy what the tests compare */
    static char value[256];
    strncpy(value, lk.value, sizeof(value) - 1);
    lk.value = value;
    cJSON_Delete(env);
    return lk;
}

static void test_env_lookup(void **unused)
{
    (void)unused;
    struct wh_env_lookup lk;
    lk = lookup("[{\"name\":\"A\",\"value\":\"1\"}]", "A");
    assert_string_equal(lk.value, "1");
    assert_true(lk.exists);
    assert_int_equal(lk.index, 0);
    assert_int_equal(lk.first_index, 0);
    /* no entry */
    lk = lookup("[{\"name\":\"B\",\"value\":\"1\"}]", "A");
    assert_string_equal(lk.value, "");
    assert_false(lk.exists);
    assert_int_equal(lk.index, -1);
    assert_int_equal(lk.first_index, -1);
    /* empty-value entries are skipped; the first deciding one wins */
    lk = lookup("[{\"name\":\"X\",\"value\":\"x\"},{\"name\":\"A\",\"value\":\"\"},{\"name\":\"A\"},"
                "{\"name\":\"A\",\"value\":\"2\"},{\"name\":\"A\",\"value\":\"3\"}]",
                "A");
    assert_string_equal(lk.value, "2");
    assert_true(lk.exists);
    assert_int_equal(lk.index, 3);
    assert_int_equal(lk.first_index, 1);
    /* only empty entries: not set, but the first one is located */
    lk = lookup("[{\"name\":\"A\",\"value\":\"\"},{\"name\":\"A\",\"valueFrom\":null}]", "A");
    assert_string_equal(lk.value, "");
    assert_false(lk.exists);
    assert_int_equal(lk.index, -1);
    assert_int_equal(lk.first_index, 0);
    /* valueFrom decides with an empty value */
    lk = lookup("[{\"name\":\"A\",\"value\":\"\"},"
                "{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}},"
                "{\"name\":\"A\",\"value\":\"late\"}]",
                "A");
    assert_string_equal(lk.value, "");
    assert_true(lk.exists);
    assert_int_equal(lk.index, 1);
    assert_int_equal(lk.first_index, 0);
    /* names are case-sensitive; odd entries are ignored */
    lk = lookup("[{\"name\":\"a\",\"value\":\"1\"},{\"value\":\"2\"},5,{\"name\":\"A\",\"value\":7}]",
                "A");
    assert_false(lk.exists);
    assert_int_equal(lk.first_index, 3);
    /* env not an array */
    lk = lookup("{\"A\":\"1\"}", "A");
    assert_false(lk.exists);
    assert_int_equal(lk.first_index, -1);
    struct wh_env_lookup none;
    wh_env_lookup(NULL, "A", &none);
    assert_false(none.exists);
    assert_string_equal(none.value, "");
}

static void test_meta(void **unused)
{
    (void)unused;
    cJSON *pod = wh_test_parse(
        "{\"metadata\":{\"labels\":{\"ray.io/cluster\":\"c\",\"n\":5,\"e\":\"\"},"
        "\"annotations\":{\"cloud.google.com/gke-tpu-slice-topology\":\"\"}},"
        "\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-topology\":\"2x4\"}}}");
    assert_string_equal(wh_meta_label(pod, WH_LABEL_CLUSTER), "c");
    assert_null(wh_meta_label(pod, WH_LABEL_GROUP));
    assert_null(wh_meta_label(pod, "n"));     /* not a string */
    assert_true(wh_meta_has_label(pod, "n")); /* but present */
    assert_string_equal(wh_meta_label(pod, "e"), "");
    assert_false(wh_meta_has_label(pod, WH_LABEL_GROUP));
    /* an annotation present with an empty value is present
     * (docs/internals/reference-behaviour.md §2.2.5) */
    assert_true(wh_meta_has_annotation(pod, WH_ANN_SLICE_TOPOLOGY));
    assert_string_equal(wh_meta_annotation(pod, WH_ANN_SLICE_TOPOLOGY), "");
    assert_false(wh_meta_has_annotation(pod, WH_ANN_SKIP_CHECK));
    const cJSON *spec = wh_json_get(pod, "spec");
    assert_string_equal(wh_node_selector(spec, WH_SEL_TOPOLOGY), "2x4");
    assert_null(wh_node_selector(spec, WH_SEL_ACCELERATOR));
    assert_null(wh_meta_label(NULL, "x"));
    /* the slice topology: a present annotation wins even when empty */
    bool from_ann = false;
    assert_string_equal(wh_slice_topology(pod, spec, &from_ann), "");
    assert_true(from_ann);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(pod, "metadata"), "annotations");
    assert_string_equal(wh_slice_topology(pod, spec, &from_ann), "2x4");
    assert_false(from_ann);
    assert_null(wh_slice_topology(pod, NULL, &from_ann));
    cJSON_Delete(pod);
}

static bool managed(const char *labels, const char *annotations)
{
    cJSON *l = labels ? wh_test_parse(labels) : NULL;
    cJSON *a = annotations ? wh_test_parse(annotations) : NULL;
    bool m = wh_managed(l, a);
    cJSON_Delete(l);
    cJSON_Delete(a);
    return m;
}

static void test_managed(void **unused)
{
    (void)unused;
    assert_false(managed(NULL, NULL));
    assert_false(managed("{}", "{}"));
    assert_true(managed("{\"kueue.x-k8s.io/queue-name\":\"q\"}", NULL));
    assert_false(managed("{\"kueue.x-k8s.io/queue-name\":\"\"}", NULL));
    assert_false(
        managed(NULL, "{\"kueue.x-k8s.io/queue-name\":\"q\"}")); /* a label, not an annotation */
    assert_true(managed(
        NULL,
        "{\"kueue.x-k8s.io/podset-required-topology\":\"cloud.google.com/gce-topology-block\"}"));
    assert_false(managed(NULL, "{\"kueue.x-k8s.io/podset-required-topology\":\"\"}"));
    assert_true(managed(NULL, "{\"cloud.google.com/skip-tpu-webhook-check\":\"true\"}"));
    assert_false(managed(NULL, "{\"cloud.google.com/skip-tpu-webhook-check\":\"True\"}"));
    assert_false(managed(NULL, "{\"cloud.google.com/skip-tpu-webhook-check\":\"false\"}"));
    assert_false(managed(NULL, "{\"cloud.google.com/skip-tpu-webhook-check\":true}"));
    assert_false(managed("{\"cloud.google.com/skip-tpu-webhook-check\":\"true\"}", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tpu_request),  cmocka_unit_test(test_no_tpu),
        cmocka_unit_test(test_bad_quantity), cmocka_unit_test(test_env_lookup),
        cmocka_unit_test(test_meta),         cmocka_unit_test(test_managed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
