/* test_store.c: the caches' store (store.h) and its tables (htab.h):
 * applying pods and nodes as a LIST or watch would, relabelling, sweeping by
 * generation, interning, and growth past the first bucket array. */
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
#include "wh/htab.h"
#include "store.h"

/* A KubeRay worker pod of ns/cluster/group with one TPU container. */
static cJSON *pod(const char *name, const char *cluster, const char *group, const char *replica,
                  int worker_id)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"labels\":{"
             "\"ray.io/cluster\":\"%s\",\"ray.io/group\":\"%s\",\"replicaIndex\":\"%s\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"w\",\"resources\":{\"limits\":{"
             "\"google.com/tpu\":\"4\"}},\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"%d\"}]}]}}",
             name, cluster, group, replica, worker_id);
    return wh_test_parse(text);
}

static cJSON *node(const char *name, bool tpu)
{
    char text[512];
    snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"zone\":\"a\"%s}}}",
             name, tpu ? ",\"" WH_STORE_NODE_LABEL "\":\"tpu-v5p-slice\"" : "");
    return wh_test_parse(text);
}

struct seen {
    size_t n;
    long id_sum;
    char last[64];
};

static int see_pod(void *arg, const struct wh_pod_rec *p)
{
    struct seen *s = arg;
    s->n++;
    s->id_sum += p->worker_id;
    snprintf(s->last, sizeof(s->last), "%s/%s", p->name, p->replica_label);
    return 0;
}

static int see_node(void *arg, const struct wh_node_rec *n)
{
    struct seen *s = arg;
    s->n++;
    s->id_sum += (long)n->n_labels;
    snprintf(s->last, sizeof(s->last), "%s", n->name);
    return 0;
}

static int stop_at_first(void *arg, const struct wh_pod_rec *p)
{
    (void)arg;
    (void)p;
    return 7;
}

static struct seen group(struct wh_store *s, const char *cluster, const char *grp)
{
    struct seen seen = {0};
    assert_int_equal(wh_store_each_group_pod(s, "ns", cluster, grp, see_pod, &seen), 0);
    return seen;
}

static void apply_pod(struct wh_store *s, cJSON *obj, bool deleted, uint32_t gen)
{
    struct wh_pod_rec rec;
    assert_int_equal(wh_store_apply_pod(s, obj, deleted, gen, &rec), WH_OK);
    assert_non_null(rec.name);
    cJSON_Delete(obj);
}

static void test_pods(void **st)
{
    (void)st;
    struct wh_store *s = wh_store_new();
    assert_non_null(s);
    apply_pod(s, pod("a-0", "c", "g", "g-0", 0), false, 1);
    apply_pod(s, pod("a-1", "c", "g", "g-0", 1), false, 1);
    apply_pod(s, pod("b-0", "c", "h", "h-0", 0), false, 1);
    struct seen g = group(s, "c", "g");
    assert_int_equal(g.n, 2);
    assert_int_equal(g.id_sum, 1);
    assert_int_equal(group(s, "c", "h").n, 1);
    assert_int_equal(group(s, "other", "g").n, 0);
    assert_int_equal(wh_store_each_group_pod(s, "ns", "c", "g", stop_at_first, NULL), 7);

    /* An update replaces; relabelled into another group, the pod moves. */
    apply_pod(s, pod("a-1", "c", "g", "g-1", 5), false, 1);
    g = group(s, "c", "g");
    assert_int_equal(g.id_sum, 5);
    apply_pod(s, pod("a-1", "c", "h", "h-1", 2), false, 1);
    assert_int_equal(group(s, "c", "g").n, 1);
    g = group(s, "c", "h");
    assert_int_equal(g.n, 2);
    assert_int_equal(g.id_sum, 2);

    /* A pod the store does not keep says so by a NULL name. */
    struct wh_pod_rec rec;
    cJSON *head = wh_test_parse("{\"metadata\":{\"namespace\":\"ns\"}}");
    assert_int_equal(wh_store_apply_pod(s, head, false, 1, &rec), WH_OK);
    assert_null(rec.name);
    cJSON_Delete(head);

    /* Deleted; then a relist (generation 2) that shows only b-0 sweeps the
     * rest, and the strings of the groups that emptied go with them. */
    apply_pod(s, pod("a-0", "c", "g", "g-0", 0), true, 1);
    assert_int_equal(group(s, "c", "g").n, 0);
    apply_pod(s, pod("b-0", "c", "h", "h-0", 0), false, 2);
    wh_store_sweep_pods(s, 2);
    g = group(s, "c", "h");
    assert_int_equal(g.n, 1);
    assert_string_equal(g.last, "b-0/h-0");
    size_t pods, nodes, interned;
    wh_store_counts(s, &pods, &nodes, &interned);
    assert_int_equal(pods, 1);
    assert_int_equal(nodes, 0);
    assert_int_equal(interned, 4); /* ns, c, h, h-0 */
    wh_store_free(s);
}

