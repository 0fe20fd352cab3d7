/* test_validate.c: wh_validate_raycluster() at the function level (the
 * fixture suite, tests/engine/, covers the rules through the binary). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/decision.h"
#include "wh/json.h"
#include "wh/ratchet.h"
#include "wh/review.h"
#include "wh/state.h"
#include "wh/validate.h"

#define GROUP(name, hosts, topo, chips, env)                                               \
    "{\"groupName\":\"" name "\",\"numOfHosts\":" hosts ",\"template\":{\"spec\":{"        \
    "\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\","        \
    "\"cloud.google.com/gke-tpu-topology\":\"" topo "\"},\"containers\":[{\"name\":\"w\"," \
    "\"resources\":{\"limits\":{\"google.com/tpu\":\"" chips "\"}}" env "}]}}}"
#define CLUSTER(groups)                                                                            \
    "{\"metadata\":{\"name\":\"rc\",\"namespace\":\"ns\"},\"spec\":{\"workerGroupSpecs\":[" groups \
    "]}}"

static void decide_report(const char *rc, const char *op, struct wh_decision *d,
                          struct wh_validation *report)
{
    cJSON *req = cJSON_CreateObject();
    assert_non_null(req);
    assert_int_equal(wh_json_set_str(req, "operation", op), WH_OK);
    assert_int_equal(wh_json_set(req, "kind", wh_test_parse("{\"kind\":\"RayCluster\"}")), WH_OK);
    assert_int_equal(wh_json_set(req, "object", wh_test_parse(rc)), WH_OK);
    struct wh_review *rv = NULL;
    assert_int_equal(wh_review_of_request(req, &rv), WH_OK);
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_state st = wh_memstate_view(ms);
    char errbuf[WH_ERRBUF_LEN];
    wh_decision_init(d);
    assert_int_equal(wh_validate_raycluster_report(rv, &st, d, report, errbuf), WH_OK);
    wh_memstate_free(ms);
    wh_review_free(rv);
    cJSON_Delete(req);
}

static void decide(const char *rc, const char *op, struct wh_decision *d)
{
    decide_report(rc, op, d, NULL);
}

static void test_matching_groups_admitted(void **unused)
{
    (void)unused;
    struct wh_decision d;
    decide(CLUSTER(GROUP("a", "4", "4x4", "4", "") "," GROUP("b", "1", "2x4", "8", "")), "CREATE",
           &d);
    assert_true(d.allowed);
    assert_null(d.message);
    assert_int_equal(wh_buf_len(&d.patch), 0);
    assert_null(d.warnings);
    wh_decision_free(&d);
}

static void test_every_failing_group_in_one_message(void **unused)
{
    (void)unused;
    struct wh_decision d;
    decide(CLUSTER(GROUP("a", "2", "4x4", "4", "") "," GROUP("ok", "4", "4x4", "4",
                                                             "") "," GROUP("b", "5", "4x4", "3", "")),
           "UPDATE", &d);
    assert_false(d.allowed);
    assert_non_null(strstr(d.message, "worker group \"a\" (spec.workerGroupSpecs[0])"));
    assert_non_null(strstr(d.message, "must be 4, not 2"));
    assert_non_null(strstr(d.message, "worker group \"b\" (spec.workerGroupSpecs[2])"));
    assert_non_null(strstr(d.message, "does not divide"));
    assert_null(strstr(d.message, "\"ok\""));
    wh_decision_free(&d);
}

static void test_other_operations_admitted(void **unused)
{
    (void)unused;
    struct wh_decision d;
    decide(CLUSTER(GROUP("a", "2", "4x4", "4", "")), "DELETE", &d);
    assert_true(d.allowed);
    wh_decision_free(&d);
}

static void test_warnings_are_short(void **unused)
{
    (void)unused;
    struct wh_decision d;
    /* 2x2 (issue 24: a 3-D topology on v6e, once the second warning, is denied) */
    decide(CLUSTER(GROUP("a-long-group-name-that-goes-on-and-on-and-on-and-on-and-on-x", "1", "2x2",
                         "4", ",\"env\":[{\"name\":\"MEGASCALE_NUM_SLICES\",\"value\":\"2\"}]")),
           "CREATE", &d);
    assert_true(d.allowed);
    assert_int_equal(cJSON_GetArraySize(d.warnings), 1); /* megascale single host */
    for (const cJSON *w = d.warnings->child; w; w = w->next)
        assert_true(strlen(w->valuestring) < 120);
    wh_decision_free(&d);
}

/* The report says per group, as data, what the denial and the warnings say
 * as text: group, field, value, expected, message. */
