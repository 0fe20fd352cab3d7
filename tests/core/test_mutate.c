/* test_mutate.c: wh_mutate_pod() at the function level (the end-to-end
 * fixture suite, tests/engine/, covers every rule through the binary; these
 * pin the decision data the shell relies on: assignment fields, notes,
 * denials without patches, D4/D6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/decision.h"
#include "wh/json.h"
#include "wh/jsonpatch.h"
#include "wh/mutate.h"
#include "wh/podspec.h" /* wh_pod_is_legacy */
#include "wh/state.h"

#define LABELS(extra)                                                                    \
    "\"labels\":{\"ray.io/cluster\":\"rc\",\"ray.io/group\":\"g\",\"ray.io/node-type\":" \
    "\"worker\",\"app.kubernetes.io/created-by\":\"kuberay-operator\"" extra "}"
#define POD(extra_labels, env)                                                                                    \
    "{\"metadata\":{\"generateName\":\"rc-g-worker-\",\"namespace\":\"ns\"," LABELS(                              \
        extra_labels) "},\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\"," \
                      "\"cloud.google.com/gke-tpu-topology\":\"4x4\"},\"containers\":[{\"name\":\"w\","           \
                      "\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}}" env "}]}}"

static unsigned long the_pick;
static const char *the_nonce; /* what the state's legacy_claim_nonce answers */

static unsigned long pick_of_test(const void *impl)
{
    (void)impl;
    return the_pick;
}

static const char *nonce_of_test(const void *impl)
{
    (void)impl;
    return the_nonce;
}

/* Run wh_mutate_pod on a request for pod_json against ms; pick: what the
 * state's legacy_pick answers (0: the callback is NULL); the_nonce set:
 * what its legacy_claim_nonce answers (NULL: the callback is NULL). */
static void decide_pick(const char *pod_json, const char *op, struct wh_memstate *ms,
                        unsigned long pick, struct wh_decision *d)
{
    cJSON *req = cJSON_CreateObject();
    assert_non_null(req);
    assert_int_equal(wh_json_set_str(req, "operation", op), WH_OK);
    assert_int_equal(wh_json_set(req, "kind", wh_test_parse("{\"kind\":\"Pod\"}")), WH_OK);
    assert_int_equal(wh_json_set(req, "object", wh_test_parse(pod_json)), WH_OK);
    struct wh_review *rv = NULL;
    assert_int_equal(wh_review_of_request(req, &rv), WH_OK);
    struct wh_state st = wh_memstate_view(ms);
    struct wh_state_ops ops = *st.ops;
    if (pick) {
        the_pick = pick;
        ops.legacy_pick = pick_of_test;
    }
    if (the_nonce)
        ops.legacy_claim_nonce = nonce_of_test;
    st.ops = &ops;
    char errbuf[WH_ERRBUF_LEN];
    wh_decision_init(d);
    assert_int_equal(wh_mutate_pod(rv, &st, d, errbuf), WH_OK);
    wh_review_free(rv);
    cJSON_Delete(req);
}

/* Run wh_mutate_pod on a request for pod_json against ms. */
static void decide(const char *pod_json, const char *op, struct wh_memstate *ms,
                   struct wh_decision *d)
{
    decide_pick(pod_json, op, ms, 0, d);
}

static const char *env_of(const cJSON *pod, const char *name)
{
    const cJSON *env = wh_json_path(pod, "spec", "containers", NULL);
    env = wh_json_get(cJSON_GetArrayItem(env, 0), "env");
    for (const cJSON *e = env ? env->child : NULL; e; e = e->next)
        if (!strcmp(wh_json_str0(e, "name"), name))
            return wh_json_str(e, "value");
    return NULL;
}

/* Run wh_mutate_pod on a CREATE of pod_json against ms, the state naming
 * nonce as the claim of what it assigns; the patched pod in *out (NULL
 * when there is no patch; cJSON_Delete). */
static void decide_nonce(const char *pod_json, struct wh_memstate *ms, const char *nonce,
                         struct wh_decision *d, cJSON **out)
{
    the_nonce = nonce;
    decide_pick(pod_json, "CREATE", ms, 0, d);
    the_nonce = NULL;
    *out = NULL;
    if (!wh_buf_len(&d->patch))
        return;
    char errbuf[WH_ERRBUF_LEN];
    *out = wh_test_parse(pod_json);
    cJSON *patch = wh_test_parse(wh_buf_ptr(&d->patch));
    assert_int_equal(wh_jsonpatch_apply(out, patch, errbuf), WH_OK);
    cJSON_Delete(patch);
}

static const char *claim_nonce_of(const cJSON *pod)
{
    return wh_json_str(wh_json_path(pod, "metadata", "annotations", NULL), WH_ANN_CLAIM_NONCE);
}

/* Indices the engine assigns name the claim that stands for them, on the
 * pod (annotation tpu-webhook/claim-nonce): with no annotations yet, with
 * others kept, over a nonce the pod already carried (copied from another
 * pod); indices the pod already has (reused, no claim) and a state with no
 * claim leave the annotations as they are. */
