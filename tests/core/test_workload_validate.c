/* test_workload_validate.c: wh_validate_workload() with the node state (the
 * rules themselves are covered through the binary, tests/engine/): a
 * template naming only its node pool is judged on the generation and
 * topology its pods get, read as the pod path reads them
 * (workload_topology.h): the pool's TPU nodes, else a 4-field
 * TORCH_TPU_TOPOLOGY. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/buf.h"
#include "wh/decision.h"
#include "wh/json.h"
#include "wh/review.h"
#include "wh/state.h"
#include "wh/workload.h"
#include "wh/workload_validate.h"

/* A TPU container of 2 chips with env entries `env` (",{...}" each). */
#define CONTAINER(name, env)                                                                 \
    "{\"name\":\"" name "\",\"resources\":{\"limits\":{\"google.com/tpu\":\"2\"}},\"env\":[" \
    "{\"name\":\"MEGASCALE_PORT\",\"value\":\"9000\"}" env "]}"
#define PRESET ",{\"name\":\"TORCH_TPU_TOPOLOGY\",\"value\":\"2,2,2,1\"}"
/* One replicated job of 2 slices, `parallelism` pods each, naming only its
 * node pool (and `topo`, a ",\"...topology\":..." selector entry or ""). */
#define JOBSET(parallelism, topo, env)                                                       \
    "{\"metadata\":{\"name\":\"llm\",\"namespace\":\"ns\"},\"spec\":{\"replicatedJobs\":[{"  \
    "\"name\":\"slice\",\"replicas\":2,\"template\":{\"spec\":{\"parallelism\":" parallelism \
    ",\"completions\":" parallelism ",\"template\":{\"spec\":{\"nodeSelector\":{"            \
    "\"cloud.google.com/gke-nodepool\":\"pool-a\"" topo                                      \
    "},\"containers\":[" CONTAINER("c0", env) "," CONTAINER("c1", env) "]}}}}}]}}"
#define TOPO ",\"cloud.google.com/gke-tpu-topology\":\"2x2x2\""
#define NODE(accel)                                                                             \
    "[{\"metadata\":{\"name\":\"n0\",\"labels\":{\"cloud.google.com/gke-nodepool\":\"pool-a\"," \
    "\"cloud.google.com/gke-tpu-accelerator\":\"" accel "\","                                   \
    "\"cloud.google.com/gke-tpu-topology\":\"2x2x2\"}}}]"

/* Judge js on CREATE with the state st. */
static enum wh_err judge_st(const char *js, const struct wh_state *st, struct wh_decision *d,
                            char *errbuf)
{
    cJSON *req = cJSON_CreateObject();
    assert_non_null(req);
    assert_int_equal(wh_json_set_str(req, "operation", "CREATE"), WH_OK);
    assert_int_equal(wh_json_set(req, "kind", wh_test_parse("{\"kind\":\"JobSet\"}")), WH_OK);
    assert_int_equal(wh_json_set(req, "object", wh_test_parse(js)), WH_OK);
    struct wh_review *rv = NULL;
    assert_int_equal(wh_review_of_request(req, &rv), WH_OK);
    wh_decision_init(d);
    enum wh_err err = wh_validate_workload(rv, st, d, errbuf);
    wh_review_free(rv);
    cJSON_Delete(req);
    return err;
}

/* Judge js on CREATE with the nodes `nodes` (a JSON array; NULL: st NULL). */
static void judge(const char *js, const char *nodes, struct wh_decision *d)
{
    struct wh_memstate *ms = NULL;
    struct wh_state st;
    char errbuf[WH_ERRBUF_LEN];
    if (nodes) {
        ms = wh_memstate_new();
        assert_non_null(ms);
        cJSON *n = wh_test_parse(nodes);
        size_t added = 0;
        assert_int_equal(wh_memstate_add_nodes(ms, n, &added, errbuf), WH_OK);
        assert_int_equal(added, 1);
        cJSON_Delete(n);
        st = wh_memstate_view(ms);
    }
    assert_int_equal(judge_st(js, nodes ? &st : NULL, d, errbuf), WH_OK);
    wh_memstate_free(ms);
}

