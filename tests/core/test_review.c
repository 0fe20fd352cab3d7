/* test_review.c: the engine's API contract around AdmissionReview parsing
 * (wh_review_parse, wh_review_info) and routing (wh_engine_decide); the
 * policies themselves are covered by the fixture suite (tests/engine). */
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
#include "wh/engine.h"
#include "wh/review.h"
#include "wh/json.h"

static void parse_bad(const char *text, enum wh_err want, const char *why)
{
    struct wh_review *rv = (struct wh_review *)1;
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_err err = wh_review_parse(text, strlen(text), &rv, errbuf);
    if (err != want)
        fail_msg("%.80s: got %s, want %s (%s)", text, wh_strerror(err), wh_strerror(want), errbuf);
    assert_null(rv);
    if (!strstr(errbuf, why))
        fail_msg("%.80s: error \"%s\" does not mention \"%s\"", text, errbuf, why);
}

static void test_not_a_review(void **unused)
{
    (void)unused;
    parse_bad("", WH_ERR_INVALID, "empty");
    parse_bad("{", WH_ERR_INVALID, "not valid JSON");
    parse_bad("[]", WH_ERR_INVALID, "not a JSON object");
    parse_bad("{\"kind\":\"Pod\",\"request\":{}}", WH_ERR_INVALID, "kind is \"Pod\"");
    parse_bad("{\"apiVersion\":\"v1\",\"request\":{}}", WH_ERR_INVALID, "apiVersion");
    parse_bad("{\"kind\":\"AdmissionReview\"}", WH_ERR_INVALID, "no request");
    parse_bad("{\"kind\":\"AdmissionReview\",\"request\":[]}", WH_ERR_INVALID, "no request");
    parse_bad("{\"kind\":\"AdmissionReview\",\"request\":{\"uid\":1}}", WH_ERR_INVALID, "uid");
    parse_bad("{\"request\":{}} {}", WH_ERR_INVALID, "trailing");
}

static void test_too_big(void **unused)
{
    (void)unused;
    size_t n = WH_REVIEW_MAX_BYTES + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    struct wh_review *rv;
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(wh_review_parse(big, n, &rv, errbuf), WH_ERR_TOOBIG);
    assert_null(rv);
    /* at the limit it is read (and is a JSON object without a request) */
    assert_int_equal(wh_review_parse(big, n - 1, &rv, errbuf), WH_ERR_INVALID);
    free(big);
}

static struct wh_review *parse(const char *text)
{
    struct wh_review *rv = NULL;
    char errbuf[WH_ERRBUF_LEN];
    if (wh_review_parse(text, strlen(text), &rv, errbuf))
        fail_msg("review refused: %s", errbuf);
    return rv;
}