static void test_nodes(void **st)
{
    (void)st;
    struct wh_store *s = wh_store_new();
    cJSON *objs[] = {node("n1", true), node("n2", true), node("n3", false)};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(wh_store_apply_node(s, objs[i], false, 1), WH_OK);
        cJSON_Delete(objs[i]);
    }
    struct seen seen = {0};
    assert_int_equal(wh_store_each_node(s, see_node, &seen), 0);
    assert_int_equal(seen.n, 2); /* n3 is no TPU node */
    assert_int_equal(seen.id_sum, 4);
    /* n1 loses its TPU label: it leaves; a relist that shows nothing else
     * sweeps n2. */
    cJSON *plain = node("n1", false);
    assert_int_equal(wh_store_apply_node(s, plain, false, 2), WH_OK);
    cJSON_Delete(plain);
    seen = (struct seen){0};
    assert_int_equal(wh_store_each_node(s, see_node, &seen), 0);
    assert_int_equal(seen.n, 1);
    assert_string_equal(seen.last, "n2");
    wh_store_sweep_nodes(s, 2);
    seen = (struct seen){0};
    assert_int_equal(wh_store_each_node(s, see_node, &seen), 0);
    assert_int_equal(seen.n, 0);
    wh_store_free(s);
}

/* The nodes looked up by label are those a walk finds, through random
 * LISTs (applies tagged with a generation, then a sweep), watch events
 * that change or delete a node or take its TPU label away. */
struct by_label {
    const char *const *pairs;
    size_t n_pairs;
    char seen[64];
    int n;
};

static int see_labelled(void *arg, const struct wh_node_rec *n)
{
    struct by_label *b = arg;
    if (wh_node_has_labels(n, b->pairs, b->n_pairs)) {
        int id = atoi(n->name + 1);
        assert_int_equal(b->seen[id], 0);
        b->seen[id] = 1;
        b->n++;
    }
    return 0;
}

static void test_nodes_by_label(void **st)
{
    (void)st;
    struct wh_store *s = wh_store_new();
    uint64_t x = 7;
    int checks = 0;
    for (int round = 0; round < 3000; round++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned r = (unsigned)(x >> 33);
        uint32_t gen = 1 + (uint32_t)round / 500;
        if (round % 500 == 499) {
            wh_store_sweep_nodes(s, gen);
            continue;
        }
        char text[512];
        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"n%u\",\"labels\":{\"pool\":\"p%u\","
                 "\"rack\":\"r%u\"%s}}}",
                 r % 64, (r >> 6) % 4, (r >> 8) % 3,
                 (r >> 10) % 8 ? ",\"" WH_STORE_NODE_LABEL "\":\"tpu7x\"" : "");
        cJSON *obj = wh_test_parse(text);
        assert_int_equal(wh_store_apply_node(s, obj, (r >> 13) % 6 == 0, gen), WH_OK);
        cJSON_Delete(obj);
        char pool[8], rack[8];
        snprintf(pool, sizeof(pool), "p%u", (r >> 16) % 4);
        snprintf(rack, sizeof(rack), "r%u", (r >> 18) % 3);
        const char *pairs[] = {"pool", pool, "rack", rack};
        size_t n_pairs = 1 + (r >> 20) % 2;
        struct by_label walked = {.pairs = pairs, .n_pairs = n_pairs};
        struct by_label looked = {.pairs = pairs, .n_pairs = n_pairs};
        assert_int_equal(wh_store_each_node(s, see_labelled, &walked), 0);
        assert_int_equal(wh_store_each_node_with(s, pairs, n_pairs, see_labelled, &looked), 0);
        assert_int_equal(walked.n, looked.n);
        assert_memory_equal(walked.seen, looked.seen, sizeof(walked.seen));
        checks += walked.n > 0;
    }
    assert_true(checks > 1000);
    wh_store_free(s); /* names, labels and the index: nothing leaks (ASan) */
}

/* Many pods: the tables grow past their first bucket arrays and every pod
 * stays reachable; freeing a full store leaks nothing (ASan build). */
static void test_many(void **st)
{
    (void)st;
    struct wh_store *s = wh_store_new();
    char name[32], grp[32], rep[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "p-%d", i);
        snprintf(grp, sizeof(grp), "g%d", i % 100);
        snprintf(rep, sizeof(rep), "g%d-0", i % 100);
        apply_pod(s, pod(name, "c", grp, rep, i / 100), false, 1);
    }
    size_t pods, nodes, interned;
    wh_store_counts(s, &pods, &nodes, &interned);
    assert_int_equal(pods, 2000);
    assert_int_equal(interned, 2 + 200);
    struct seen g = group(s, "c", "g7");
    assert_int_equal(g.n, 20);
    assert_int_equal(g.id_sum, 190); /* 0 + 1 + ... + 19 */
    wh_store_free(s);
}

static void test_intern(void **st)
{
    (void)st;
    struct wh_htab t = {0};
    char text[] = "tpu-group";
    const char *a = wh_intern(&t, text), *b = wh_intern(&t, "tpu-group");
    assert_ptr_equal(a, b); /* shared */
    assert_ptr_not_equal(a, text);
    assert_int_equal(t.n, 1);
    wh_unintern(&t, a);
    assert_int_equal(t.n, 1); /* one reference left */
    wh_unintern(&t, b);
    assert_int_equal(t.n, 0);
    wh_unintern(&t, NULL);
    wh_htab_free(&t);
}

