/* test_tpuenv.c: the pieces the KubeRay and the workload mutation share:
 * TPU container collection, TorchTPU topology strings, host:port lists and
 * the TPU7x worker id (docs/workloads.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wh/decision.h"
#include "wh/tpuenv.h"

static void test_collect(void **unused)
{
    (void)unused;
    cJSON *cs = cJSON_Parse("[{\"name\":\"side\"},"
                            "{\"name\":\"a\",\"resources\":{\"limits\":{\"google.com/tpu\":\"2\"}}},"
                            "{\"name\":\"b\",\"resources\":{\"requests\":{\"google.com/tpu\":2}}}]");
    struct wh_tpu_containers tc;
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(wh_tpu_containers_collect(cs, &tc, errbuf), WH_OK);
    assert_int_equal(tc.n, 2);
    assert_int_equal(tc.chips, 4);
    assert_int_equal(tc.items[0].index, 1);
    assert_int_equal(tc.items[1].index, 2);
    wh_tpu_containers_free(&tc);
    cJSON_Delete(cs);

    cs = cJSON_Parse("[{\"name\":\"a\"},{\"name\":\"b\",\"resources\":{\"limits\":"
                     "{\"google.com/tpu\":\"four\"}}}]");
    assert_int_equal(wh_tpu_containers_collect(cs, &tc, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "spec.containers[1]"));
    assert_non_null(strstr(errbuf, "four"));
    assert_null(tc.items);
    cJSON_Delete(cs);
}

static void test_torch_topology(void **unused)
{
    (void)unused;
    struct wh_topology t;
    char errbuf[WH_ERRBUF_LEN], out[64];
    assert_int_equal(wh_topology_parse("4x4", &t, errbuf), WH_OK);
    wh_torch_topology(&t, false, out, sizeof(out));
    assert_string_equal(out, "4,4,1");
    assert_int_equal(wh_topology_parse("2x2x1", &t, errbuf), WH_OK);
    wh_torch_topology(&t, true, out, sizeof(out));
    assert_string_equal(out, "2,2,1,2");
}

static void test_host_ports(void **unused)
{
    (void)unused;
    struct wh_buf b;
    bool too_many;
    wh_buf_init(&b, 1 << 20);
    assert_int_equal(wh_host_ports("a.x,b.x", 2, &b, &too_many), WH_OK);
    assert_false(too_many);
    assert_string_equal(wh_buf_ptr(&b), "a.x:8471,a.x:8472,b.x:8471,b.x:8472");
    wh_buf_reset(&b);
    assert_int_equal(wh_host_ports("localhost", 1, &b, &too_many), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), "localhost:8471");
    wh_buf_reset(&b);
    assert_int_equal(wh_host_ports("a,b", WH_MAX_TORCH_ADDRESSES, &b, &too_many), WH_OK);
    assert_true(too_many);
    assert_int_equal(wh_buf_len(&b), 0);
    wh_buf_free(&b);
    assert_int_equal(wh_host_count("localhost"), 1);
    assert_int_equal(wh_host_count("a,b,c"), 3);
    /* Past the 16-byte steps and the 255 steps a byte lane counts: commas
     * only (every lane full), and hosts of 2 letters. */
    static char list[9000];
    memset(list, ',', sizeof(list) - 1);
    assert_int_equal(wh_host_count(list), (long)sizeof(list));
    for (size_t n = 0; n < 40; n++) {
        memset(list, 'h', sizeof(list) - 1);
        for (size_t i = 2; i + 1 < sizeof(list) - n; i += 3)
            list[i] = ',';
        list[sizeof(list) - 1 - n] = '\0';
        long want = 1;
        for (const char *p = list; *p; p++)
            want += *p == ',';
        assert_int_equal(wh_host_count(list), want);
    }
}

/* The list of one pod's containers: built once, rebuilt when the hosts or
 * the count per host differ (the text compared, not the pointer). */