static void test_report_per_group(void **unused)
{
    (void)unused;
    struct wh_decision d;
    struct wh_validation v = {0};
    decide_report(
        CLUSTER(GROUP("a", "2", "4x4", "4", "") "," GROUP("ok", "4", "4x4", "4", "") "," GROUP(
            "b", "5", "4x4", "3",
            "") "," GROUP("w", "1", "2x2x1", "4",
                          ",\"env\":[{\"name\":\"MEGASCALE_NUM_SLICES\",\"value\":\"2\"}]")),
        "CREATE", &d, &v);
    assert_false(d.allowed);
    assert_int_equal(v.n, 4);
    const struct wh_group_finding *f = &v.items[0];
    assert_false(f->warning);
    assert_int_equal(f->index, 0);
    assert_string_equal(f->group, "a");
    assert_string_equal(f->field, "numOfHosts");
    assert_string_equal(f->value, "2");
    assert_string_equal(f->expected, "4");
    assert_non_null(strstr(d.message, f->message)); /* the denial carries the same text */
    f = &v.items[1];
    assert_int_equal(f->index, 2);
    assert_string_equal(f->field, "template.spec.containers[].resources[google.com/tpu]");
    assert_string_equal(f->value, "3");
    assert_string_equal(f->expected, "a divisor of 16");
    /* group w: 2x2x1 on v6e, a warning before issue 24, is a problem of the
     * generation table; its MEGASCALE warning is still sent */
    f = &v.items[2];
    assert_false(f->warning);
    assert_int_equal(f->index, 3);
    assert_string_equal(f->field, "template.spec.nodeSelector[cloud.google.com/gke-tpu-topology]");
    assert_string_equal(f->value, "2x2x1");
    assert_non_null(strstr(f->message, "valid values: 1x1, 2x2"));
    assert_non_null(strstr(d.message, f->message));
    assert_true(v.items[3].warning);
    assert_int_equal(v.items[3].index, 3);
    assert_string_equal(v.items[3].message, cJSON_GetArrayItem(d.warnings, 0)->valuestring);
    assert_int_equal(wh_validation_problems(&v, 0), 1);
    assert_int_equal(wh_validation_problems(&v, 1), 0);
    assert_int_equal(wh_validation_problems(&v, 3), 1);
    wh_validation_free(&v);
    assert_int_equal(v.n, 0);
    wh_decision_free(&d);
}

/* numOfHosts beyond a long (or an int32) is named, not cast: the cast was
 * undefined behaviour (fuzz_review, UBSan). */
static void test_huge_num_of_hosts(void **unused)
{
    (void)unused;
    static const char *const values[] = {"3.33e61", "4294967296", "-1e300", "2.5"};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char rc[1024];
        snprintf(rc, sizeof(rc), CLUSTER(GROUP("a", "%s", "4x4", "4", "")), values[i]);
        struct wh_decision d;
        decide(rc, "CREATE", &d);
        assert_false(d.allowed);
        assert_non_null(strstr(d.message, "worker group \"a\""));
        assert_non_null(strstr(d.message, "not a whole number of 32 bits"));
        wh_decision_free(&d);
    }
}

/* A v6e group of 4 chips per pod with fields of its own (extra, ending in
 * ",") and of its template's spec (spec, ending in ","). */
#define HGROUP(hosts, topo, extra, spec, env)                                              \
    "{\"groupName\":\"a\"," extra "\"numOfHosts\":" hosts ",\"template\":{\"spec\":{" spec \
    "\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\","        \
    "\"cloud.google.com/gke-tpu-topology\":\"" topo "\"},\"containers\":[{\"name\":\"w\"," \
    "\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}}" env "}]}}}"
#define HOSTNET "\"hostNetwork\":true,"
#define MS(v) ",\"env\":[{\"name\":\"MEGASCALE_NUM_SLICES\",\"value\":\"" v "\"}]"

/* Names that resolve (docs/workloads.md): a group whose pods reach each
 * other by cluster-DNS name (multi-host, or MEGASCALE joining its
 * replicas) on hostNetwork needs dnsPolicy ClusterFirstWithHostNet. */
