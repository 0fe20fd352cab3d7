/* test_state.c: pod records (worker id rules of
 * docs/internals/reference-behaviour.md §2.4 step 3) and the
 * in-memory state (pod cache and node cache filtering, list shapes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/state.h"

#define TPU4 "\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}}"

static struct wh_pod_rec rec_of(const char *pod_json, cJSON **keep)
{
    *keep = wh_test_parse(pod_json);
    struct wh_pod_rec rec;
    assert_true(wh_pod_rec_from_json(*keep, &rec));
    return rec;
}

static long worker_id(const char *containers_json)
{
    char pod[4096];
    snprintf(pod, sizeof(pod), "{\"spec\":{\"containers\":%s}}", containers_json);
    cJSON *j;
    struct wh_pod_rec rec = rec_of(pod, &j);
    long id = rec.worker_id;
    cJSON_Delete(j);
    return id;
}

static void test_rec_fields(void **unused)
{
    (void)unused;
    cJSON *j;
    struct wh_pod_rec rec =
        rec_of("{\"metadata\":{\"name\":\"p1\",\"generateName\":\"g-\",\"namespace\":\"ns\","
               "\"labels\":{\"ray.io/cluster\":\"c\",\"ray.io/group\":\"g\",\"replicaIndex\":\"g-3\"},"
               "\"deletionTimestamp\":\"2024-01-01T00:00:00Z\"},"
               "\"spec\":{\"containers\":[{\"name\":\"side\"},{" TPU4 "},{" TPU4 "}]}}",
               &j);
    assert_string_equal(rec.name, "p1");
    assert_string_equal(rec.ns, "ns");
    assert_string_equal(rec.cluster, "c");
    assert_string_equal(rec.group, "g");
    assert_string_equal(rec.replica_label, "g-3");
    assert_true(rec.deleting);
    assert_int_equal(rec.n_tpu_containers, 2);
    cJSON_Delete(j);
    /* generateName when there is no name yet; absent strings are "" */
    rec = rec_of("{\"metadata\":{\"generateName\":\"g-\",\"deletionTimestamp\":null}}", &j);
    assert_string_equal(rec.name, "g-");
    assert_string_equal(rec.ns, "");
    assert_string_equal(rec.cluster, "");
    assert_string_equal(rec.group, "");
    assert_null(rec.replica_label);
    assert_false(rec.deleting);
    assert_int_equal(rec.n_tpu_containers, 0);
    assert_int_equal(rec.worker_id, WH_WORKER_ID_NONE);
    cJSON_Delete(j);
    struct wh_pod_rec r2;
    cJSON *arr = wh_test_parse("[]");
    assert_false(wh_pod_rec_from_json(arr, &r2));
    assert_false(wh_pod_rec_from_json(NULL, &r2));
    cJSON_Delete(arr);
}

static void test_worker_id_rules(void **unused)
{
    (void)unused;
    assert_int_equal(worker_id("[{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"3\"}]}]"),
                     3);
    /* the first TPU container with no TPU_WORKER_ID makes the record empty */
    assert_int_equal(worker_id("[{" TPU4 "}]"), WH_WORKER_ID_EMPTY);
    assert_int_equal(worker_id("[{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"\"}]}]"),
                     WH_WORKER_ID_EMPTY);
    assert_int_equal(worker_id("[{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"valueFrom\":"
                               "{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}]}]"),
                     WH_WORKER_ID_EMPTY);
    /* a non-integer value moves on to the next TPU container */
    assert_int_equal(worker_id("[{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"abc\"}]},"
                               "{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"5\"}]}]"),
                     5);
    assert_int_equal(worker_id("[{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"abc\"}]},"
                               "{" TPU4 "}]"),
                     WH_WORKER_ID_EMPTY);
    assert_int_equal(worker_id(
                         "[{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"abc\"}]},"
                         "{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"-1\"}]}]"),
                     WH_WORKER_ID_NONE);
    /* non-TPU containers do not count */
    assert_int_equal(worker_id("[{\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"7\"}]},"
                               "{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"2\"}]}]"),
                     2);
    assert_int_equal(worker_id("[{\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"7\"}]}]"),
                     WH_WORKER_ID_NONE);
    /* the env lookup rule: an empty entry before the value is skipped */
    assert_int_equal(worker_id("[{" TPU4 ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"\"},"
                               "{\"name\":\"TPU_WORKER_ID\",\"value\":\"6\"}]}]"),
                     6);
    assert_int_equal(worker_id("[]"), WH_WORKER_ID_NONE);
    assert_int_equal(worker_id("{}"), WH_WORKER_ID_NONE);
}