static void test_info_pod(void **unused)
{
    (void)unused;
    struct wh_review *rv = parse(
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"u1\",\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"namespace\":\"req-ns\","
        "\"object\":{\"metadata\":{\"generateName\":\"c-g-worker-\",\"namespace\":\"obj-ns\","
        "\"labels\":{\"ray.io/cluster\":\"c\",\"ray.io/group\":\"g\"}},"
        "\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"google.com/tpu\":4}}}]}}}}");
    const struct wh_review_info *in = wh_review_info(rv);
    assert_string_equal(in->uid, "u1");
    assert_string_equal(in->operation, "CREATE");
    assert_int_equal(in->kind, WH_KIND_POD);
    assert_string_equal(in->kind_name, "Pod");
    /* request.namespace wins: the API server's word, where Events and
     * claims go (issue 35; the reference read the object's, §2.1 of
     * docs/internals/reference-behaviour.md); the engine denies a review
     * whose object names another */
    assert_string_equal(in->ns, "req-ns");
    assert_string_equal(in->object_ns, "obj-ns");
    assert_true(in->ns_from_request);
    assert_string_equal(in->name, "c-g-worker-");
    assert_string_equal(in->object_name, "c-g-worker-");
    assert_string_equal(in->cluster, "c");
    assert_string_equal(in->group, "g");
    assert_true(in->legacy); /* TPU pod without both index labels */
    wh_review_free(rv);
    /* native labels: not legacy; request fallbacks for ns and name */
    rv = parse(
        "{\"request\":{\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"namespace\":\"req-ns\","
        "\"name\":\"req-name\",\"object\":{\"metadata\":{\"labels\":{"
        "\"ray.io/worker-group-replica-index\":\"0\",\"ray.io/replica-host-index\":\"1\"}},"
        "\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"google.com/tpu\":4}}}]}}}}");
    in = wh_review_info(rv);
    assert_string_equal(in->uid, "");
    assert_string_equal(in->ns, "req-ns");
    assert_string_equal(in->name, "req-name");
    assert_string_equal(in->object_name, ""); /* the pod names itself by nothing */
    assert_string_equal(in->cluster, "");
    assert_false(in->legacy);
    wh_review_free(rv);
    /* not CREATE, or no TPU: not legacy */
    rv = parse("{\"request\":{\"kind\":{\"kind\":\"Pod\"},\"operation\":\"UPDATE\",\"object\":{"
               "\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"google.com/tpu\":4}}}]}}}}");
    assert_false(wh_review_info(rv)->legacy);
    wh_review_free(rv);
    rv = parse("{\"request\":{\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"object\":{"
               "\"spec\":{\"containers\":[{\"name\":\"cpu\"}]}}}}");
    assert_false(wh_review_info(rv)->legacy);
    wh_review_free(rv);
    wh_review_free(NULL);
}

/* The uid of a pod's cluster instance: its controller ownerReference of
 * kind RayCluster named after its cluster label (docs/kuberay-pods.md),
 * nothing else. */
static const char *owner_uid(const char *refs)
{
    static char text[2048];
    snprintf(text, sizeof(text),
             "{\"request\":{\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"object\":{"
             "\"metadata\":{\"labels\":{\"ray.io/cluster\":\"c\",\"ray.io/group\":\"g\"},"
             "\"ownerReferences\":%s}}}}",
             refs);
    static char uid[64];
    struct wh_review *rv = parse(text);
    snprintf(uid, sizeof(uid), "%s", wh_review_info(rv)->cluster_uid);
    wh_review_free(rv);
    return uid;
}

static void test_info_cluster_uid(void **unused)
{
    (void)unused;
    const char *ref = "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"name\":\"c\","
                      "\"uid\":\"u-1\",\"controller\":true,\"blockOwnerDeletion\":true}";
    char refs[512];
    snprintf(refs, sizeof(refs), "[%s]", ref);
    assert_string_equal(owner_uid(refs), "u-1");
    snprintf(refs, sizeof(refs),
             "[{\"kind\":\"Other\",\"name\":\"c\",\"uid\":\"x\","
             "\"controller\":true},%s]",
             ref);
    assert_string_equal(owner_uid(refs), "u-1");
    /* not the controller, another cluster's name, not a list: none */
    assert_string_equal(owner_uid("[{\"kind\":\"RayCluster\",\"name\":\"c\",\"uid\":\"u\"}]"), "");
    assert_string_equal(owner_uid("[{\"kind\":\"RayCluster\",\"name\":\"d\",\"uid\":\"u\","
                                  "\"controller\":true}]"),
                        "");
    assert_string_equal(owner_uid("{}"), "");
    assert_string_equal(owner_uid("[{\"kind\":\"RayCluster\",\"name\":\"c\",\"uid\":7,"
                                  "\"controller\":true}]"),
                        "");
}