static void test_port_list(void **unused)
{
    (void)unused;
    struct wh_port_list pl;
    struct wh_decision d;
    const char *out, *first, *second;
    bool too_many;
    char hosts[] = "a.x,b.x";
    wh_decision_init(&d);
    wh_port_list_init(&pl);
    assert_int_equal(wh_port_list_get(&pl, &d, hosts, 2, 1 << 20, &out, &too_many), WH_OK);
    assert_string_equal(out, "a.x:8471,a.x:8472,b.x:8471,b.x:8472");
    first = out;
    assert_int_equal(wh_port_list_get(&pl, &d, "a.x,b.x", 2, 1 << 20, &out, &too_many), WH_OK);
    assert_ptr_equal(out, first); /* the same text: not built again */
    assert_int_equal(wh_port_list_get(&pl, &d, hosts, 1, 1 << 20, &out, &too_many), WH_OK);
    assert_string_equal(out, "a.x:8471,b.x:8471");
    second = out;
    hosts[0] = 'c'; /* same pointer, new text */
    assert_int_equal(wh_port_list_get(&pl, &d, hosts, 1, 1 << 20, &out, &too_many), WH_OK);
    assert_string_equal(out, "c.x:8471,b.x:8471");
    /* The decision keeps every list built: patches may still point at them. */
    assert_string_equal(first, "a.x:8471,a.x:8472,b.x:8471,b.x:8472");
    assert_string_equal(second, "a.x:8471,b.x:8471");
    assert_int_equal(wh_port_list_get(&pl, &d, hosts, 2, 8, &out, &too_many), WH_ERR_TOOBIG);
    assert_int_equal(wh_port_list_get(&pl, &d, "a,b", WH_MAX_TORCH_ADDRESSES, 1 << 20, &out,
                                      &too_many),
                     WH_OK);
    assert_true(too_many);
    assert_string_equal(out, "");
    wh_port_list_free(&pl);
    wh_decision_free(&d);
}

static void test_worker_id(void **unused)
{
    (void)unused;
    assert_int_equal(wh_tpu_worker_id(3, 2, 1, true), 7);
    assert_int_equal(wh_tpu_worker_id(3, 2, 1, false), 3);
}

/* Issue 24: one identity per slice. */
static int conflicts(const char *env_json, long hosts, long host, long worker_id, bool check_id,
                     struct wh_identity_problem ip[2])
{
    cJSON *env = cJSON_Parse(env_json);
    assert_non_null(env);
    struct wh_identity_check c = {hosts, host, worker_id, check_id};
    int n = wh_identity_conflicts(env, &c, ip);
    cJSON_Delete(env);
    return n;
}

static void test_identity_conflicts(void **unused)
{
    (void)unused;
    struct wh_identity_problem ip[2];
    const char *copied = "[{\"name\":\"TPU_WORKER_ID\",\"value\":\"0\"},"
                         "{\"name\":\"TPU_WORKER_HOSTNAMES\",\"value\":\"localhost\"}]";
    assert_int_equal(conflicts(copied, 1, 0, 0, true, ip), 0); /* one host: right */
    assert_int_equal(conflicts(copied, 4, 2, 2, true, ip), 2);
    assert_string_equal(ip[0].rule, WH_RULE_IDENTITY_WORKER_ID);
    assert_non_null(strstr(ip[0].text, "host 2 of the 4"));
    assert_string_equal(ip[1].rule, WH_RULE_IDENTITY_LOCALHOST);
    assert_non_null(strstr(ip[1].text, "remove it"));
    assert_int_equal(conflicts(copied, 4, 0, 0, true, ip), 1); /* id 0 is pod 0's own */
    assert_string_equal(ip[0].rule, WH_RULE_IDENTITY_LOCALHOST);
    assert_int_equal(conflicts(copied, 4, 2, 2, false, ip), 1); /* LWS: id not judged */
    assert_int_equal(conflicts(copied, 4, -1, 0, true, ip), 2); /* a template */
    assert_non_null(strstr(ip[0].text, "one value for all 4 hosts"));
    /* TPU7x, 2 containers: container 1 of host 1 is worker 3 */
    assert_int_equal(conflicts("[{\"name\":\"TPU_WORKER_ID\",\"value\":\"3\"}]", 4, 1, 3, true, ip),
                     0);
    /* GKE's fieldRef, an empty value, real peers: respected */
    assert_int_equal(conflicts("[{\"name\":\"TPU_WORKER_ID\",\"valueFrom\":{\"fieldRef\":{}}},"
                               "{\"name\":\"TPU_WORKER_HOSTNAMES\",\"value\":\"a.s,b.s\"}]",
                               2, 1, 1, true, ip),
                     0);
    assert_int_equal(conflicts("[{\"name\":\"TPU_WORKER_ID\",\"value\":\"\"}]", 4, -1, 0, true, ip),
                     0);
    assert_int_equal(conflicts("[{\"name\":\"TPU_WORKER_ID\",\"value\":\"x\"}]", 4, 1, 1, true, ip),
                     1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collect),    cmocka_unit_test(test_torch_topology),
        cmocka_unit_test(test_host_ports), cmocka_unit_test(test_port_list),
        cmocka_unit_test(test_worker_id),  cmocka_unit_test(test_identity_conflicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
