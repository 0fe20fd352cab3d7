/* test_check.c: per-group verdicts and columns of `check`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h> /* snprintf */
#include <string.h>

#include "testutil.h"
#include "wh/check.h"
#include "wh/json.h"

static const char two_groups[] =
    "apiVersion: ray.io/v1\n"
    "kind: RayCluster\n"
    "metadata: {name: mixed}\n"
    "spec:\n"
    "  workerGroupSpecs:\n"
    "  - groupName: good\n"
    "    numOfHosts: 2\n"
    "    template:\n"
    "      spec:\n"
    "        nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice,\n"
    "                       cloud.google.com/gke-tpu-topology: 2x2x2}\n"
    "        containers: [{name: w, resources: {limits: {google.com/tpu: 4}}}]\n"
    "  - groupName: cpu\n"
    "    template: {spec: {containers: [{name: w}]}}\n"
    "  - groupName: bad\n"
    "    template:\n"
    "      spec:\n"
    "        nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice,\n"
    "                       cloud.google.com/gke-tpu-topology: 4x4}\n"
    "        containers: [{name: w, resources: {limits: {google.com/tpu: '4'}}}]\n"
    "---\n"
    "kind: ConfigMap\n"
    "metadata: {name: ignored}\n"
    "---\n"
    "kind: RayJob\n"
    "metadata: {name: selector-job}\n"
    "spec: {clusterSelector: {ray.io/cluster: x}}\n";

static const cJSON *row_of(const cJSON *rows, const char *group)
{
    for (const cJSON *r = rows->child; r; r = r->next)
        if (!strcmp(wh_json_str0(r, "group"), group))
            return r;
    fail_msg("no row for group %s", group);
    return NULL;
}

static void test_per_group_verdicts(void **state)
{
    (void)state;
    cJSON *rows = cJSON_CreateArray();
    struct wh_check_stats st = {0};
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(wh_check_text("m.yaml", two_groups, strlen(two_groups), rows, &st, errbuf),
                     WH_OK);
    /* good, bad (cpu has no row), and an error row for the RayJob. */
    assert_int_equal(cJSON_GetArraySize(rows), 3);
    assert_int_equal(st.objects, 2);
    assert_int_equal(st.rejected, 1);
    assert_int_equal(st.errors, 1);
    const cJSON *good = row_of(rows, "good");
    assert_string_equal(wh_json_str0(good, "verdict"), "ok");
    assert_int_equal(wh_json_get(good, "chipsPerHost")->valueint, 4);
    assert_int_equal(wh_json_get(good, "hostsExpected")->valueint, 2);
    assert_int_equal(wh_json_get(good, "numOfHosts")->valueint, 2);
    assert_string_equal(wh_json_str0(good, "topology"), "2x2x2");
    assert_int_equal(wh_json_get(good, "line")->valueint, 1);
    const cJSON *bad = row_of(rows, "bad");
    assert_string_equal(wh_json_str0(bad, "verdict"), "rejected");
    /* numOfHosts absent: the CRD default 1 applies before the webhook. */
    assert_int_equal(wh_json_get(bad, "numOfHosts")->valueint, 1);
    assert_int_equal(wh_json_get(bad, "hostsExpected")->valueint, 4);
    const char *msg = wh_json_str0(bad, "message");
    assert_non_null(strstr(msg, "worker group \"bad\""));
    assert_null(strstr(msg, "\"good\""));
    const cJSON *job = row_of(rows, "-");
    assert_string_equal(wh_json_str0(job, "verdict"), "error");
    assert_string_equal(wh_json_str0(job, "name"), "selector-job");
    assert_non_null(strstr(wh_json_str0(job, "message"), "clusterSelector"));

    struct wh_buf out;
    wh_buf_init(&out, 1 << 20);
    assert_int_equal(wh_check_table(rows, &st, &out), WH_OK);
    const char *t = wh_buf_ptr(&out);
    assert_int_equal(strncmp(t, "FILE", 4), 0);
    assert_non_null(strstr(t, "m.yaml:1"));
    assert_non_null(strstr(t, "rejected bad: worker group \"bad\""));
    assert_non_null(strstr(t, "1 rejected, 1 error(s)"));
    wh_buf_free(&out);
    cJSON_Delete(rows);
}