static void test_info_raycluster(void **unused)
{
    (void)unused;
    struct wh_review *rv = parse("{\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"RayCluster\"},"
                                 "\"operation\":\"CREATE\",\"object\":{\"metadata\":{\"name\":\"rc\","
                                 "\"namespace\":\"ns\"}}}}");
    const struct wh_review_info *in = wh_review_info(rv);
    assert_int_equal(in->kind, WH_KIND_RAYCLUSTER);
    assert_string_equal(in->cluster, "rc");
    assert_string_equal(in->group, "");
    assert_false(in->legacy);
    wh_review_free(rv);
    /* generateName is only a prefix of the cluster's name: the cluster is
     * request.name then, while the object names itself by the prefix */
    rv = parse("{\"request\":{\"kind\":{\"kind\":\"RayCluster\"},\"name\":\"req\","
               "\"operation\":\"CREATE\",\"object\":{\"metadata\":{\"generateName\":\"rc-\"}}}}");
    in = wh_review_info(rv);
    assert_string_equal(in->cluster, "req");
    assert_string_equal(in->object_name, "rc-");
    assert_string_equal(in->name, "rc-");
    wh_review_free(rv);
    rv = parse("{\"request\":{\"kind\":{\"kind\":\"RayCluster\"},\"operation\":\"CREATE\","
               "\"object\":{\"metadata\":{\"generateName\":\"rc-\"}}}}");
    assert_string_equal(wh_review_info(rv)->cluster, "");
    wh_review_free(rv);
    rv = parse("{\"request\":{\"kind\":{\"kind\":\"ConfigMap\"}}}");
    assert_int_equal(wh_review_info(rv)->kind, WH_KIND_OTHER);
    assert_string_equal(wh_review_info(rv)->kind_name, "ConfigMap");
    wh_review_free(rv);
}

/* The ratchet's view of an UPDATE's oldObject: the same request, its
 * object being oldObject, its info read from it; the policies read the
 * request only through wh_review_object and wh_review_info. */
static void test_review_of_old(void **unused)
{
    (void)unused;
    struct wh_review *rv = parse(
        "{\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"JobSet\"},\"operation\":\"UPDATE\","
        "\"namespace\":\"req-ns\",\"name\":\"req\",\"dryRun\":true,"
        "\"object\":{\"metadata\":{\"name\":\"new\",\"namespace\":\"new-ns\"}},"
        "\"oldObject\":{\"metadata\":{\"generateName\":\"old-\"}}}}");
    const cJSON *obj = wh_review_object(rv), *oldobj = wh_review_old_object(rv);
    assert_string_equal(wh_json_str0(wh_json_get(obj, "metadata"), "name"), "new");
    assert_true(cJSON_IsObject(oldobj));
    struct wh_review *old = NULL;
    assert_int_equal(wh_review_of_old(rv, &old), WH_OK);
    assert_ptr_equal(wh_review_object(old), oldobj);
    assert_null(wh_review_old_object(old));
    const struct wh_review_info *in = wh_review_info(old);
    assert_string_equal(in->uid, "u");
    assert_string_equal(in->operation, "UPDATE");
    assert_int_equal(in->kind, WH_KIND_WORKLOAD);
    assert_string_equal(in->kind_name, "JobSet");
    assert_true(in->dry_run);
    assert_string_equal(in->ns, "req-ns"); /* the request's */
    assert_string_equal(in->object_name, "old-");
    assert_string_equal(in->name, "old-");
    /* of an old review, or of one without an oldObject object: none */
    struct wh_review *none = (struct wh_review *)1;
    assert_int_equal(wh_review_of_old(old, &none), WH_ERR_INVALID);
    assert_null(none);
    wh_review_free(old);
    /* rv's own info is untouched */
    assert_string_equal(wh_review_info(rv)->ns, "req-ns"); /* the request's, always */
    assert_string_equal(wh_review_info(rv)->object_ns, "new-ns");
    assert_string_equal(wh_review_info(rv)->name, "new");
    wh_review_free(rv);
    rv = parse("{\"request\":{\"operation\":\"UPDATE\",\"object\":{},\"oldObject\":[]}}");
    none = (struct wh_review *)1;
    assert_int_equal(wh_review_of_old(rv, &none), WH_ERR_INVALID);
    assert_null(none);
    wh_review_free(rv);
}