/* The slice records (slicerec.h): a TPU pod comes back from
 * wh_store_slice_lists as a Pod with the fields doctor reads (a user's label,
 * a non-TPU container's env and other resources left out, the TPU container
 * at its index); an update replaces the record, a deletion drops it; a pod
 * without a TPU container has none; the version moves with every change. */
static void test_slice_records(void **st)
{
    (void)st;
    struct wh_store *s = wh_store_new();
    unsigned long long v0 = wh_store_version(s), v;
    static const char text[] =
        "{\"metadata\":{\"name\":\"p-0\",\"namespace\":\"ns\",\"deletionTimestamp\":null,"
        "\"labels\":{\"ray.io/cluster\":\"c\",\"ray.io/group\":\"g\",\"mine\":\"x\"},"
        "\"annotations\":{\"cloud.google.com/gke-tpu-slice-topology\":\"2x2\",\"a\":\"b\"}},"
        "\"spec\":{\"nodeName\":\"n1\",\"hostname\":\"h0\",\"subdomain\":\"sd\","
        "\"hostNetwork\":true,\"dnsPolicy\":\"ClusterFirstWithHostNet\",\"nodeSelector\":{"
        "\"k\":\"v\"},\"containers\":[{\"name\":\"side\",\"env\":[{\"name\":\"TPU_X\","
        "\"value\":\"1\"}]},{\"name\":\"w\",\"resources\":{\"limits\":{\"google.com/tpu\":4,"
        "\"cpu\":\"1\"}},\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"0\"},{\"name\":"
        "\"HOME\",\"value\":\"/\"},{\"name\":\"MEGASCALE_SLICE_ID\",\"valueFrom\":{}}]}]},"
        "\"status\":{\"phase\":\"Running\"}}";
    apply_pod(s, wh_test_parse(text), false, 1);
    apply_pod(s,
              wh_test_parse("{\"metadata\":{\"name\":\"cpu\",\"namespace\":\"ns\","
                            "\"labels\":{\"ray.io/cluster\":\"c\",\"ray.io/group\":\"g\"}},"
                            "\"spec\":{\"containers\":[{\"name\":\"w\"}]}}"),
              false, 1);
    cJSON *pods = NULL, *nodes = NULL;
    assert_int_equal(wh_store_slice_lists(s, &pods, &nodes, &v), WH_OK);
    assert_true(v > v0);
    assert_int_equal(cJSON_GetArraySize(pods), 1);
    assert_int_equal(cJSON_GetArraySize(nodes), 0);
    char *got = cJSON_PrintUnformatted(cJSON_GetArrayItem(pods, 0));
    assert_string_equal(
        got,
        "{\"metadata\":{\"name\":\"p-0\",\"namespace\":\"ns\",\"labels\":{"
        "\"ray.io/cluster\":\"c\",\"ray.io/group\":\"g\"},\"annotations\":{"
        "\"cloud.google.com/gke-tpu-slice-topology\":\"2x2\"}},\"spec\":{\"containers\":[{\"name\":\"side\"},{"
        "\"name\":\"w\",\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"0\"},{\"name\":"
        "\"MEGASCALE_SLICE_ID\"}],\"resources\":{\"limits\":{\"google.com/tpu\":4}}}],"
        "\"nodeName\":\"n1\",\"hostname\":\"h0\",\"subdomain\":\"sd\",\"dnsPolicy\":"
        "\"ClusterFirstWithHostNet\",\"hostNetwork\":true,\"nodeSelector\":{\"k\":\"v\"}},"
        "\"status\":{\"phase\":\"Running\"},\"kind\":\"Pod\"}");
    cJSON_free(got);
    cJSON_Delete(pods);
    cJSON_Delete(nodes);
    /* An update replaces the record; a deletion drops it. */
    unsigned long long v1 = wh_store_version(s);
    apply_pod(s, pod("p-0", "c", "g", "g-0", 3), false, 1);
    assert_true(wh_store_version(s) > v1);
    assert_int_equal(wh_store_slice_lists(s, &pods, &nodes, &v), WH_OK);
    got = cJSON_PrintUnformatted(cJSON_GetArrayItem(pods, 0));
    assert_non_null(strstr(got, "\"TPU_WORKER_ID\",\"value\":\"3\""));
    assert_null(strstr(got, "nodeName"));
    cJSON_free(got);
    cJSON_Delete(pods);
    cJSON_Delete(nodes);
    apply_pod(s, pod("p-0", "c", "g", "g-0", 3), true, 1);
    assert_int_equal(wh_store_slice_lists(s, &pods, &nodes, &v), WH_OK);
    assert_int_equal(cJSON_GetArraySize(pods), 0);
    cJSON_Delete(pods);
    cJSON_Delete(nodes);
    wh_store_free(s); /* the CPU pod and every record string: nothing leaks (ASan) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pods),          cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_many),          cmocka_unit_test(test_intern),
        cmocka_unit_test(test_slice_records), cmocka_unit_test(test_nodes_by_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