static void test_unreadable_inputs(void **state)
{
    (void)state;
    cJSON *rows = cJSON_CreateArray();
    struct wh_check_stats st = {0};
    char errbuf[WH_ERRBUF_LEN] = "";
    const char *bad = "kind: RayCluster\nmetadata: {name: x\n";
    assert_int_equal(wh_check_text("b.yaml", bad, strlen(bad), rows, &st, errbuf), WH_OK);
    assert_int_equal(st.errors, 1);
    assert_non_null(strstr(wh_json_str0(rows->child, "message"), "line 3"));
    /* The row carries the error's line (b.yaml:3 in the table), and the
     * summary counts no worker group for it. */
    assert_int_equal(wh_json_get(rows->child, "line")->valueint, 3);
    struct wh_buf t;
    wh_buf_init(&t, 1 << 16);
    assert_int_equal(wh_check_table(rows, &st, &t), WH_OK);
    assert_non_null(strstr(wh_buf_ptr(&t), "\nb.yaml:3: error -: line 3"));
    assert_non_null(strstr(wh_buf_ptr(&t), "0 TPU worker group(s)"));
    wh_buf_free(&t);
    const char *none = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n";
    assert_int_equal(wh_check_text("s.yaml", none, strlen(none), rows, &st, errbuf), WH_OK);
    assert_int_equal(cJSON_GetArraySize(rows), 1); /* other kinds give no row */
    assert_int_equal(wh_check_error_row(rows, &st, "gone.yaml", 0, "cannot read"), WH_OK);
    assert_int_equal(st.errors, 2);
    assert_int_equal(st.files, 2);
    cJSON_Delete(rows);
}

/* A worker-group field of the wrong type is what the API server refuses
 * (CRD schema); the engine alone would read it as absent and blame
 * something else ("numOfHosts is 0"). The error names the embedded path. */
static void test_wrong_types(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *needle;
    } cases[] = {
        {"kind: RayCluster\nmetadata: {name: c}\nspec:\n  workerGroupSpecs:\n"
         "  - {groupName: g, numOfHosts: \"2\"}\n",
         "spec.workerGroupSpecs[0].numOfHosts is \"2\" (a string)"},
        {"kind: RayJob\nmetadata: {name: j}\nspec:\n  rayClusterSpec:\n    workerGroupSpecs:\n"
         "    - {groupName: g, replicas: 1.5}\n",
         "spec.rayClusterSpec.workerGroupSpecs[0].replicas is 1.5 (a number)"},
        {"kind: RayService\nmetadata: {name: s}\nspec:\n  rayClusterConfig:\n"
         "    workerGroupSpecs: {groupName: g}\n",
         "spec.rayClusterConfig.workerGroupSpecs is {\"groupName\":\"g\"} (a mapping)"},
        {"kind: RayCluster\nmetadata: {name: c}\nspec:\n  workerGroupSpecs:\n"
         "  - {groupName: 7}\n",
         "spec.workerGroupSpecs[0].groupName is 7 (a number)"},
        {"kind: RayCluster\nmetadata: {name: c}\nspec:\n  workerGroupSpecs:\n"
         "  - {groupName: g, suspend: \"true\"}\n",
         "spec.workerGroupSpecs[0].suspend is \"true\" (a string)"},
        /* beyond int32: refused, not cast (UBSan, fuzz_yaml) */
        {"kind: RayCluster\nmetadata: {name: c}\nspec:\n  workerGroupSpecs:\n"
         "  - {groupName: g, maxReplicas: 8.88e67}\n",
         "spec.workerGroupSpecs[0].maxReplicas is 8.88e+67 (a number)"},
        {"kind: RayCluster\nmetadata: {name: c}\nspec:\n  workerGroupSpecs:\n"
         "  - {groupName: g, numOfHosts: 2147483648}\n",
         "spec.workerGroupSpecs[0].numOfHosts is 2147483648 (a number)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *rows = cJSON_CreateArray();
        struct wh_check_stats st = {0};
        char errbuf[WH_ERRBUF_LEN] = "";
        assert_int_equal(wh_check_text("t.yaml", cases[i].yaml, strlen(cases[i].yaml), rows, &st,
                                       errbuf),
                         WH_OK);
        const char *msg = wh_json_str0(rows->child, "message");
        if (st.errors != 1 || !strstr(msg, cases[i].needle))
            fail_msg("case %zu: %zu error(s), message '%s' lacks '%s'", i, st.errors, msg,
                     cases[i].needle);
        cJSON_Delete(rows);
    }
}

/* KubeRay 1.4+ creates no pods for a RayCluster named over 53 characters:
 * check says so (a warning; the webhook's verdict stands). A multi-host
 * group's pods would also get the subdomain "<cluster>-headless", over 63
 * characters: that group is rejected. */
#define LONG_CLUSTER(hosts, topology)                                                 \
    "kind: RayCluster\n"                                                              \
    "metadata: {name: a-cluster-name-that-is-much-longer-than-kuberay-accepts-xx}\n"  \
    "spec:\n"                                                                         \
    "  workerGroupSpecs:\n"                                                           \
    "  - groupName: g\n"                                                              \
    "    numOfHosts: " hosts "\n"                                                     \
    "    replicas: 1\n"                                                               \
    "    template:\n"                                                                 \
    "      spec:\n"                                                                   \
    "        nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice,\n" \
    "                       cloud.google.com/gke-tpu-topology: " topology "}\n"       \
    "        containers: [{name: w, resources: {limits: {google.com/tpu: 4}}}]\n"