static const char other_kind[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u-\\\"q\\\"\",\"kind\":{\"kind\":\"ConfigMap\"},\"operation\":\"CREATE\",\"object\":{}}}";

static void test_routes(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_state st = wh_memstate_view(ms);
    struct wh_engine_result res;
    char errbuf[WH_ERRBUF_LEN];
    /* anything else is admitted unchanged on the ANY route, uid echoed */
    assert_int_equal(wh_engine_review(other_kind, strlen(other_kind), WH_ROUTE_ANY, &st, &res,
                                      errbuf),
                     WH_OK);
    assert_true(res.allowed);
    assert_int_equal(res.code, 0);
    assert_int_equal(res.n_ops, 0);
    assert_null(res.message);
    cJSON *j = wh_test_parse(res.body);
    assert_string_equal(wh_json_str(j, "apiVersion"), "admission.k8s.io/v1");
    assert_string_equal(wh_json_str(j, "kind"), "AdmissionReview");
    assert_string_equal(wh_json_str(wh_json_get(j, "response"), "uid"), "u-\"q\"");
    assert_true(cJSON_IsTrue(wh_json_path(j, "response", "allowed", NULL)));
    assert_false(wh_json_has(wh_json_get(j, "response"), "patch"));
    cJSON_Delete(j);
    wh_engine_result_free(&res);
    wh_engine_result_free(&res); /* zeroed: a second free is harmless */
    wh_engine_result_free(NULL);
    /* the specific routes refuse other kinds, with a zeroed result */
    assert_int_equal(wh_engine_review(other_kind, strlen(other_kind), WH_ROUTE_MUTATE, &st, &res,
                                      errbuf),
                     WH_ERR_KIND);
    assert_null(res.body);
    assert_non_null(strstr(errbuf, "ConfigMap"));
    assert_int_equal(wh_engine_review(other_kind, strlen(other_kind), WH_ROUTE_VALIDATE, &st, &res,
                                      errbuf),
                     WH_ERR_KIND);
    assert_null(res.body);
    /* a parse failure leaves the result zeroed too */
    assert_int_equal(wh_engine_review("x", 1, WH_ROUTE_ANY, &st, &res, errbuf), WH_ERR_INVALID);
    assert_null(res.body);
    wh_memstate_free(ms);
}

static void test_two_step(void **unused)
{
    (void)unused;
    size_t len;
    char *body = wh_test_read_fixture("reviews/tpu7x-2x2x2-two-containers.json", &len);
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_state st = wh_memstate_view(ms);
    struct wh_review *rv;
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(wh_review_parse(body, len, &rv, errbuf), WH_OK);
    assert_false(wh_review_info(rv)->legacy);
    struct wh_engine_result a, b;
    assert_int_equal(wh_engine_decide(rv, WH_ROUTE_MUTATE, &st, &a, errbuf), WH_OK);
    /* deciding twice on the same review gives the same bytes (pure) */
    assert_int_equal(wh_engine_decide(rv, WH_ROUTE_MUTATE, &st, &b, errbuf), WH_OK);
    assert_int_equal(a.body_len, b.body_len);
    assert_string_equal(a.body, b.body);
    assert_true(a.allowed);
    assert_true(a.n_ops > 0);
    assert_false(a.assigned); /* native indices: nothing for the ledger */
    assert_int_equal(a.n_tpu_containers, 2);
    wh_engine_result_free(&a);
    wh_engine_result_free(&b);
    wh_review_free(rv);
    wh_memstate_free(ms);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_a_review),     cmocka_unit_test(test_too_big),
        cmocka_unit_test(test_info_pod),         cmocka_unit_test(test_info_raycluster),
        cmocka_unit_test(test_routes),           cmocka_unit_test(test_two_step),
        cmocka_unit_test(test_info_cluster_uid), cmocka_unit_test(test_review_of_old),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