static bool says(const struct wh_decision *d, const char *part)
{
    return d->message && strstr(d->message, part);
}

/* No nodes known: the preset tells TPU7x, as on the pod path. */
static void test_pool_only_preset_tells_tpu7x(void **unused)
{
    (void)unused;
    struct wh_decision d;
    judge(JOBSET("2", TOPO, PRESET), NULL, &d);
    assert_false(d.allowed);
    assert_true(says(&d, "both use MEGASCALE_PORT 9000"));
    wh_decision_free(&d);
    /* and without a preset nothing tells the generation: admitted */
    judge(JOBSET("2", TOPO, ""), NULL, &d);
    assert_true(d.allowed);
    wh_decision_free(&d);
}

/* The pool's nodes name the generation, and win over the preset. */
static void test_pool_nodes_tell_the_generation(void **unused)
{
    (void)unused;
    struct wh_decision d;
    judge(JOBSET("2", TOPO, ""), NODE("tpu7x"), &d);
    assert_false(d.allowed);
    assert_true(says(&d, "both use MEGASCALE_PORT 9000"));
    wh_decision_free(&d);
    judge(JOBSET("2", TOPO, PRESET), NODE("tpu-v5p-slice"), &d);
    assert_true(d.allowed);
    wh_decision_free(&d);
    /* nodes of another pool tell nothing */
    judge(JOBSET("2", TOPO, ""),
          "[{\"metadata\":{\"name\":\"n0\",\"labels\":{\"cloud.google.com/gke-nodepool\":\"b\","
          "\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\"}}}]",
          &d);
    assert_true(d.allowed);
    wh_decision_free(&d);
}

/* A template without a topology gets the pool's, as its pods do: 2x2x2 of
 * 4 chips per pod is 2 hosts, so parallelism 1 is refused, naming the pool. */
static void test_pool_nodes_tell_the_topology(void **unused)
{
    (void)unused;
    struct wh_decision d;
    judge(JOBSET("1", "", ""), NULL, &d);
    assert_true(d.allowed); /* nothing known */
    wh_decision_free(&d);
    judge(JOBSET("1", "", ""), NODE("tpu-v5p-slice"), &d);
    assert_false(d.allowed);
    assert_true(says(&d, "parallelism is 1, expected 2 (topology 2x2x2"));
    wh_decision_free(&d);
    judge(JOBSET("1", "", ""), NODE("tpu-v6e-podslice"), &d); /* an unknown accelerator */
    assert_false(d.allowed);
    assert_true(says(&d, "the TPU nodes of node pool \"pool-a\" is \"tpu-v6e-podslice\""));
    wh_decision_free(&d);
}

/* The error the failing state callback below returns. */
static enum wh_err state_error;

static enum wh_err failing_each_node(const void *impl, wh_node_visit_fn fn, void *arg, char *errbuf)
{
    (void)impl;
    (void)fn;
    (void)arg;
    snprintf(errbuf, WH_ERRBUF_LEN, "node cache broken");
    return state_error;
}

/* A failing state callback is an error with its reason, not a verdict;
 * a node cache not synced yet (WH_ERR_UNAVAILABLE) is judged as no nodes
 * known, noted, so that the user's apply does not fail for a cache. */
static void test_state_failure(void **unused)
{
    (void)unused;
    static const struct wh_state_ops ops = {.each_node = failing_each_node};
    struct wh_state st = {.ops = &ops};
    struct wh_decision d;
    char errbuf[WH_ERRBUF_LEN] = "";
    state_error = WH_ERR_INVALID;
    assert_int_equal(judge_st(JOBSET("2", TOPO, ""), &st, &d, errbuf), WH_ERR_INVALID);
    assert_string_equal(errbuf, "node cache broken");
    wh_decision_free(&d);
    state_error = WH_ERR_UNAVAILABLE;
    assert_int_equal(judge_st(JOBSET("2", TOPO, ""), &st, &d, errbuf), WH_OK);
    assert_true(d.allowed);
    assert_non_null(strstr(wh_buf_ptr(&d.notes), "node pool \"pool-a\" not read"));
    wh_decision_free(&d);
    assert_int_equal(judge_st(JOBSET("2", TOPO, PRESET), &st, &d, errbuf), WH_OK);
    assert_false(d.allowed); /* the preset still tells TPU7x */
    wh_decision_free(&d);
}