static void test_hostnetwork_dns_policy(void **unused)
{
    (void)unused;
    struct wh_decision d;
    struct wh_validation v = {0};
    decide_report(CLUSTER(HGROUP("4", "4x4", "\"replicas\":2,", HOSTNET, "")), "CREATE", &d, &v);
    assert_false(d.allowed);
    static const char *const parts[] =
        {"worker group \"a\" (spec.workerGroupSpecs[0])",
         "spec.workerGroupSpecs[0].template.spec.hostNetwork is true",
         "spec.workerGroupSpecs[0].template.spec.dnsPolicy is unset",
         "set spec.workerGroupSpecs[0].template.spec.dnsPolicy: ClusterFirstWithHostNet",
         "the 4 pods reach each other"}; /* no MEGASCALE: each slice alone */
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        assert_non_null(strstr(d.message, parts[i]));
    assert_int_equal(v.n, 1);
    assert_string_equal(v.items[0].field, "template.spec.dnsPolicy");
    assert_string_equal(v.items[0].value, "");
    assert_string_equal(v.items[0].expected, "ClusterFirstWithHostNet");
    wh_validation_free(&v);
    wh_decision_free(&d);
    /* single-host slices joined by MEGASCALE: the coordinator is replica 0's */
    decide(CLUSTER(HGROUP("1", "2x2", "\"replicas\":3,", HOSTNET "\"dnsPolicy\":\"Default\",",
                          MS("3"))),
           "CREATE", &d);
    assert_false(d.allowed);
    assert_non_null(strstr(d.message, "dnsPolicy is \"Default\""));
    assert_non_null(strstr(d.message, "the 3 pods reach each other"));
    wh_decision_free(&d);
    /* admitted: single-host without MEGASCALE (all localhost), or declared
     * independent, or one replica; ClusterFirstWithHostNet; no hostNetwork */
    static const char *const ok[] = {
        CLUSTER(HGROUP("1", "2x2", "\"replicas\":3,", HOSTNET, "")),
        CLUSTER(HGROUP("1", "2x2", "\"replicas\":3,", HOSTNET, MS(""))),
        CLUSTER(HGROUP("1", "2x2", "\"replicas\":1,", HOSTNET, MS("1"))),
        CLUSTER(HGROUP("4", "4x4", "\"replicas\":2,",
                       HOSTNET "\"dnsPolicy\":\"ClusterFirstWithHostNet\",", MS("2"))),
        CLUSTER(HGROUP("4", "4x4", "\"replicas\":2,", "\"hostNetwork\":false,", MS("2"))),
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        decide(ok[i], "CREATE", &d);
        assert_true(d.allowed);
        wh_decision_free(&d);
    }
}

/* The rule through the ratchet (ratchet.h): an existing cluster that
 * already had the problem is not locked; an UPDATE bringing it is denied;
 * DELETE is never judged. */
static void ratchet(const char *rc, const char *old, const char *op, struct wh_decision *d)
{
    cJSON *req = cJSON_CreateObject();
    assert_non_null(req);
    assert_int_equal(wh_json_set_str(req, "operation", op), WH_OK);
    assert_int_equal(wh_json_set(req, "kind", wh_test_parse("{\"kind\":\"RayCluster\"}")), WH_OK);
    assert_int_equal(wh_json_set(req, "object", wh_test_parse(rc)), WH_OK);
    assert_int_equal(wh_json_set(req, "oldObject", wh_test_parse(old)), WH_OK);
    struct wh_review *rv = NULL;
    assert_int_equal(wh_review_of_request(req, &rv), WH_OK);
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_state st = wh_memstate_view(ms);
    char errbuf[WH_ERRBUF_LEN];
    wh_decision_init(d);
    assert_int_equal(wh_ratchet_raycluster(rv, &st, d, errbuf), WH_OK);
    wh_memstate_free(ms);
    wh_review_free(rv);
    cJSON_Delete(req);
}

static void test_hostnetwork_dns_policy_ratchet(void **unused)
{
    (void)unused;
    const char *bad = CLUSTER(HGROUP("4", "4x4", "\"replicas\":2,", HOSTNET, MS("2")));
    const char *good = CLUSTER(HGROUP("4", "4x4", "\"replicas\":2,", "", MS("2")));
    const char *bad3 = CLUSTER(HGROUP("4", "4x4", "\"replicas\":3,", HOSTNET, MS("3")));
    struct wh_decision d;
    ratchet(bad, bad, "UPDATE", &d);
    assert_true(d.allowed);
    assert_int_equal(cJSON_GetArraySize(d.warnings), 1);
    assert_non_null(strstr(d.warnings->child->valuestring, "kept, already broken"));
    wh_decision_free(&d);
    ratchet(bad3, bad, "UPDATE", &d); /* scaled, its count with it: the same problem */
    assert_true(d.allowed);
    wh_decision_free(&d);
    ratchet(bad, good, "UPDATE", &d);
    assert_false(d.allowed);
    assert_non_null(strstr(d.message, "new in this update"));
    assert_non_null(strstr(d.message, "ClusterFirstWithHostNet"));
    wh_decision_free(&d);
    ratchet(bad, bad, "DELETE", &d);
    assert_true(d.allowed);
    wh_decision_free(&d);
    decide(bad, "CREATE", &d);
    assert_false(d.allowed);
    wh_decision_free(&d);
}

