/* test_doctor_keep.c: what doctor keeps of each listed object
 * (wh_doctor_keep, doctor.h): pods no rule reads are dropped, the rest
 * trimmed to what the rules and the drift check read, and the report over
 * trimmed objects is the report over whole ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "wh/doctor.h"
#include "wh/json.h"

static cJSON *parse(const char *text)
{
    cJSON *j = NULL;
    char eb[WH_ERRBUF_LEN];
    assert_int_equal(wh_json_parse(text, strlen(text), &j, eb), WH_OK);
    return j;
}

#define MANAGED "\"managedFields\": [{\"manager\": \"kubelet\", \"fieldsV1\": {\"f:status\": {}}}]"

static const char TPU_POD[] =
    "{\"metadata\": {\"name\": \"w-0\", \"namespace\": \"t\", " MANAGED ", "
    "\"annotations\": {\"kubectl.kubernetes.io/last-applied-configuration\": \"{}\", "
    "\"team\": \"ml\"}, "
    "\"labels\": {\"batch.kubernetes.io/job-name\": \"j\", \"tpu-webhook/inject\": \"enabled\", "
    "\"batch.kubernetes.io/job-completion-index\": \"0\"}}, "
    "\"spec\": {\"nodeName\": \"n-0\", \"nodeSelector\": {"
    "\"cloud.google.com/gke-tpu-accelerator\": \"tpu-v6e-slice\", "
    "\"cloud.google.com/gke-tpu-topology\": \"4x4\"}, \"containers\": [{\"name\": \"c\", "
    "\"resources\": {\"limits\": {\"google.com/tpu\": \"4\"}}, "
    "\"env\": [{\"name\": \"TPU_WORKER_ID\", \"value\": \"3\"}]}]}, "
    "\"status\": {\"phase\": \"Running\", \"podIP\": \"10.0.0.1\", "
    "\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}}";

static void test_pods(void **unused)
{
    (void)unused;
    cJSON *whole = parse(TPU_POD), *pod = parse(TPU_POD);
    assert_true(wh_doctor_keep(WH_DOCTOR_PODS, pod));
    const cJSON *meta = wh_json_get(pod, "metadata");
    assert_false(wh_json_has(meta, "managedFields"));
    assert_false(wh_json_has(wh_json_get(meta, "annotations"),
                             "kubectl.kubernetes.io/last-applied-configuration"));
    assert_string_equal(wh_json_str(wh_json_get(meta, "annotations"), "team"), "ml");
    const cJSON *status = wh_json_get(pod, "status");
    assert_string_equal(wh_json_str(status, "phase"), "Running");
    assert_int_equal(cJSON_GetArraySize(status), 1);
    assert_true(cJSON_Compare(wh_json_get(pod, "spec"), wh_json_get(whole, "spec"), 1));

    /* The same report from the trimmed pod as from the whole one. */
    cJSON *a = cJSON_CreateArray(), *b = cJSON_CreateArray(), *ra = NULL, *rb = NULL;
    cJSON_AddItemToArray(a, whole);
    cJSON_AddItemToArray(b, pod);
    char eb[WH_ERRBUF_LEN];
    assert_int_equal(wh_doctor_run(&(struct wh_doctor_input){.pods = a}, &ra, eb), WH_OK);
    assert_int_equal(wh_doctor_run(&(struct wh_doctor_input){.pods = b}, &rb, eb), WH_OK);
    assert_true(cJSON_Compare(ra, rb, 1));
    assert_int_equal(cJSON_GetNumberValue(wh_json_get(ra, "pods")), 1);
    char *text = cJSON_PrintUnformatted(ra); /* drift judged: the pod opts in */
    if (!strstr(text, "\"problem\":\"drift\""))
        fail_msg("%s", text);
    cJSON_free(text);
    cJSON_Delete(ra);
    cJSON_Delete(rb);
    cJSON_Delete(a);
    cJSON_Delete(b);

    /* Dropped: no TPU, finished, being deleted. */
    static const char *const dropped[] = {
        "{\"metadata\": {\"name\": \"web\"}, \"spec\": {\"containers\": [{\"name\": \"c\", "
        "\"resources\": {\"requests\": {\"cpu\": \"1\"}}}]}}",
        "{\"metadata\": {\"name\": \"done\"}, \"spec\": {\"containers\": [{\"name\": \"c\", "
        "\"resources\": {\"limits\": {\"google.com/tpu\": \"4\"}}}]}, "
        "\"status\": {\"phase\": \"Succeeded\"}}",
        "{\"metadata\": {\"name\": \"going\", \"deletionTimestamp\": \"2026-01-01T00:00:00Z\"}, "
        "\"spec\": {\"containers\": [{\"name\": \"c\", "
        "\"resources\": {\"limits\": {\"google.com/tpu\": \"4\"}}}]}}",
    };
    for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
        cJSON *p = parse(dropped[i]);
        assert_false(wh_doctor_keep(WH_DOCTOR_PODS, p));
        cJSON_Delete(p);
    }
    /* Not an object with metadata: kept whole, for wh_doctor_run to name. */
    cJSON *odd = parse("{\"spec\": {}}");
    assert_true(wh_doctor_keep(WH_DOCTOR_PODS, odd));
    assert_true(wh_json_has(odd, "spec"));
    cJSON_Delete(odd);
}

static void test_nodes_and_services(void **unused)
{
    (void)unused;
    cJSON *node = parse("{\"kind\": \"Node\", \"metadata\": {\"name\": \"n-0\", " MANAGED
                        ", \"uid\": \"u\", \"labels\": {\"a\": \"b\"}}, \"spec\": "
                        "{\"podCIDR\": \"10.0.0.0/24\"}, \"status\": {\"images\": "
                        "[{\"names\": [\"x\"], \"sizeBytes\": 1}]}}");
    assert_true(wh_doctor_keep(WH_DOCTOR_NODES, node));
    cJSON *want = parse("{\"kind\": \"Node\", \"metadata\": {\"name\": \"n-0\", "
                        "\"labels\": {\"a\": \"b\"}}}");
    assert_true(cJSON_Compare(node, want, 1));
    cJSON_Delete(node);
    cJSON_Delete(want);

    cJSON *svc = parse("{\"metadata\": {\"name\": \"s\", " MANAGED "}, \"spec\": "
                       "{\"clusterIP\": \"None\"}, \"status\": {\"loadBalancer\": {}}}");
    assert_true(wh_doctor_keep(WH_DOCTOR_SERVICES, svc));
    want = parse("{\"metadata\": {\"name\": \"s\"}, \"spec\": {\"clusterIP\": \"None\"}}");
    assert_true(cJSON_Compare(svc, want, 1));
    cJSON_Delete(svc);
    cJSON_Delete(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pods),
        cmocka_unit_test(test_nodes_and_services),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