static void test_claim_nonce_on_assigned_pods(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_decision d;
    cJSON *pod;
    decide_nonce(POD("", ""), ms, "0123456789abcdef0123456789abcdef", &d, &pod);
    assert_true(d.assigned);
    assert_string_equal(claim_nonce_of(pod), "0123456789abcdef0123456789abcdef");
    cJSON_Delete(pod);
    wh_decision_free(&d);

    static const char with_ann[] =
        "{\"metadata\":{\"annotations\":{\"a\":\"b\",\"tpu-webhook/claim-nonce\":\"copied\"},"
        "\"generateName\":\"rc-g-worker-\",\"namespace\":\"ns\"," LABELS(
            "") "},\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":"
                "\"tpu-v6e-slice\",\"cloud.google.com/gke-tpu-topology\":\"4x4\"},"
                "\"containers\":[{\"name\":\"w\",\"resources\":{\"limits\":{\"google.com/tpu\":"
                "\"4\"}}}]}}";
    decide_nonce(with_ann, ms, "fedcba9876543210fedcba9876543210", &d, &pod);
    assert_true(d.assigned);
    assert_string_equal(claim_nonce_of(pod), "fedcba9876543210fedcba9876543210");
    assert_string_equal(wh_json_str0(wh_json_path(pod, "metadata", "annotations", NULL), "a"), "b");
    /* The same pod reviewed again keeps its indices: no claim, no nonce. */
    char *text = cJSON_PrintUnformatted(pod);
    cJSON_Delete(pod);
    wh_decision_free(&d);
    decide_nonce(text, ms, "00000000000000000000000000000000", &d, &pod);
    assert_false(d.assigned);
    assert_null(pod);
    wh_decision_free(&d);
    cJSON_free(text);

    /* No claim (standalone, a dry run, offline): no annotation. */
    decide_nonce(POD("", ""), ms, NULL, &d, &pod);
    assert_true(d.assigned);
    assert_null(wh_json_get(wh_json_get(pod, "metadata"), "annotations"));
    cJSON_Delete(pod);
    wh_decision_free(&d);
    wh_memstate_free(ms);
}

static void test_legacy_assignment_fields(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_decision d;
    decide(POD("", ""), "CREATE", ms, &d);
    assert_true(d.allowed);
    assert_true(d.assigned);
    assert_int_equal(d.replica, 0);
    assert_int_equal(d.host, 0);
    assert_int_equal(d.n_hosts, 4);
    assert_int_equal(d.n_tpu_containers, 1);
    /* the patch applies and carries the identity */
    cJSON *pod = wh_test_parse(POD("", ""));
    char errbuf[WH_ERRBUF_LEN];
    cJSON *ops = wh_test_parse(wh_buf_ptr(&d.patch));
    assert_int_equal(wh_jsonpatch_apply(&pod, ops, errbuf), WH_OK);
    cJSON_Delete(ops);
    assert_string_equal(env_of(pod, "TPU_WORKER_ID"), "0");
    assert_string_equal(wh_json_str0(wh_json_path(pod, "metadata", "labels", NULL), "replicaIndex"),
                        "g-0");

    /* the mutated pod, once cached, moves the next one to host 1 */
    size_t added = 0;
    assert_int_equal(wh_memstate_add_pods(ms, pod, &added, errbuf), WH_OK);
    assert_int_equal(added, 1);
    struct wh_decision d2;
    decide(POD("", ""), "CREATE", ms, &d2);
    assert_int_equal(d2.host, 1);
    assert_int_equal(d2.replica, 0);

    /* reviewing the mutated pod again: no patch, no new assignment (D6) */
    char *text = cJSON_PrintUnformatted(pod);
    struct wh_decision d3;
    decide(text, "CREATE", ms, &d3);
    assert_true(d3.allowed);
    assert_int_equal(wh_buf_len(&d3.patch), 0);
    assert_false(d3.assigned);
    assert_int_equal(d3.host, 0);
    cJSON_free(text);
    cJSON_Delete(pod);
    wh_decision_free(&d);
    wh_decision_free(&d2);
    wh_decision_free(&d3);
    wh_memstate_free(ms);
}

static void test_native_path_assigns_nothing(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_decision d;
    decide(POD(",\"ray.io/worker-group-replica-index\":\"2\",\"ray.io/replica-host-index\":\"3\","
               "\"ray.io/worker-group-replica-name\":\"rn\"",
               ""),
           "CREATE", ms, &d);
    assert_true(d.allowed);
    assert_false(d.assigned);
    assert_int_equal(d.replica, 2);
    assert_int_equal(d.host, 3);
    assert_true(d.n_ops > 0 && wh_buf_len(&d.patch) > 0);
    wh_decision_free(&d);
    wh_memstate_free(ms);
}

static void test_denial_has_no_patch_and_names_the_field(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_decision d;
    decide(POD(",\"ray.io/worker-group-replica-index\":\"x\",\"ray.io/replica-host-index\":\"0\"",
               ""),
           "CREATE", ms, &d);
    assert_false(d.allowed);
    assert_int_equal(wh_buf_len(&d.patch), 0);
    assert_false(d.assigned);
    assert_non_null(strstr(d.message, "ray.io/worker-group-replica-index"));
    assert_non_null(strstr(d.message, "\"x\""));
    assert_non_null(strstr(d.message, "Pod \"ns/rc-g-worker-\""));
    wh_decision_free(&d);
    wh_memstate_free(ms);
}