/* The ratchet by value (ratchet.h, issue 35): a broken group may keep its
 * broken value, and the autoscaler may scale it; changing the value into
 * another broken one, or adding a broken group (a second one of the same
 * name too), is denied; fixing one field while another rule stays broken
 * is admitted. */
static void test_ratchet_by_value(void **unused)
{
    (void)unused;
    const char *old = CLUSTER(HGROUP("3", "4x4", "\"replicas\":1,", "", ""));
    const struct {
        const char *now;
        bool allowed;
    } cases[] = {
        {CLUSTER(HGROUP("3", "4x4", "\"replicas\":1,", "", "")), true},
        /* the autoscaler's fields: the same broken value */
        {CLUSTER(HGROUP("3", "4x4", "\"replicas\":7,\"minReplicas\":2,\"maxReplicas\":9,", "", "")),
         true},
        {CLUSTER(HGROUP("4", "4x4", "\"replicas\":1,", "", "")), true}, /* fixed */
        /* the issue's: another impossible shape */
        {CLUSTER(HGROUP("3", "16x16", "\"replicas\":1000,", "", "")), false},
        {CLUSTER(HGROUP("5", "4x4", "\"replicas\":1,", "", "")), false},
        {CLUSTER(HGROUP("3", "4x4", "\"replicas\":1,", "", "") "," HGROUP("3", "4x4", "", "", "")),
         false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct wh_decision d;
        ratchet(cases[i].now, old, "UPDATE", &d);
        if (d.allowed != cases[i].allowed)
            fail_msg("case %zu: allowed %d, message %s", i, d.allowed, d.message);
        if (!d.allowed)
            assert_non_null(strstr(d.message, "new in this update"));
        wh_decision_free(&d);
    }
    /* one rule fixed, another kept: its value (dnsPolicy) did not change */
    const char *two = CLUSTER(HGROUP("3", "4x4", "", HOSTNET, ""));
    const char *one = CLUSTER(HGROUP("4", "4x4", "", HOSTNET, ""));
    struct wh_decision d;
    ratchet(one, two, "UPDATE", &d);
    assert_true(d.allowed);
    assert_non_null(strstr(d.warnings->child->valuestring, "kept, already broken"));
    wh_decision_free(&d);
}

/* Issue 34, item 3: a group whose topology no documented node pool has is
 * admitted with a short warning and an Event on the RayCluster (the whole
 * text, with the documented list); none when the cluster is denied. */
static void test_undocumented_topology_event(void **unused)
{
    (void)unused;
    struct wh_decision d;
    decide("{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"rc\","
           "\"namespace\":\"ns\"},\"spec\":{\"workerGroupSpecs\":[" GROUP("odd", "2", "4x2", "4",
                                                                          "") "]}}",
           "CREATE", &d);
    assert_true(d.allowed);
    assert_int_equal(cJSON_GetArraySize(d.warnings), 1);
    assert_string_equal(cJSON_GetArrayItem(d.warnings, 0)->valuestring,
                        "group \"odd\": v6e topology 4x2 is no documented GKE shape: its pods may "
                        "stay Pending");
    assert_int_equal(d.n_events, 1);
    assert_string_equal(d.events[0].reason, "TPUTopologyUndocumented");
    assert_non_null(strstr(d.events[0].text, "RayCluster rc, group \"odd\": "));
    assert_non_null(strstr(d.events[0].text, "(documented: 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, "
                                             "16x16)"));
    assert_string_equal(d.subject.api_version, "ray.io/v1");
    assert_string_equal(d.subject.kind, "RayCluster");
    assert_string_equal(d.subject.ns, "ns");
    assert_string_equal(d.subject.name, "rc");
    wh_decision_free(&d);
    /* denied (numOfHosts): the warning, but no Event on an object not stored */
    decide("{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"rc\","
           "\"namespace\":\"ns\"},\"spec\":{\"workerGroupSpecs\":[" GROUP("odd", "3", "4x2", "4",
                                                                          "") "]}}",
           "CREATE", &d);
    assert_false(d.allowed);
    assert_int_equal(cJSON_GetArraySize(d.warnings), 1);
    assert_string_equal(d.subject.kind, "");
    wh_decision_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matching_groups_admitted),
        cmocka_unit_test(test_every_failing_group_in_one_message),
        cmocka_unit_test(test_other_operations_admitted),
        cmocka_unit_test(test_warnings_are_short),
        cmocka_unit_test(test_report_per_group),
        cmocka_unit_test(test_huge_num_of_hosts),
        cmocka_unit_test(test_hostnetwork_dns_policy),
        cmocka_unit_test(test_hostnetwork_dns_policy_ratchet),
        cmocka_unit_test(test_ratchet_by_value),
        cmocka_unit_test(test_undocumented_topology_event),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