#define POD(name, ns, cluster, group, type, by)                                        \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns "\",\"labels\":{"       \
    "\"ray.io/cluster\":\"" cluster "\",\"ray.io/group\":\"" group "\","               \
    "\"ray.io/node-type\":\"" type "\",\"app.kubernetes.io/created-by\":\"" by "\"}}," \
    "\"spec\":{\"containers\":[{" TPU4                                                 \
    ",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"1\"}]}]}}"

struct seen {
    char names[16][32];
    int n;
    int stop_after;
};

static int visit_pod(void *arg, const struct wh_pod_rec *pod)
{
    struct seen *s = arg;
    if (s->n < 16)
        snprintf(s->names[s->n], sizeof(s->names[0]), "%s", pod->name);
    s->n++;
    return s->stop_after && s->n >= s->stop_after;
}

static struct seen group_pods(const struct wh_memstate *ms, const char *ns, const char *cluster,
                              const char *group, int stop_after)
{
    struct wh_state st = wh_memstate_view(ms);
    struct seen s = {.stop_after = stop_after};
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(st.ops->each_group_pod(st.impl, ns, cluster, group, visit_pod, &s, errbuf),
                     WH_OK);
    return s;
}

static void test_memstate_pod_filter(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    assert_non_null(ms);
    cJSON *list = wh_test_parse(
        "{\"kind\":\"PodList\",\"items\":[" POD("w1", "ns", "c", "g", "worker", "kuberay-operator") "," POD("head", "ns", "c", "g", "head", "kuberay-operator") "," POD(
            "user", "ns", "c", "g",
            "worker",
            "someone-else") ","
                            "{\"metadata\":{\"name\":\"nolabels\"}}," POD("w2", "ns", "c", "g", "worker", "kuberay-operator") "," POD(
                                "other-group", "ns", "c", "g2",
                                "worker",
                                "kuberay-operator") "," POD("other-cluster", "ns", "c2", "g",
                                                            "worker",
                                                            "kuberay-operator") "," POD("other-ns",
                                                                                        "ns2", "c",
                                                                                        "g", "worker",
                                                                                        "kuberay-operator") "]}");
    size_t added = 0;
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(wh_memstate_add_pods(ms, list, &added, errbuf), WH_OK);
    cJSON_Delete(list); /* the state keeps copies */
    assert_int_equal(added, 5);
    struct seen s = group_pods(ms, "ns", "c", "g", 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.names[0], "w1");
    assert_string_equal(s.names[1], "w2");
    s = group_pods(ms, "ns", "c", "g", 1); /* a visitor may stop the walk */
    assert_int_equal(s.n, 1);
    assert_int_equal(group_pods(ms, "ns2", "c", "g", 0).n, 1);
    assert_int_equal(group_pods(ms, "ns", "c", "g2", 0).n, 1);
    assert_int_equal(group_pods(ms, "ns", "c", "nope", 0).n, 0);
    struct wh_state st = wh_memstate_view(ms);
    assert_null(st.ops->legacy_unavailable); /* memory state is always trusted */
    wh_memstate_free(ms);
    wh_memstate_free(NULL);
}