static void test_update_is_admitted_unchanged(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_decision d;
    decide(POD("", ""), "UPDATE", ms, &d);
    assert_true(d.allowed);
    assert_int_equal(wh_buf_len(&d.patch), 0);
    assert_false(d.assigned);
    wh_decision_free(&d);
    wh_memstate_free(ms);
}

static void test_skipped_pod_is_noted(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    char errbuf[WH_ERRBUF_LEN];
    cJSON *old = wh_test_parse(POD(",\"replicaIndex\":\"g-0\"", ""));
    assert_int_equal(wh_json_set_str(cJSON_GetObjectItemCaseSensitive(old, "metadata"), "name",
                                     "old-pod"),
                     WH_OK);
    assert_int_equal(wh_memstate_add_pods(ms, old, NULL, errbuf), WH_OK);
    struct wh_decision d;
    decide(POD("", ""), "CREATE", ms, &d);
    assert_true(d.allowed);
    assert_int_equal(d.host, 0); /* D7: the id-less pod is skipped, not fatal */
    assert_non_null(strstr(wh_buf_ptr(&d.notes), "ns/old-pod"));
    cJSON_Delete(old);
    wh_decision_free(&d);
    wh_memstate_free(ms);
}

static void add_worker(struct wh_memstate *ms, const char *label, long worker_id)
{
    struct wh_pod_rec r = {.name = "w",
                           .ns = "ns",
                           .cluster = "rc",
                           .group = "g",
                           .replica_label = label,
                           .n_tpu_containers = 1,
                           .worker_id = worker_id};
    assert_int_equal(wh_memstate_add_rec(ms, &r), WH_OK);
}

static long host_with_pick(struct wh_memstate *ms, unsigned long pick, long *replica)
{
    struct wh_decision d;
    decide_pick(POD("", ""), "CREATE", ms, pick, &d);
    assert_true(d.allowed);
    assert_true(d.assigned);
    long host = d.host;
    *replica = d.replica;
    assert_int_equal(d.worker_id, host);
    wh_decision_free(&d);
    return host;
}

/* legacy_pick: the pick-th free host (mod the free count) of the lowest
 * incomplete replica; 0 keeps the lowest. A replica fills before the next. */
static void test_legacy_pick_chooses_among_free_hosts(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    long replica;
    add_worker(ms, "g-0", 1);
    add_worker(ms, "g-0", 3); /* free in replica 0: hosts 0 and 2 */
    assert_int_equal(host_with_pick(ms, 0, &replica), 0);
    assert_int_equal(host_with_pick(ms, 2, &replica), 0);
    assert_int_equal(host_with_pick(ms, 1, &replica), 2);
    assert_int_equal(replica, 0);
    assert_int_equal(host_with_pick(ms, 5, &replica), 2);
    add_worker(ms, "g-0", 2);
    assert_int_equal(host_with_pick(ms, 7, &replica), 0); /* one free host left */
    assert_int_equal(replica, 0);
    add_worker(ms, "g-0", 0);
    assert_int_equal(host_with_pick(ms, 7, &replica), 3); /* replica 1: 7 mod 4 */
    assert_int_equal(replica, 1);
    add_worker(ms, "g-1", 3);
    assert_int_equal(host_with_pick(ms, 3, &replica), 0); /* free 0, 1, 2: 3 mod 3 */
    assert_int_equal(host_with_pick(ms, 4, &replica), 1);
    assert_int_equal(replica, 1);
    /* A duplicate before the first gap is still denied, whatever the pick. */
    add_worker(ms, "g-1", 0);
    add_worker(ms, "g-1", 0);
    struct wh_decision d;
    decide_pick(POD("", ""), "CREATE", ms, 2, &d);
    assert_false(d.allowed);
    assert_false(d.assigned);
    wh_decision_free(&d);
    wh_memstate_free(ms);
}

static void test_is_legacy(void **unused)
{
    (void)unused;
    cJSON *p = wh_test_parse(POD("", ""));
    assert_true(wh_pod_is_legacy(p));
    cJSON_Delete(p);
    p = wh_test_parse(
        POD(",\"ray.io/worker-group-replica-index\":\"0\",\"ray.io/replica-host-index\":\"0\"", ""));
    assert_false(wh_pod_is_legacy(p));
    cJSON_Delete(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_legacy_assignment_fields),
        cmocka_unit_test(test_native_path_assigns_nothing),
        cmocka_unit_test(test_denial_has_no_patch_and_names_the_field),
        cmocka_unit_test(test_update_is_admitted_unchanged),
        cmocka_unit_test(test_skipped_pod_is_noted),
        cmocka_unit_test(test_is_legacy),
        cmocka_unit_test(test_legacy_pick_chooses_among_free_hosts),
        cmocka_unit_test(test_claim_nonce_on_assigned_pods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