static const cJSON *check_one(const char *yaml, cJSON *rows)
{
    struct wh_check_stats st = {0};
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(wh_check_text("l.yaml", yaml, strlen(yaml), rows, &st, errbuf), WH_OK);
    return row_of(rows, "g");
}

static void test_long_cluster_name(void **state)
{
    (void)state;
    cJSON *rows = cJSON_CreateArray();
    const cJSON *r = check_one(LONG_CLUSTER("1", "2x2x1"), rows);
    assert_string_equal(wh_json_str0(r, "verdict"), "ok");
    const cJSON *w = wh_json_get(r, "warnings");
    assert_int_equal(cJSON_GetArraySize(w), 1);
    assert_non_null(strstr(w->child->valuestring, "is 58 characters; KubeRay 1.4+ refuses"));
    cJSON_Delete(rows);

    rows = cJSON_CreateArray();
    r = check_one(LONG_CLUSTER("2", "2x2x2"), rows);
    assert_string_equal(wh_json_str0(r, "verdict"), "rejected");
    const char *m = wh_json_str0(r, "message");
    assert_non_null(strstr(m, "the pod subdomain (the headless Service) \"a-cluster-name-that-is-"
                              "much-longer-than-kuberay-accepts-xx-headless\" would have 67"));
    assert_non_null(strstr(m, "rename RayCluster"));
    cJSON_Delete(rows);
}

/* Issue 24 audit: a file of workloads only said "0 TPU worker group(s): 1
 * rejected"; the summary counts the Job, JobSet and LWS rows as workloads
 * and keeps its RayCluster-only form (docs/cli.md). */
static void test_summary_counts_workloads(void **state)
{
    (void)state;
    static const char jobs[] =
        "apiVersion: batch/v1\n"
        "kind: Job\n"
        "metadata: {name: train}\n"
        "spec:\n"
        "  completionMode: Indexed\n"
        "  parallelism: 2\n"
        "  completions: 2\n"
        "  template:\n"
        "    spec:\n"
        "      subdomain: train\n"
        "      nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice,\n"
        "                     cloud.google.com/gke-tpu-topology: 4x4}\n"
        "      containers: [{name: w, resources: {limits: {google.com/tpu: 4}}}]\n"
        "---\n"
        "apiVersion: batch/v1\n"
        "kind: Job\n"
        "metadata: {name: cpu}\n"
        "spec: {template: {spec: {containers: [{name: w}]}}}\n";
    cJSON *rows = cJSON_CreateArray();
    struct wh_check_stats st = {0};
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(wh_check_text("j.yaml", jobs, strlen(jobs), rows, &st, errbuf), WH_OK);
    assert_int_equal(cJSON_GetArraySize(rows), 1); /* the CPU Job is not a TPU workload */
    assert_string_equal(wh_json_str0(rows->child, "verdict"), "rejected");
    struct wh_buf t;
    wh_buf_init(&t, 1 << 16);
    assert_int_equal(wh_check_table(rows, &st, &t), WH_OK);
    assert_non_null(
        strstr(wh_buf_ptr(&t), "0 TPU worker group(s), 1 TPU workload(s): 1 rejected, 0 error(s)"));
    wh_buf_free(&t);
    cJSON_Delete(rows);
}

/* Issue 34: check says what the cluster would: a Job whose subslice is
 * bigger than its pool is rejected (the RayCluster's rule), and a topology
 * no documented node pool has (TPU7x 2x2x3) is ok with a warning, on a Job
 * and on a RayCluster group. */
