/* test_megascale.c: the slices a pod's MEGASCALE_* joins (megascale.h), as
 * the pod path, /validate-workload, /validate and doctor count the pods that
 * reach each other by cluster-DNS name, and the hostNetwork rule over that
 * count (tpuenv.h, wh_hostnet_dns_conflict; docs/workloads.md, "Names that
 * resolve"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/megascale.h"
#include "wh/tpuenv.h"

#define TPU(env) "{\"name\":\"t\",\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}}" env "}"
#define CPU(env) "{\"name\":\"side\"" env "}"
#define ENV(v) ",\"env\":[{\"name\":\"MEGASCALE_NUM_SLICES\"," v "}]"

static long joined(const char *containers, long slices, bool fill)
{
    cJSON *cs = wh_test_parse(containers);
    long n = wh_megascale_joined_slices(cs, slices, fill);
    cJSON_Delete(cs);
    return n;
}

static void test_joined_slices(void **unused)
{
    (void)unused;
    /* the pod path fills the count (alone in its JobSet): every slice */
    assert_int_equal(joined("[" TPU("") "]", 3, true), 3);
    /* beside other replicated jobs (no fill) and nothing declared: none */
    assert_int_equal(joined("[" TPU("") "]", 3, false), 1);
    /* declared independent: none, fill or not */
    assert_int_equal(joined("[" TPU(ENV("\"value\":\"\"")) "]", 3, true), 1);
    /* declared: the count joins them, a valueFrom (xpk's) too */
    assert_int_equal(joined("[" TPU(ENV("\"value\":\"3\"")) "]", 3, false), 3);
    assert_int_equal(joined("[" TPU(ENV("\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"x\"}}")) "]",
                            2, false),
                     2);
    /* a count other than the slices still names slice 0's coordinator */
    assert_int_equal(joined("[" TPU(ENV("\"value\":\"4\"")) "]", 2, false), 2);
    /* any TPU container joining is enough; a non-TPU container's env is not read */
    assert_int_equal(joined("[" TPU("") "," TPU(ENV("\"value\":\"2\"")) "]", 2, false), 2);
    assert_int_equal(joined("[" CPU(ENV("\"value\":\"2\"")) "," TPU("") "]", 2, false), 1);
    /* one slice, or no containers: 1 */
    assert_int_equal(joined("[" TPU(ENV("\"value\":\"1\"")) "]", 1, true), 1);
    assert_int_equal(wh_megascale_joined_slices(NULL, 4, true), 1);
}

static bool conflict(const char *spec, long pods, char *why, size_t n)
{
    cJSON *s = wh_test_parse(spec);
    bool c = wh_hostnet_dns_conflict(s, "spec.template.spec", pods, "A, B", why, n);
    cJSON_Delete(s);
    return c;
}

static void test_hostnet_dns_conflict(void **unused)
{
    (void)unused;
    char why[640] = "";
    assert_true(conflict("{\"hostNetwork\":true}", 2, why, sizeof(why)));
    static const char *const parts[] = {"spec.template.spec.hostNetwork is true",
                                        "spec.template.spec.dnsPolicy is unset (ClusterFirst)",
                                        "set spec.template.spec.dnsPolicy: ClusterFirstWithHostNet",
                                        "the 2 pods reach each other by (A, B)"};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        assert_non_null(strstr(why, parts[i]));
    assert_true(
        conflict("{\"hostNetwork\":true,\"dnsPolicy\":\"ClusterFirst\"}", 8, why, sizeof(why)));
    assert_non_null(strstr(why, "dnsPolicy is \"ClusterFirst\""));
    /* one pod (all localhost), the right policy, no hostNetwork: no conflict */
    assert_false(conflict("{\"hostNetwork\":true}", 1, why, sizeof(why)));
    assert_false(conflict("{\"hostNetwork\":true,\"dnsPolicy\":\"ClusterFirstWithHostNet\"}", 8,
                          why, sizeof(why)));
    assert_false(conflict("{\"hostNetwork\":false}", 8, why, sizeof(why)));
    assert_false(conflict("{}", 8, why, sizeof(why)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_joined_slices),
        cmocka_unit_test(test_hostnet_dns_conflict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