static void test_memstate_pod_shapes(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    char errbuf[WH_ERRBUF_LEN];
    size_t added = 0;
    cJSON *arr = wh_test_parse("[" POD("a", "ns", "c", "g", "worker", "kuberay-operator") "]");
    assert_int_equal(wh_memstate_add_pods(ms, arr, &added, errbuf), WH_OK);
    assert_int_equal(added, 1);
    cJSON_Delete(arr);
    cJSON *one = wh_test_parse(POD("b", "ns", "c", "g", "worker", "kuberay-operator"));
    assert_int_equal(wh_memstate_add_pods(ms, one, &added, errbuf), WH_OK);
    assert_int_equal(added, 1);
    cJSON_Delete(one);
    cJSON *empty = wh_test_parse("{\"kind\":\"PodList\",\"items\":[]}");
    assert_int_equal(wh_memstate_add_pods(ms, empty, NULL, errbuf), WH_OK);
    cJSON_Delete(empty);
    assert_int_equal(group_pods(ms, "ns", "c", "g", 0).n, 2);
    /* not pods */
    static const char *const bad[] = {"\"x\"", "5", "{\"kind\":\"Node\"}", "[1]", "[{}, \"x\"]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *j = wh_test_parse(bad[i]);
        errbuf[0] = '\0';
        if (wh_memstate_add_pods(ms, j, NULL, errbuf) != WH_ERR_INVALID)
            fail_msg("%s accepted as pods", bad[i]);
        assert_true(errbuf[0] != '\0');
        cJSON_Delete(j);
    }
    wh_memstate_free(ms);
}

static void test_memstate_add_rec_copies(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    char name[16] = "pod-a", group[8] = "g";
    for (int i = 0; i < 40; i++) { /* beyond the first growth */
        struct wh_pod_rec rec = {.name = name,
                                 .ns = "ns",
                                 .cluster = "c",
                                 .group = group,
                                 .replica_label = i % 2 ? "g-0" : NULL,
                                 .n_tpu_containers = 1,
                                 .worker_id = i};
        assert_int_equal(wh_memstate_add_rec(ms, &rec), WH_OK);
    }
    strcpy(name, "changed");
    strcpy(group, "x");
    struct seen s = group_pods(ms, "ns", "c", "g", 0);
    assert_int_equal(s.n, 40);
    assert_string_equal(s.names[0], "pod-a"); /* copied, not borrowed */
    wh_memstate_free(ms);
    ms = wh_memstate_new();
    struct wh_pod_rec nulls = {0};
    assert_int_equal(wh_memstate_add_rec(ms, &nulls), WH_OK);
    assert_int_equal(group_pods(ms, "", "", "", 0).n, 1);
    wh_memstate_free(ms);
}

struct node_seen {
    int n;
    char accel[8][32];
    size_t n_labels[8];
};

static int visit_node(void *arg, const struct wh_node_rec *node)
{
    struct node_seen *s = arg;
    const char *a = wh_node_label(node, "cloud.google.com/gke-tpu-accelerator");
    snprintf(s->accel[s->n], sizeof(s->accel[0]), "%s", a ? a : "?");
    s->n_labels[s->n++] = node->n_labels;
    return 0;
}