/* Linear /validate-workload (issue 35 item 3): a template naming only its
 * node pool is read through the state's index of nodes by label
 * (each_node_with), never by a walk over every node; the answer is the
 * same as the walk's. */
static void test_pool_read_through_the_index(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    assert_non_null(ms);
    char errbuf[WH_ERRBUF_LEN];
    cJSON *n = wh_test_parse(NODE("tpu-v5p-slice"));
    size_t added = 0;
    assert_int_equal(wh_memstate_add_nodes(ms, n, &added, errbuf), WH_OK);
    cJSON_Delete(n);
    struct wh_state st = wh_memstate_view(ms);
    struct wh_state_ops ops = *st.ops;
    ops.each_node = failing_each_node; /* a walk is an error */
    state_error = WH_ERR_INVALID;
    struct wh_state indexed = {.ops = &ops, .impl = st.impl};
    struct wh_decision d;
    assert_int_equal(judge_st(JOBSET("1", "", ""), &indexed, &d, errbuf), WH_OK);
    assert_false(d.allowed);
    assert_true(says(&d, "parallelism is 1, expected 2 (topology 2x2x2"));
    wh_decision_free(&d);
    wh_memstate_free(ms);
}

/* A JobSet of one replicated job of `parallelism` pods of 4 TPU7x chips,
 * its template's metadata `meta` and node selector entries `sel`. */
#define TPU7X_JOBSET(parallelism, meta, sel)                                                   \
    "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":" \
    "\"llm\",\"namespace\":\"ns\"},\"spec\":{\"replicatedJobs\":[{\"name\":\"slice\","         \
    "\"replicas\":1,\"template\":{\"spec\":{\"parallelism\":" parallelism                      \
    ",\"completions\":" parallelism ",\"template\":{\"metadata\":{" meta "},\"spec\":{"        \
    "\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\"" sel "},"            \
    "\"containers\":[" CONTAINER("c0", "") "," CONTAINER("c1", "") "]}}}}}]}}"
#define SUBSLICE(t) "\"annotations\":{\"cloud.google.com/gke-tpu-slice-topology\":\"" t "\"}"
#define POOL_A ",\"cloud.google.com/gke-nodepool\":\"pool-a\""

/* Issue 34, item 2: the RayCluster's subslice rule on the workload path. A
 * subslice bigger than its parent pool (the node selector's topology, else
 * the pool's TPU nodes) is refused at the object; one that fits is not. */
static void test_subslice_must_fit_its_pool(void **unused)
{
    (void)unused;
    struct wh_decision d;
    judge(TPU7X_JOBSET("4", SUBSLICE("2x2x4"), TOPO), NULL, &d);
    assert_false(d.allowed);
    assert_true(
        says(&d, "spec.replicatedJobs[0] (\"slice\").template.spec.template.metadata.annotations[\""
                 "cloud.google.com/gke-tpu-slice-topology\"]: subslice \"2x2x4\" is not "
                 "smaller than parent \"2x2x2\""));
    assert_true(
        says(&d, "(the parent is spec.replicatedJobs[0] (\"slice\").template.spec.template.spec."
                 "nodeSelector[\"cloud.google.com/gke-tpu-topology\"])"));
    wh_decision_free(&d);
    /* the parent from the pool's TPU nodes (2x2x2) */
    judge(TPU7X_JOBSET("4", SUBSLICE("2x2x4"), POOL_A), NODE("tpu7x"), &d);
    assert_false(d.allowed);
    assert_true(says(&d, "subslice \"2x2x4\" is not smaller than parent \"2x2x2\""));
    assert_true(says(&d, "(the parent is the TPU nodes of node pool \"pool-a\")"));
    wh_decision_free(&d);
    /* fits: admitted, on a stated parent or the pool's */
    judge(TPU7X_JOBSET("1", SUBSLICE("2x2x1"), TOPO), NULL, &d);
    assert_true(d.allowed);
    wh_decision_free(&d);
    judge(TPU7X_JOBSET("2", SUBSLICE("2x2x2"), POOL_A), NODE("tpu7x"), &d);
    assert_true(d.allowed);
    wh_decision_free(&d);
    /* no parent known: nothing to judge it by */
    judge(TPU7X_JOBSET("4", SUBSLICE("2x2x4"), ""), NULL, &d);
    assert_true(d.allowed);
    wh_decision_free(&d);
}

