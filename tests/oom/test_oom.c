/* test_oom.c: the engine under allocation failure.
 *
 * Every case is first reviewed with no failure (the reference answer, and the
 * number of allocation attempts A it takes). Then, for n = 1 .. A, the review
 * is repeated with allocation attempt n failing (once, then "from n on"). Each
 * run must either fail with an error code and a reason in errbuf, or succeed
 * with exactly the reference answer (an allocation failure must never turn
 * into a different decision or a partial patch), and must give back every
 * block it took (live-block count; ASan checks the rest in CI).
 *
 * Linked with --wrap for the allocator (tests/oom/CMakeLists.txt). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "allocwrap.h"
#include "testutil.h"
#include "../state_fixture.h" /* WH_FIXTURE_PODS, WH_FIXTURE_NODES */
#include "wh/b64.h"
#include "wh/engine.h"
#include "wh/jsonpatch.h"
#include "wh/state.h"

/* ---- inputs -------------------------------------------------------------- */

/* Native tpu7x pod, 2 hosts, two TPU containers (fixture). */
#define NATIVE_FIXTURE "reviews/tpu7x-2x2x2-two-containers.json"
/* Legacy v6e 4x4 pod, 4 hosts (fixture); two hosts of replica 0 exist. */
#define LEGACY_FIXTURE "reviews/v6e-16-legacy.json"

static const char existing_pods[] = WH_FIXTURE_PODS;

static const char nodes[] = WH_FIXTURE_NODES;

/* A subsliced tpu7x pod: parent 4x4x4, slice 2x2x2 over 2 hosts; nodes in
 * subblocks of 2 give the affinity key. Native indices, user env to keep. */