static void test_memstate_nodes(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    char errbuf[WH_ERRBUF_LEN];
    size_t added = 0;
    cJSON *list = wh_test_parse(
        "{\"kind\":\"NodeList\",\"items\":["
        "{\"metadata\":{\"name\":\"cpu\",\"labels\":{\"kubernetes.io/os\":\"linux\"}}},"
        "{\"metadata\":{\"name\":\"t1\",\"labels\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\","
        "\"cloud.google.com/gke-nodepool\":\"p\",\"odd\":5}}},"
        "{\"metadata\":{\"name\":\"nolabels\"}},"
        "{\"metadata\":{\"name\":\"bad\",\"labels\":{\"cloud.google.com/gke-tpu-accelerator\":7}}}]}");
    assert_int_equal(wh_memstate_add_nodes(ms, list, &added, errbuf), WH_OK);
    cJSON_Delete(list);
    assert_int_equal(added, 1);
    cJSON *one = wh_test_parse("{\"kind\":\"Node\",\"metadata\":{\"name\":\"t2\",\"labels\":{"
                               "\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\"}}}");
    assert_int_equal(wh_memstate_add_nodes(ms, one, &added, errbuf), WH_OK);
    assert_int_equal(added, 1);
    cJSON_Delete(one);
    struct wh_state st = wh_memstate_view(ms);
    struct node_seen s = {0};
    assert_int_equal(st.ops->each_node(st.impl, visit_node, &s, errbuf), WH_OK);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.accel[0], "tpu7x");
    assert_int_equal(s.n_labels[0], 2); /* the non-string label is not kept */
    assert_string_equal(s.accel[1], "tpu-v6e-slice");
    cJSON *bad = wh_test_parse("[\"node\"]");
    assert_int_equal(wh_memstate_add_nodes(ms, bad, NULL, errbuf), WH_ERR_INVALID);
    cJSON_Delete(bad);
    bad = wh_test_parse("{\"kind\":\"Pod\"}");
    assert_int_equal(wh_memstate_add_nodes(ms, bad, NULL, errbuf), WH_ERR_INVALID);
    cJSON_Delete(bad);
    wh_memstate_free(ms);
}

static void test_node_label(void **unused)
{
    (void)unused;
    const char *keys[] = {"a", "b"}, *values[] = {"1", "2"};
    struct wh_node_rec n = {.name = "n", .n_labels = 2, .keys = keys, .values = values};
    assert_string_equal(wh_node_label(&n, "b"), "2");
    assert_null(wh_node_label(&n, "c"));
    assert_null(wh_node_label(&n, "A"));
}

/* A group's walk visits exactly its pods, in the order added, however the
 * pods of many groups are interleaved (the state keeps a list per group). */
struct walk {
    char names[64][16];
    size_t n;
};

static int walk_pod(void *arg, const struct wh_pod_rec *pod)
{
    struct walk *w = arg;
    assert_true(w->n < 64);
    snprintf(w->names[w->n++], sizeof(w->names[0]), "%s", pod->name);
    return 0;
}

static void test_memstate_group_walk(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = wh_memstate_new();
    static const char *const ns[] = {"a", "b"}, *cl[] = {"c", "d"}, *gr[] = {"g", "h", "i"};
    struct walk want[2][2][3] = {0};
    uint64_t x = 3;
    for (int i = 0; i < 300; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned r = (unsigned)(x >> 33);
        int a = r % 2, b = (r >> 1) % 2, c = (r >> 2) % 3;
        char name[16];
        snprintf(name, sizeof(name), "p%d", i);
        struct wh_pod_rec rec = {.name = name, .ns = ns[a], .cluster = cl[b], .group = gr[c]};
        assert_int_equal(wh_memstate_add_rec(ms, &rec), WH_OK);
        struct walk *w = &want[a][b][c];
        if (w->n < 64)
            snprintf(w->names[w->n++], sizeof(w->names[0]), "%s", name);
        else
            continue;
        struct wh_state st = wh_memstate_view(ms);
        struct walk got = {0};
        char errbuf[WH_ERRBUF_LEN];
        assert_int_equal(st.ops->each_group_pod(st.impl, ns[a], cl[b], gr[c], walk_pod, &got, errbuf),
                         WH_OK);
        assert_int_equal(got.n, w->n);
        assert_memory_equal(got.names, w->names, sizeof(got.names));
    }
    struct wh_state st = wh_memstate_view(ms);
    struct walk none = {0};
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(st.ops->each_group_pod(st.impl, "a", "c", "nope", walk_pod, &none, errbuf),
                     WH_OK);
    assert_int_equal(none.n, 0);
    wh_memstate_free(ms);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rec_fields),          cmocka_unit_test(test_worker_id_rules),
        cmocka_unit_test(test_memstate_pod_filter), cmocka_unit_test(test_memstate_group_walk),
        cmocka_unit_test(test_memstate_pod_shapes), cmocka_unit_test(test_memstate_add_rec_copies),
        cmocka_unit_test(test_memstate_nodes),      cmocka_unit_test(test_node_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