/* A slice a queue places (Kueue's queue-name label on the object, its
 * podset-required-topology annotation) or the user exempts
 * (skip-tpu-webhook-check) is not judged by the subslice rule, as on the
 * RayCluster path: dynamic slicing stitches slices bigger than one pool. */
static void test_managed_subslice_not_judged(void **unused)
{
    (void)unused;
    static const char *const metas[] = {
        "\"annotations\":{\"cloud.google.com/gke-tpu-slice-topology\":\"2x2x4\","
        "\"cloud.google.com/skip-tpu-webhook-check\":\"true\"}",
        "\"annotations\":{\"cloud.google.com/gke-tpu-slice-topology\":\"2x2x4\","
        "\"kueue.x-k8s.io/podset-required-topology\":\"cloud.google.com/gke-tpu-block\"}",
        "\"labels\":{\"kueue.x-k8s.io/queue-name\":\"lq\"}," SUBSLICE("2x2x4"),
    };
    struct wh_decision d;
    for (size_t i = 0; i < sizeof(metas) / sizeof(metas[0]); i++) {
        char js[2048];
        snprintf(js, sizeof(js), TPU7X_JOBSET("4", "%s", TOPO), metas[i]);
        judge(js, NULL, &d);
        assert_true(d.allowed);
        wh_decision_free(&d);
    }
    /* the queue's label on the JobSet itself */
    const char *plain = TPU7X_JOBSET("4", SUBSLICE("2x2x4"), TOPO);
    const char *at = strstr(plain, "\"namespace\":\"ns\"}");
    assert_non_null(at);
    char js[2048];
    snprintf(js, sizeof(js),
             "%.*s\"namespace\":\"ns\",\"labels\":{\"kueue.x-k8s.io/queue-name\":"
             "\"lq\"}}%s",
             (int)(at - plain), plain, at + strlen("\"namespace\":\"ns\"}"));
    judge(js, NULL, &d);
    assert_true(d.allowed);
    wh_decision_free(&d);
}

/* A pod of TPU7x subslice `sub` (4 chips) naming only its accelerator and
 * node pool, with pod metadata `meta` (",..." entries or ""). */
#define SUBSLICE_POD(sub, meta)                                                                \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"      \
    "\"ns\",\"annotations\":{\"cloud.google.com/gke-tpu-slice-topology\":\"" sub "\"" meta     \
    "}},\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\"" POOL_A \
    "},\"containers\":[" CONTAINER("c0", "") "," CONTAINER("c1", "") "]}}"

static enum wh_err mutate_st(const char *pod, const struct wh_state *st, struct wh_decision *d)
{
    cJSON *req = cJSON_CreateObject();
    assert_non_null(req);
    assert_int_equal(wh_json_set_str(req, "operation", "CREATE"), WH_OK);
    assert_int_equal(wh_json_set_str(req, "namespace", "ns"), WH_OK);
    assert_int_equal(wh_json_set(req, "kind", wh_test_parse("{\"kind\":\"Pod\"}")), WH_OK);
    assert_int_equal(wh_json_set(req, "object", wh_test_parse(pod)), WH_OK);
    struct wh_review *rv = NULL;
    assert_int_equal(wh_review_of_request(req, &rv), WH_OK);
    wh_decision_init(d);
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_err err = wh_mutate_workload(rv, st, d, errbuf);
    wh_review_free(rv);
    cJSON_Delete(req);
    return err;
}