static void test_subslice_and_undocumented_topology(void **state)
{
    (void)state;
    static const char text[] =
        "apiVersion: batch/v1\n"
        "kind: Job\n"
        "metadata: {name: sub}\n"
        "spec:\n"
        "  completionMode: Indexed\n"
        "  parallelism: 4\n"
        "  completions: 4\n"
        "  template:\n"
        "    metadata: {annotations: {cloud.google.com/gke-tpu-slice-topology: 2x2x4}}\n"
        "    spec:\n"
        "      subdomain: sub\n"
        "      nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu7x,\n"
        "                     cloud.google.com/gke-tpu-topology: 2x2x2}\n"
        "      containers: [{name: w, resources: {limits: {google.com/tpu: 4}}}]\n"
        "---\n"
        "apiVersion: batch/v1\n"
        "kind: Job\n"
        "metadata: {name: odd}\n"
        "spec:\n"
        "  completionMode: Indexed\n"
        "  parallelism: 3\n"
        "  completions: 3\n"
        "  template:\n"
        "    spec:\n"
        "      subdomain: odd\n"
        "      nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu7x,\n"
        "                     cloud.google.com/gke-tpu-topology: 2x2x3}\n"
        "      containers: [{name: w, resources: {limits: {google.com/tpu: 4}}}]\n"
        "---\n"
        "apiVersion: ray.io/v1\n"
        "kind: RayCluster\n"
        "metadata: {name: rc}\n"
        "spec:\n"
        "  workerGroupSpecs:\n"
        "  - groupName: odd\n"
        "    numOfHosts: 3\n"
        "    template:\n"
        "      spec:\n"
        "        nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu7x,\n"
        "                       cloud.google.com/gke-tpu-topology: 2x2x3}\n"
        "        containers: [{name: w, resources: {limits: {google.com/tpu: 4}}}]\n";
    cJSON *rows = cJSON_CreateArray();
    struct wh_check_stats st = {0};
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(wh_check_text("s.yaml", text, strlen(text), rows, &st, errbuf), WH_OK);
    assert_int_equal(cJSON_GetArraySize(rows), 3);
    const cJSON *sub = cJSON_GetArrayItem(rows, 0), *odd = cJSON_GetArrayItem(rows, 1);
    assert_string_equal(wh_json_str0(sub, "verdict"), "rejected");
    assert_non_null(strstr(wh_json_str0(sub, "message"),
                           "subslice \"2x2x4\" is not smaller than parent \"2x2x2\""));
    assert_string_equal(wh_json_str0(odd, "verdict"), "ok");
    const cJSON *w = wh_json_get(odd, "warnings"); /* then the Service's, not in the input */
    assert_int_equal(cJSON_GetArraySize(w), 2);
    assert_string_equal(w->child->valuestring,
                        "tpu7x topology 2x2x3 is no documented GKE shape: its pods may stay Pending");
    const cJSON *rc = cJSON_GetArrayItem(rows, 2);
    assert_string_equal(wh_json_str0(rc, "kind"), "RayCluster");
    assert_string_equal(wh_json_str0(rc, "verdict"), "ok");
    w = wh_json_get(rc, "warnings");
    assert_int_equal(cJSON_GetArraySize(w), 1);
    assert_non_null(strstr(w->child->valuestring, "is \"2x2x3\", a topology no documented tpu7x "
                                                  "node pool has (documented: 1x1x1, 2x2x1"));
    cJSON_Delete(rows);
}

/* Issue 34, item 3: v5p's documented shapes include every cube-rule shape
 * (4x4x12: the multiples of 4 the Cloud TPU v5p table leaves out), so check
 * says ok with no topology warning; 2x2x3 is still warned. */
static void test_v5p_cube_rule_topology(void **state)
{
    (void)state;
    static const char fmt[] = "apiVersion: batch/v1\n"
                              "kind: Job\n"
                              "metadata: {name: v5p}\n"
                              "spec:\n"
                              "  completionMode: Indexed\n"
                              "  parallelism: %d\n"
                              "  completions: %d\n"
                              "  template:\n"
                              "    spec:\n"
                              "      subdomain: v5p\n"
                              "      nodeSelector: {cloud.google.com/gke-tpu-accelerator: "
                              "tpu-v5p-slice,\n"
                              "                     cloud.google.com/gke-tpu-topology: %s}\n"
                              "      containers: [{name: w, resources: {limits: {google.com/tpu: "
                              "4}}}]\n";
    static const struct {
        const char *topo;
        int hosts;
        bool warned;
    } cases[] = {{"4x4x12", 48, false}, {"12x12x12", 432, false}, {"2x2x3", 3, true}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024];
        snprintf(text, sizeof(text), fmt, cases[i].hosts, cases[i].hosts, cases[i].topo);
        cJSON *rows = cJSON_CreateArray();
        struct wh_check_stats st = {0};
        char errbuf[WH_ERRBUF_LEN] = "";
        assert_int_equal(wh_check_text("v.yaml", text, strlen(text), rows, &st, errbuf), WH_OK);
        const cJSON *row = cJSON_GetArrayItem(rows, 0);
        assert_string_equal(wh_json_str0(row, "verdict"), "ok");
        bool warned = false;
        const cJSON *w;
        cJSON_ArrayForEach(w, wh_json_get(row, "warnings"))
        {
            warned |= strstr(w->valuestring, "no documented GKE shape") != NULL;
        }
        if (warned != cases[i].warned)
            fail_msg("v5p %s: warned is %d", cases[i].topo, warned);
        cJSON_Delete(rows);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_per_group_verdicts),
        cmocka_unit_test(test_unreadable_inputs),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_long_cluster_name),
        cmocka_unit_test(test_summary_counts_workloads),
        cmocka_unit_test(test_subslice_and_undocumented_topology),
        cmocka_unit_test(test_v5p_cube_rule_topology),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