static const char subslice_pod[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u-sub\",\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"namespace\":\"ml\","
    "\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\","
    "\"annotations\":{\"cloud.google.com/gke-tpu-slice-topology\":\"2x2x2\"},"
    "\"labels\":{\"ray.io/cluster\":\"c\",\"ray.io/group\":\"g\","
    "\"ray.io/worker-group-replica-index\":\"1\",\"ray.io/replica-host-index\":\"1\","
    "\"ray.io/worker-group-replica-name\":\"c-g-x\"}},"
    "\"spec\":{\"affinity\":{\"nodeAffinity\":{\"x\":1}},\"containers\":["
    "{\"name\":\"a\",\"resources\":{\"limits\":{\"google.com/tpu\":2}},"
    "\"env\":[{\"name\":\"MEGASCALE_NUM_SLICES\",\"value\":\"2\"},"
    "{\"name\":\"TPU_WORKER_HOSTNAMES\",\"value\":\"localhost\"}]},"
    "{\"name\":\"side\"},"
    "{\"name\":\"b\",\"resources\":{\"requests\":{\"google.com/tpu\":\"2\"}}}],"
    "\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\","
    "\"cloud.google.com/gke-tpu-topology\":\"4x4x4\"}}}}}";

#define GROUP(name, hosts, accel, topo, chips, extra_env, ann)                              \
    "{\"groupName\":\"" name "\",\"numOfHosts\":" hosts ",\"rayStartParams\":{"             \
    "\"resources\":\"{\\\"TPU\\\": 8}\"},\"template\":{\"metadata\":{\"annotations\":{" ann \
    "}},\"spec\":{\"containers\":[{\"name\":\"w\",\"resources\":{\"limits\":{"              \
    "\"google.com/tpu\":\"" chips "\"}},\"env\":[" extra_env "]}],"                         \
    "\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"" accel "\","             \
    "\"cloud.google.com/gke-tpu-topology\":\"" topo "\"}}}}"

/* Admitted with warnings: subslice found through nodes, megascale on a single
 * host, tpu7x TPU=2x chips without the per-chip env (a 3-D topology on v6e,
 * a warning before issue 24, is denied: cluster_bad's "cube"). */
static const char cluster_ok[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u-rc\",\"kind\":{\"kind\":\"RayCluster\"},\"operation\":\"CREATE\","
    "\"object\":{\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\"},\"spec\":{"
    "\"headGroupSpec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"h\"}]}}},"
    "\"workerGroupSpecs\":[" GROUP("sub", "2", "tpu7x", "4x4x4", "4", "", "\"cloud.google.com/gke-tpu-slice-topology\":\"2x2x2\"") "," GROUP(
        "mega", "1", "tpu-v6e-slice", "2x4", "8",
        "{\"name\":\"MEGASCALE_NUM_SLICES\",\"value\":\"2\"}",
        "") "," GROUP("cube", "2", "tpu-v4-podslice", "2x2x2", "4", "",
                      "") "," GROUP("x7", "1", "tpu7x", "2x2x1", "4", "",
                                    "") ","
                                        "{\"groupName\":\"cpu\",\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}"
                                        "]}}}}";

/* Denied: every failing group is reported. */
static const char cluster_bad[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u-rc2\",\"kind\":{\"kind\":\"RayCluster\"},\"operation\":\"UPDATE\","
    "\"object\":{\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\"},\"spec\":{"
    "\"workerGroupSpecs\":[" GROUP("wrong", "3", "tpu-v6e-slice", "4x4", "4", "", "") "," GROUP(
        "cube", "2", "tpu-v6e-slice", "2x2x2", "4", "",
        "") "," GROUP("nodiv", "2", "tpu-v6e-slice", "4x4", "3", "",
                      "") "," GROUP("big", "2", "tpu7x", "2x2x2", "4", "",
                                    "\"cloud.google.com/gke-tpu-slice-topology\":\"4x4x4\"") ","
                                                                                             "{\"groupName\":\"empty\",\"numOfHosts\":1,\"template\":{\"spec\":{\"containers\":[]}}}"
                                                                                             "]}}}}";

/* A pod that is denied (missing group label). */
static const char pod_denied[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u-d\",\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\","
    "\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"labels\":{\"ray.io/cluster\":\"c\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"google.com/tpu\":4}}}],"
    "\"nodeSelector\":{\"cloud.google.com/gke-tpu-topology\":\"2x2x2\"}}}}}";

/* ---- the sweep ----------------------------------------------------------- */

struct outcome {
    enum wh_err err;
    char *body; /* malloc'd copy, NULL on error */
    int hit;    /* an allocation failed during the review */
};

static struct outcome run_once(const char *body, size_t len, const struct wh_state *st)
{
    struct wh_engine_result res;
    char errbuf[WH_ERRBUF_LEN];
    struct outcome o = {0};
    o.err = wh_engine_review(body, len, WH_ROUTE_ANY, st, &res, errbuf);
    o.hit = wh_allocwrap_failed();
    wh_allocwrap_fail_at(0, 0); /* the checks below must not fail */
    if (o.err) {
        assert_true(errbuf[0] != '\0');
        assert_null(res.body);
    } else {
        assert_non_null(res.body);
        assert_int_equal(strlen(res.body), res.body_len);
        o.body = strdup(res.body);
        assert_non_null(o.body);
    }
    wh_engine_result_free(&res);
    return o;
}

/* The response with its patch decoded, for failure messages; malloc'd. */
static char *readable(const char *body)
{
    cJSON *j = wh_test_parse(body);
    cJSON *resp = cJSON_GetObjectItemCaseSensitive(j, "response");
    cJSON *patch = cJSON_GetObjectItemCaseSensitive(resp, "patch");
    if (cJSON_IsString(patch)) {
        struct wh_buf b;
        wh_buf_init(&b, 1 << 26);
        assert_int_equal(wh_b64_decode(&b, patch->valuestring, strlen(patch->valuestring)), WH_OK);
        cJSON_ReplaceItemInObjectCaseSensitive(resp, "patch", cJSON_CreateString(wh_buf_ptr(&b)));
        wh_buf_free(&b);
    }
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    char *copy = strdup(text);
    cJSON_free(text);
    return copy;
}

/* Report the first n that went wrong instead of stopping at cmocka's line. */
static void sweep(const char *body, size_t len, const struct wh_state *st, bool expect_allowed)
{
    long live0 = wh_allocwrap_stats().live;
    wh_allocwrap_fail_at(0, 0);
    unsigned long before = wh_allocwrap_stats().attempts;
    struct outcome ref = run_once(body, len, st);
    unsigned long attempts = wh_allocwrap_stats().attempts - before;
    assert_int_equal(ref.err, WH_OK);
    assert_non_null(strstr(ref.body, expect_allowed ? "\"allowed\":true" : "\"allowed\":false"));
    assert_int_equal(wh_allocwrap_stats().live, live0 + 1); /* ref.body */
    cJSON *j = wh_test_parse(ref.body);
    cJSON_Delete(j);
    assert_true(attempts > 10);
    unsigned long failures = 0;
    for (int sticky = 0; sticky <= 1; sticky++) {
        for (unsigned long n = 1; n <= attempts + 2; n++) {
            wh_allocwrap_fail_at(n, sticky);
            struct outcome o = run_once(body, len, st);
            if (o.err) {
                failures++;
                if (!o.hit)
                    fail_msg("n=%lu sticky=%d: error %s without an allocation failure", n, sticky,
                             wh_strerror(o.err));
            } else if (strcmp(o.body, ref.body)) {
                char *got = readable(o.body), *want = readable(ref.body);
                size_t at = 0;
                while (got[at] && got[at] == want[at])
                    at++;
                size_t from = at > 80 ? at - 80 : 0;
                fail_msg("n=%lu sticky=%d: allocation failure changed the answer at byte "
                         "%zu:\ngot  ...%.300s\nwant ...%.300s",
                         n, sticky, at, got + from, want + from);
            }
            free(o.body);
            if (wh_allocwrap_stats().live != live0 + 1)
                fail_msg("n=%lu sticky=%d: %ld block(s) leaked", n, sticky,
                         wh_allocwrap_stats().live - live0 - 1);
        }
    }
    free(ref.body);
    assert_true(failures > 0);
    print_message("%lu allocation attempts per review, %lu failed runs, no crash or leak\n",
                  attempts, failures);
}

static void sweep_text(const char *text, const struct wh_state *st, bool allowed)
{
    sweep(text, strlen(text), st, allowed);
}

static struct wh_memstate *state_with(const char *pods, const char *nodes_json)
{
    struct wh_memstate *ms = wh_memstate_new();
    char errbuf[WH_ERRBUF_LEN];
    assert_non_null(ms);
    if (pods) {
        cJSON *j = wh_test_parse(pods);
        size_t n = 0;
        assert_int_equal(wh_memstate_add_pods(ms, j, &n, errbuf), WH_OK);
        assert_true(n > 0);
        cJSON_Delete(j);
    }
    if (nodes_json) {
        cJSON *j = wh_test_parse(nodes_json);
        size_t n = 0;
        assert_int_equal(wh_memstate_add_nodes(ms, j, &n, errbuf), WH_OK);
        assert_true(n > 0);
        cJSON_Delete(j);
    }
    return ms;
}

static void test_native_multihost_pod(void **unused)
{
    (void)unused;
    size_t len;
    char *body = wh_test_read_fixture(NATIVE_FIXTURE, &len);
    struct wh_memstate *ms = state_with(NULL, NULL);
    struct wh_state st = wh_memstate_view(ms);
    sweep(body, len, &st, true);
    wh_memstate_free(ms);
    free(body);
}

static void test_legacy_multihost_pod(void **unused)
{
    (void)unused;
    size_t len;
    char *body = wh_test_read_fixture(LEGACY_FIXTURE, &len);
    struct wh_memstate *ms = state_with(existing_pods, NULL);
    struct wh_state st = wh_memstate_view(ms);
    sweep(body, len, &st, true);
    wh_memstate_free(ms);
    free(body);
}

static void test_subslice_pod(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = state_with(NULL, nodes);
    struct wh_state st = wh_memstate_view(ms);
    sweep_text(subslice_pod, &st, true);
    wh_memstate_free(ms);
}

static void test_denied_pod(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = state_with(NULL, NULL);
    struct wh_state st = wh_memstate_view(ms);
    sweep_text(pod_denied, &st, false);
    wh_memstate_free(ms);
}

static void test_raycluster_warnings(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = state_with(NULL, nodes);
    struct wh_state st = wh_memstate_view(ms);
    sweep_text(cluster_ok, &st, true);
    wh_memstate_free(ms);
}

static void test_raycluster_denied(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = state_with(NULL, nodes);
    struct wh_state st = wh_memstate_view(ms);
    sweep_text(cluster_bad, &st, false);
    wh_memstate_free(ms);
}

/* The state itself under allocation failure: loading pods and nodes either
 * fails cleanly or loads everything. */
static void test_memstate_load(void **unused)
{
    (void)unused;
    cJSON *pods = wh_test_parse(existing_pods), *nj = wh_test_parse(nodes);
    long live0 = wh_allocwrap_stats().live;
    for (unsigned long n = 1; n < 200; n++) {
        char errbuf[WH_ERRBUF_LEN];
        wh_allocwrap_fail_at(n, 0);
        struct wh_memstate *ms = wh_memstate_new();
        size_t np = 0, nn = 0;
        enum wh_err e1 = ms ? wh_memstate_add_pods(ms, pods, &np, errbuf) : WH_ERR_NOMEM;
        enum wh_err e2 = ms ? wh_memstate_add_nodes(ms, nj, &nn, errbuf) : WH_ERR_NOMEM;
        int hit = wh_allocwrap_failed();
        wh_allocwrap_fail_at(0, 0);
        if (!e1)
            assert_int_equal(np, 2);
        if (!e2)
            assert_int_equal(nn, 4);
        if (!hit)
            assert_true(!e1 && !e2);
        wh_memstate_free(ms);
        assert_int_equal(wh_allocwrap_stats().live, live0);
    }
    cJSON_Delete(pods);
    cJSON_Delete(nj);
}

/* The RFC 6902 applier under allocation failure: the document is either
 * fully patched or untouched, and nothing leaks. */
static void test_jsonpatch_apply(void **unused)
{
    (void)unused;
    static const char doc_text[] =
        "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b/c\":\"2\"}},\"spec\":{\"containers\":"
        "[{\"name\":\"w\",\"env\":[{\"name\":\"X\",\"value\":\"x\"}]}]}}";
    static const char patch_text[] =
        "[{\"op\":\"add\",\"path\":\"/metadata/labels/replicaIndex\",\"value\":\"g-0\"},"
        "{\"op\":\"replace\",\"path\":\"/metadata/labels/a\",\"value\":{\"deep\":[1,2,{\"x\":null}]}},"
        "{\"op\":\"remove\",\"path\":\"/metadata/labels/b~1c\"},"
        "{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"Y\",\"value\":\"y\"}},"
        "{\"op\":\"copy\",\"from\":\"/spec/containers/0\",\"path\":\"/spec/copy\"},"
        "{\"op\":\"move\",\"from\":\"/spec/copy\",\"path\":\"/metadata/moved\"},"
        "{\"op\":\"test\",\"path\":\"/metadata/moved/name\",\"value\":\"w\"},"
        "{\"op\":\"add\",\"path\":\"/spec/affinity\",\"value\":{\"podAffinity\":{}}}]";
    cJSON *patch = wh_test_parse(patch_text);
    char errbuf[WH_ERRBUF_LEN];
    cJSON *doc = wh_test_parse(doc_text);
    unsigned long before = wh_allocwrap_stats().attempts;
    assert_int_equal(wh_jsonpatch_apply(&doc, patch, errbuf), WH_OK);
    unsigned long attempts = wh_allocwrap_stats().attempts - before;
    char *want = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    unsigned long failures = 0;
    for (unsigned long n = 1; n <= attempts + 2; n++) {
        long live0 = wh_allocwrap_stats().live;
        doc = wh_test_parse(doc_text);
        wh_allocwrap_fail_at(n, 0);
        enum wh_err err = wh_jsonpatch_apply(&doc, patch, errbuf);
        int hit = wh_allocwrap_failed();
        wh_allocwrap_fail_at(0, 0);
        char *got = cJSON_PrintUnformatted(doc);
        if (err) {
            failures++;
            assert_true(hit);
            assert_string_equal(got, "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b/c\":\"2\"}},"
                                     "\"spec\":{\"containers\":[{\"name\":\"w\",\"env\":"
                                     "[{\"name\":\"X\",\"value\":\"x\"}]}]}}");
        } else if (strcmp(got, want)) {
            fail_msg("n=%lu: allocation failure changed the result:\n%s\ninstead of\n%s", n, got,
                     want);
        }
        cJSON_free(got);
        cJSON_Delete(doc);
        if (wh_allocwrap_stats().live != live0)
            fail_msg("n=%lu: %ld block(s) leaked", n, wh_allocwrap_stats().live - live0);
    }
    cJSON_free(want);
    cJSON_Delete(patch);
    assert_true(failures > 0);
    print_message("%lu allocation attempts per apply, %lu failed runs\n", attempts, failures);
}

int main(void)
{
    wh_allocwrap_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_multihost_pod), cmocka_unit_test(test_legacy_multihost_pod),
        cmocka_unit_test(test_subslice_pod),         cmocka_unit_test(test_denied_pod),
        cmocka_unit_test(test_raycluster_warnings),  cmocka_unit_test(test_raycluster_denied),
        cmocka_unit_test(test_memstate_load),        cmocka_unit_test(test_jsonpatch_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