/* The pod path's subslice rule reads the pool's nodes only when no parent
 * is stated: a node cache not synced yet leaves it unjudged rather than
 * refusing a pod that needs no node read otherwise (the webhook fails
 * closed, so a refusal here would stop such pods at every start-up); a
 * managed pod is not judged. */
static void test_pod_subslice_never_refused_for_the_cache(void **unused)
{
    (void)unused;
    static const struct wh_state_ops ops = {.each_node = failing_each_node};
    struct wh_state st = {.ops = &ops};
    struct wh_decision d;
    state_error = WH_ERR_UNAVAILABLE;
    assert_int_equal(mutate_st(SUBSLICE_POD("2x2x1", ""), &st, &d), WH_OK);
    assert_true(d.allowed);
    assert_true(d.n_ops > 0); /* mutated: a single-host slice */
    wh_decision_free(&d);
    /* synced, the rule judges: 2x2x4 is not inside the pool's 2x2x2 */
    struct wh_memstate *ms = wh_memstate_new();
    assert_non_null(ms);
    cJSON *n = wh_test_parse(NODE("tpu7x"));
    size_t added = 0;
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(wh_memstate_add_nodes(ms, n, &added, errbuf), WH_OK);
    cJSON_Delete(n);
    struct wh_state synced = wh_memstate_view(ms);
    assert_int_equal(mutate_st(SUBSLICE_POD("2x2x4", ""), &synced, &d), WH_OK);
    assert_false(d.allowed);
    assert_true(says(&d, "subslice \"2x2x4\" is not smaller than parent \"2x2x2\""));
    wh_decision_free(&d);
    assert_int_equal(mutate_st(SUBSLICE_POD("2x2x4", ",\"cloud.google.com/skip-tpu-webhook-check\":"
                                                     "\"true\""),
                               &synced, &d),
                     WH_OK);
    assert_true(d.allowed);
    wh_decision_free(&d);
    wh_memstate_free(ms);
}

/* Issue 34, item 3: a topology no documented node pool has is warned about
 * on the object, with an Event on it (the whole text, with the documented
 * list); a documented one, or one the pool's nodes state, is not. */
static void test_undocumented_topology_warned(void **unused)
{
    (void)unused;
    struct wh_decision d;
    judge(TPU7X_JOBSET("3", "", ",\"cloud.google.com/gke-tpu-topology\":\"2x2x3\""), NULL, &d);
    assert_true(d.allowed);
    assert_int_equal(cJSON_GetArraySize(d.warnings), 1);
    assert_string_equal(cJSON_GetArrayItem(d.warnings, 0)->valuestring,
                        "replicated job \"slice\": tpu7x topology 2x2x3 is no documented GKE "
                        "shape: its pods may stay Pending");
    assert_int_equal(d.n_events, 1);
    assert_string_equal(d.events[0].reason, "TPUTopologyUndocumented");
    assert_non_null(strstr(d.events[0].text, "(documented: 1x1x1, 2x2x1, 2x2x2, 2x2x4"));
    assert_string_equal(d.subject.kind, "JobSet");
    assert_string_equal(d.subject.api_version, "jobset.x-k8s.io/v1alpha2");
    assert_string_equal(d.subject.ns, "ns");
    assert_string_equal(d.subject.name, "llm");
    assert_string_equal(d.subject.uid, "");
    wh_decision_free(&d);
    judge(TPU7X_JOBSET("2", "", TOPO), NULL, &d);
    assert_true(d.allowed);
    assert_null(d.warnings);
    assert_int_equal(d.n_events, 0);
    wh_decision_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_only_preset_tells_tpu7x),
        cmocka_unit_test(test_pool_nodes_tell_the_generation),
        cmocka_unit_test(test_pool_nodes_tell_the_topology),
        cmocka_unit_test(test_state_failure),
        cmocka_unit_test(test_pool_read_through_the_index),
        cmocka_unit_test(test_subslice_must_fit_its_pool),
        cmocka_unit_test(test_managed_subslice_not_judged),
        cmocka_unit_test(test_pod_subslice_never_refused_for_the_cache),
        cmocka_unit_test(test_undocumented_topology_warned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
