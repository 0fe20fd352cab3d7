/* test_affinity.c: the slice affinity (docs/internals/reference-behaviour.md
 * §2.6: topology key rules (a)-(c), merge after the user's terms, D6 idempotence) and subslice
 * topology-key discovery from nodes (§4.1, §4.2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/affinity.h"
#include "wh/buf.h"
#include "wh/json.h"

#define REQ "requiredDuringSchedulingIgnoredDuringExecution"
#define BLOCK "cloud.google.com/gce-topology-block"
#define SUBBLOCK "cloud.google.com/gce-topology-subblock"
#define HOST "cloud.google.com/gce-topology-host"
#define POOL "cloud.google.com/gke-nodepool"

static const char *key_of(const char *pod_json, char *out)
{
    cJSON *pod = wh_test_parse(pod_json);
    snprintf(out, 128, "%s", wh_affinity_topology_key(pod));
    cJSON_Delete(pod);
    return out;
}

static void test_topology_key(void **unused)
{
    (void)unused;
    char k[128];
    /* (c) default */
    assert_string_equal(key_of("{}", k), POOL);
    /* (a) the first user required podAffinity term with a cloud.google.com/ key */
    assert_string_equal(
        key_of("{\"spec\":{\"affinity\":{\"podAffinity\":{\"" REQ "\":["
               "{\"topologyKey\":\"kubernetes.io/hostname\"},{\"topologyKey\":\"" BLOCK "\"},"
               "{\"topologyKey\":\"" SUBBLOCK "\"}]}}},"
               "\"metadata\":{\"annotations\":{\"kueue.x-k8s.io/podset-required-topology\":\"" HOST
               "\"}}}",
               k),
        BLOCK);
    /* (b) the Kueue annotation when no user term qualifies */
    assert_string_equal(
        key_of("{\"spec\":{\"affinity\":{\"podAffinity\":{\"" REQ "\":["
               "{\"topologyKey\":\"kubernetes.io/hostname\"}]}}},"
               "\"metadata\":{\"annotations\":{\"kueue.x-k8s.io/podset-required-topology\":\"" SUBBLOCK
               "\"}}}",
               k),
        SUBBLOCK);
    /* the annotation only counts with a cloud.google.com/ key */
    assert_string_equal(key_of("{\"metadata\":{\"annotations\":{\"kueue.x-k8s.io/podset-required-topology\":"
                               "\"kubernetes.io/hostname\"}}}",
                               k),
                        POOL);
    /* preferred terms and anti-affinity terms do not count */
    assert_string_equal(
        key_of("{\"spec\":{\"affinity\":{\"podAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
               "{\"podAffinityTerm\":{\"topologyKey\":\"" BLOCK "\"}}]},"
               "\"podAntiAffinity\":{\"" REQ "\":[{\"topologyKey\":\"" BLOCK "\"}]}}}}",
               k),
        POOL);
    /* odd shapes are ignored */
    assert_string_equal(key_of("{\"spec\":{\"affinity\":{\"podAffinity\":{\"" REQ "\":{}}}}}", k),
                        POOL);
    assert_string_equal(key_of("{\"spec\":{\"affinity\":{\"podAffinity\":{\"" REQ
                               "\":[5,{\"topologyKey\":7}]}}}}",
                               k),
                        POOL);
}

static const struct wh_affinity_terms terms = {
    .sel_key = "ray.io/worker-group-replica-name",
    .sel_value = "c-g-abcde",
    .cluster = "c",
    .topology_key = SUBBLOCK,
};

#define OUR_AFFINITY                                                                            \
    "{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"ray.io/worker-group-replica-name\","  \
    "\"operator\":\"In\",\"values\":[\"c-g-abcde\"]},{\"key\":\"ray.io/cluster\",\"operator\":" \
    "\"In\",\"values\":[\"c\"]}]},\"topologyKey\":\"" SUBBLOCK "\"}"
#define OUR_ANTI1                                                                                  \
    "{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"ray.io/worker-group-replica-name\","     \
    "\"operator\":\"NotIn\",\"values\":[\"c-g-abcde\"]},{\"key\":\"ray.io/cluster\",\"operator\":" \
    "\"In\",\"values\":[\"c\"]}]},\"topologyKey\":\"" SUBBLOCK "\"}"
#define OUR_ANTI2                                                                                 \
    "{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"ray.io/cluster\",\"operator\":"         \
    "\"NotIn\",\"values\":[\"c\"]},{\"key\":\"ray.io/worker-group-replica-name\",\"operator\":"   \
    "\"Exists\"}]},\"topologyKey\":\"" SUBBLOCK "\",\"namespaceSelector\":{\"matchExpressions\":" \
    "[{\"key\":\"kubernetes.io/metadata.name\",\"operator\":\"NotIn\",\"values\":[\"kube-system\"]}]}}"

static cJSON *merge(const char *affinity_json)
{
    cJSON *aff = affinity_json ? wh_test_parse(affinity_json) : NULL;
    cJSON *out = NULL;
    assert_int_equal(wh_affinity_merge(aff, &terms, &out), WH_OK);
    cJSON_Delete(aff);
    return out;
}

static void assert_json(const cJSON *got, const char *want_text)
{
    cJSON *want = wh_test_parse(want_text);
    if (!cJSON_Compare(got, want, 1)) {
        char *g = cJSON_PrintUnformatted(got);
        fail_msg("got  %s\nwant %s", g, want_text);
    }
    cJSON_Delete(want);
}

static void test_merge_empty(void **unused)
{
    (void)unused;
    cJSON *out = merge(NULL);
    assert_non_null(out);
    assert_json(out, "{\"podAffinity\":{\"" REQ "\":[" OUR_AFFINITY "]},"
                     "\"podAntiAffinity\":{\"" REQ "\":[" OUR_ANTI1 "," OUR_ANTI2 "]}}");
    /* key order as the reference writes it: Exists has no values */
    char *text = cJSON_PrintUnformatted(out);
    assert_non_null(strstr(text, "\"operator\":\"Exists\"}"));
    cJSON_free(text);
    cJSON_Delete(out);
}

static void test_merge_keeps_user_terms_first(void **unused)
{
    (void)unused;
    const char *user =
        "{\"nodeAffinity\":{\"" REQ
        "\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"k\","
        "\"operator\":\"In\",\"values\":[\"v\"]}]}]}},"
        "\"podAffinity\":{\"" REQ "\":[{\"topologyKey\":\"" BLOCK "\",\"labelSelector\":{}}],"
        "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1,\"podAffinityTerm\":"
        "{\"topologyKey\":\"zone\"}}]},"
        "\"podAntiAffinity\":{\"" REQ "\":[{\"topologyKey\":\"kubernetes.io/hostname\"}]}}";
    cJSON *out = merge(user);
    assert_non_null(out);
    assert_json(out,
                "{\"nodeAffinity\":{\"" REQ
                "\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"k\","
                "\"operator\":\"In\",\"values\":[\"v\"]}]}]}},"
                "\"podAffinity\":{\"" REQ "\":[{\"topologyKey\":\"" BLOCK
                "\",\"labelSelector\":{}}," OUR_AFFINITY "],"
                "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1,\"podAffinityTerm\":"
                "{\"topologyKey\":\"zone\"}}]},"
                "\"podAntiAffinity\":{\"" REQ
                "\":[{\"topologyKey\":\"kubernetes.io/hostname\"}," OUR_ANTI1 "," OUR_ANTI2 "]}}");
    /* D6: merging the result again adds nothing */
    char *text = cJSON_PrintUnformatted(out);
    cJSON *again = merge(text);
    assert_null(again);
    cJSON_free(text);
    cJSON_Delete(out);
}

static void test_merge_partial(void **unused)
{
    (void)unused;
    /* only the missing terms are added */
    cJSON *out = merge("{\"podAffinity\":{\"" REQ "\":[" OUR_AFFINITY "]}}");
    assert_non_null(out);
    assert_json(out, "{\"podAffinity\":{\"" REQ "\":[" OUR_AFFINITY "]},"
                     "\"podAntiAffinity\":{\"" REQ "\":[" OUR_ANTI1 "," OUR_ANTI2 "]}}");
    cJSON_Delete(out);
    /* containers of the wrong type are replaced */
    out = merge("{\"podAffinity\":\"x\",\"podAntiAffinity\":{\"" REQ "\":5}}");
    assert_non_null(out);
    assert_json(out, "{\"podAffinity\":{\"" REQ "\":[" OUR_AFFINITY "]},"
                     "\"podAntiAffinity\":{\"" REQ "\":[" OUR_ANTI1 "," OUR_ANTI2 "]}}");
    cJSON_Delete(out);
    /* an affinity that is not an object is replaced */
    out = merge("[1]");
    assert_non_null(out);
    assert_true(cJSON_IsObject(out));
    cJSON_Delete(out);
}

/* The text written without a tree is byte for byte the merged tree's, for
 * every affinity the fast path takes; the others are not fresh. */
static void test_write_fresh_is_the_merge(void **unused)
{
    (void)unused;
    static const char *const fresh[] = {
        NULL,
        "{}",
        "[1]",
        "\"x\"",
        "{\"nodeAffinity\":{\"" REQ "\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
        "\"k\",\"operator\":\"In\",\"values\":[\"v\\\"q\",2.5,true,null]}]}]}},\"z\":{}}",
    };
    struct wh_affinity_terms odd = terms;
    odd.sel_value = "c-\"g\"\\-\n\xc3\xa9"; /* escapes in every value written */
    odd.cluster = "c\t";
    const struct wh_affinity_terms *sets[] = {&terms, &odd};
    for (size_t s = 0; s < 2; s++) {
        for (size_t i = 0; i < sizeof(fresh) / sizeof(fresh[0]); i++) {
            cJSON *aff = fresh[i] ? wh_test_parse(fresh[i]) : NULL;
            assert_true(wh_affinity_is_fresh(aff));
            cJSON *merged = NULL;
            assert_int_equal(wh_affinity_merge(aff, sets[s], &merged), WH_OK);
            struct wh_buf want, got;
            wh_buf_init(&want, 1 << 20);
            wh_buf_init(&got, 1 << 20);
            assert_int_equal(wh_json_write(&want, merged), WH_OK);
            struct wh_affinity_fresh f = {.affinity = aff, .terms = sets[s]};
            assert_int_equal(wh_affinity_write_fresh(&got, &f), WH_OK);
            assert_string_equal(wh_buf_ptr(&got), wh_buf_ptr(&want));
            wh_buf_free(&want);
            wh_buf_free(&got);
            cJSON_Delete(merged);
            cJSON_Delete(aff);
        }
    }
    static const char *const not_fresh[] = {
        "{\"podAffinity\":{}}",
        "{\"podAntiAffinity\":null}",
        "{\"nodeAffinity\":{},\"podAffinity\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof(not_fresh) / sizeof(not_fresh[0]); i++) {
        cJSON *aff = wh_test_parse(not_fresh[i]);
        assert_false(wh_affinity_is_fresh(aff));
        cJSON_Delete(aff);
    }
}

static void test_merge_legacy_selector(void **unused)
{
    (void)unused;
    struct wh_affinity_terms t = {.sel_key = "replicaIndex",
                                  .sel_value = "g-2",
                                  .cluster = "c",
                                  .topology_key = POOL};
    cJSON *out = NULL;
    assert_int_equal(wh_affinity_merge(NULL, &t, &out), WH_OK);
    const cJSON *e = wh_json_path(out, "podAffinity", NULL);
    e = cJSON_GetArrayItem(wh_json_get(e, REQ), 0);
    assert_string_equal(wh_json_str(e, "topologyKey"), POOL);
    e = cJSON_GetArrayItem(wh_json_path(e, "labelSelector", "matchExpressions", NULL), 0);
    assert_string_equal(wh_json_str(e, "key"), "replicaIndex");
    assert_string_equal(cJSON_GetArrayItem(wh_json_get(e, "values"), 0)->valuestring, "g-2");
    cJSON_Delete(out);
}

/* ---- subslice discovery -------------------------------------------------- */

static struct wh_memstate *nodes_state(const char *nodes_json)
{
    struct wh_memstate *ms = wh_memstate_new();
    cJSON *j = wh_test_parse(nodes_json);
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(wh_memstate_add_nodes(ms, j, NULL, errbuf), WH_OK);
    cJSON_Delete(j);
    return ms;
}

#define N(name, accel, pool, block, sub, host)                                            \
    "{\"metadata\":{\"name\":\"" name "\",\"labels\":{"                                   \
    "\"cloud.google.com/gke-tpu-accelerator\":\"" accel "\","                             \
    "\"cloud.google.com/gke-tpu-topology\":\"4x4x4\","                                    \
    "\"" POOL "\":\"" pool "\",\"" BLOCK "\":\"" block "\",\"" SUBBLOCK "\":\"" sub "\"," \
    "\"" HOST "\":\"" host "\"}}}"

/* 8 tpu7x nodes: pool p1 of 8; blocks b1 (4), b2 (4); subblocks of 2; hosts
 * of 1; plus v6e nodes that the selector must exclude. */
static const char cluster_nodes[] =
    "[" N("n1", "tpu7x", "p1", "b1", "s1", "h1") "," N("n2", "tpu7x", "p1", "b1", "s1", "h2") "," N(
        "n3", "tpu7x", "p1", "b1", "s2",
        "h3") "," N("n4", "tpu7x", "p1", "b1", "s2",
                    "h4") "," N("n5", "tpu7x", "p1", "b2", "s3",
                                "h5") "," N("n6", "tpu7x", "p1", "b2", "s3",
                                            "h6") "," N("n7", "tpu7x", "p1", "b2", "s4",
                                                        "h7") "," N("n8", "tpu7x", "p1", "b2", "s4",
                                                                    "h8") "," N("v1",
                                                                                "tpu-v6e-slice",
                                                                                "p2", "b9", "s9",
                                                                                "h9") "," N("v2",
                                                                                            "tpu-v6e-slice",
                                                                                            "p2",
                                                                                            "b9",
                                                                                            "s9",
                                                                                            "h10") "]";

static struct wh_subslice_index find(const struct wh_memstate *ms, const char *selector, long n)
{
    struct wh_state st = wh_memstate_view(ms);
    cJSON *sel = selector ? wh_test_parse(selector) : NULL;
    struct wh_subslice_index idx;
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(wh_subslice_find(&st, sel, n, &idx, errbuf), WH_OK);
    cJSON_Delete(sel);
    return idx;
}

#define SEL7X \
    "{\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\",\"cloud.google.com/gke-tpu-topology\":\"4x4x4\"}"

static void test_subslice_levels(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = nodes_state(cluster_nodes);
    struct wh_subslice_index idx;
    idx = find(ms, SEL7X, 1);
    assert_int_equal(idx.n_nodes, 8);
    assert_string_equal(idx.key, HOST);
    assert_false(idx.pool_only);
    idx = find(ms, SEL7X, 2);
    assert_string_equal(idx.key, SUBBLOCK);
    idx = find(ms, SEL7X, 4);
    assert_string_equal(idx.key, BLOCK);
    idx = find(ms, SEL7X, 8);
    assert_string_equal(idx.key, POOL);
    idx = find(ms, SEL7X, 3); /* no group of exactly 3 */
    assert_null(idx.key);
    assert_int_equal(idx.n_nodes, 8);
    idx = find(ms, SEL7X, 16);
    assert_null(idx.key);
    /* the selector filters: two v6e nodes in one subblock */
    idx = find(ms, "{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\"}", 2);
    assert_int_equal(idx.n_nodes, 2);
    assert_string_equal(idx.key, SUBBLOCK);
    /* no selector: every node; pool p1 has 8 */
    idx = find(ms, NULL, 8);
    assert_int_equal(idx.n_nodes, 10);
    assert_string_equal(idx.key, POOL);
    /* nothing matches */
    idx = find(ms, "{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v4-podslice\"}", 2);
    assert_int_equal(idx.n_nodes, 0);
    assert_null(idx.key);
    idx = find(ms, "{\"cloud.google.com/gke-tpu-accelerator\":5}", 1);
    assert_int_equal(idx.n_nodes, 0);
    wh_memstate_free(ms);
}

static void test_subslice_pool_only(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = nodes_state(
        "[{\"metadata\":{\"name\":\"a\",\"labels\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\","
        "\"" POOL "\":\"p\",\"" HOST "\":\"\"}}},"
        "{\"metadata\":{\"name\":\"b\",\"labels\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\","
        "\"" POOL "\":\"p\"}}}]");
    struct wh_subslice_index idx = find(ms, NULL, 2);
    assert_int_equal(idx.n_nodes, 2);
    assert_true(idx.pool_only); /* empty values do not count as groups */
    assert_string_equal(idx.key, POOL);
    idx = find(ms, NULL, 4);
    assert_true(idx.pool_only);
    assert_null(idx.key);
    wh_memstate_free(ms);
    ms = nodes_state(
        "[{\"metadata\":{\"name\":\"a\",\"labels\":{\"cloud.google.com/gke-tpu-accelerator\":\"x\"}}}]");
    idx = find(ms, NULL, 1);
    assert_int_equal(idx.n_nodes, 1);
    assert_false(idx.pool_only); /* no groups at all */
    assert_null(idx.key);
    wh_memstate_free(ms);
}

static void test_subslice_many_nodes(void **unused)
{
    (void)unused;
    /* beyond the scan's first growth: 200 nodes, blocks of 50 */
    struct wh_memstate *ms = wh_memstate_new();
    char errbuf[WH_ERRBUF_LEN];
    for (int i = 0; i < 200; i++) {
        char node[512];
        snprintf(node, sizeof(node),
                 "{\"metadata\":{\"name\":\"n%d\",\"labels\":{\"cloud.google.com/gke-tpu-accelerator\":"
                 "\"tpu7x\",\"" BLOCK "\":\"b%d\",\"" HOST "\":\"h%d\"}}}",
                 i, i / 50, i);
        cJSON *j = wh_test_parse(node);
        assert_int_equal(wh_memstate_add_nodes(ms, j, NULL, errbuf), WH_OK);
        cJSON_Delete(j);
    }
    struct wh_subslice_index idx = find(ms, NULL, 50);
    assert_int_equal(idx.n_nodes, 200);
    assert_string_equal(idx.key, BLOCK);
    assert_false(idx.pool_only);
    wh_memstate_free(ms);
}

/* A state that counts its node walks. */
struct counting {
    struct wh_state inner;
    int walks;
};

static enum wh_err counting_each_node(const void *impl, wh_node_visit_fn fn, void *arg, char *errbuf)
{
    struct counting *c = (struct counting *)impl;
    c->walks++;
    return c->inner.ops->each_node(c->inner.impl, fn, arg, errbuf);
}

static enum wh_err counting_each_node_with(const void *impl, const char *const *pairs,
                                           size_t n_pairs, wh_node_visit_fn fn, void *arg,
                                           char *errbuf)
{
    struct counting *c = (struct counting *)impl;
    c->walks++;
    return c->inner.ops->each_node_with(c->inner.impl, pairs, n_pairs, fn, arg, errbuf);
}

static void test_subslice_memo_one_walk_per_selector(void **unused)
{
    (void)unused;
    struct wh_memstate *ms = nodes_state(cluster_nodes);
    struct counting c = {.inner = wh_memstate_view(ms)};
    struct wh_state_ops ops = *c.inner.ops;
    ops.each_node = counting_each_node;
    ops.each_node_with = counting_each_node_with;
    struct wh_state st = {.ops = &ops, .impl = &c};
    cJSON *a = wh_test_parse(SEL7X);
    cJSON *b = wh_test_parse("{\"cloud.google.com/gke-tpu-topology\":\"4x4x4\","
                             "\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\"}");
    cJSON *v6e = wh_test_parse("{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\"}");
    struct wh_subslice_memo m;
    wh_subslice_memo_init(&m);
    struct wh_subslice_index idx;
    char errbuf[WH_ERRBUF_LEN];
    for (int round = 0; round < 100; round++) {
        /* the same pairs in another order are the same question */
        assert_int_equal(wh_subslice_find_memo(&m, &st, round % 2 ? a : b, 2, &idx, errbuf), WH_OK);
        assert_int_equal(idx.n_nodes, 8);
        assert_string_equal(idx.key, SUBBLOCK);
        assert_int_equal(wh_subslice_find_memo(&m, &st, a, 4, &idx, errbuf), WH_OK);
        assert_string_equal(idx.key, BLOCK);
        assert_int_equal(wh_subslice_find_memo(&m, &st, v6e, 2, &idx, errbuf), WH_OK);
        assert_int_equal(idx.n_nodes, 2);
        assert_string_equal(idx.key, SUBBLOCK);
        assert_int_equal(wh_subslice_find_memo(&m, &st, NULL, 8, &idx, errbuf), WH_OK);
        assert_int_equal(idx.n_nodes, 10);
        assert_string_equal(idx.key, POOL);
    }
    /* (a, 2), (a, 4), (v6e, 2), (none, 8): four walks for 400 questions */
    assert_int_equal(c.walks, 4);
    /* the answers are those of a walk per question */
    struct wh_subslice_index one;
    assert_int_equal(wh_subslice_find(&c.inner, a, 4, &one, errbuf), WH_OK);
    assert_int_equal(wh_subslice_find_memo(&m, &st, a, 4, &idx, errbuf), WH_OK);
    assert_int_equal(one.n_nodes, idx.n_nodes);
    assert_ptr_equal(one.key, idx.key);
    assert_int_equal(one.pool_only, idx.pool_only);
    wh_subslice_memo_free(&m);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(v6e);
    wh_memstate_free(ms);
}

/* The answers looked up in the state's index of nodes by label are those
 * of a walk over every node, on random nodes and selectors (values drawn
 * from small sets, so that groups of every size occur). */
static cJSON *random_nodes(uint64_t *x, int n)
{
    static const char *const lv[][2] = {{"cloud.google.com/gke-tpu-accelerator", "v"},
                                        {POOL, "p"},
                                        {BLOCK, "b"},
                                        {SUBBLOCK, "s"},
                                        {HOST, "h"},
                                        {"example.com/rack", "r"}};
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON *labels = cJSON_CreateObject();
        for (size_t l = 0; l < sizeof(lv) / sizeof(lv[0]); l++) {
            *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
            unsigned r = (unsigned)(*x >> 33);
            if (l && r % 5 == 0)
                continue; /* now and then a label missing (never the accelerator) */
            char v[16];
            snprintf(v, sizeof(v), "%s%u", lv[l][1], (r >> 3) % (l == 4 ? 12u : 3u));
            cJSON_AddStringToObject(labels, lv[l][0], v);
        }
        cJSON *node = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(node, "metadata");
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        cJSON_AddStringToObject(meta, "name", name);
        cJSON_AddItemToObject(meta, "labels", labels);
        cJSON_AddItemToArray(arr, node);
    }
    return arr;
}

static void test_subslice_index_is_the_walk(void **unused)
{
    (void)unused;
    uint64_t x = 42;
    int keyed = 0;
    static const char *const sel_keys[] = {"cloud.google.com/gke-tpu-accelerator", POOL, BLOCK,
                                           "example.com/rack"};
    for (int round = 0; round < 40; round++) {
        struct wh_memstate *ms = wh_memstate_new();
        cJSON *arr = random_nodes(&x, 20 + round * 5);
        char errbuf[WH_ERRBUF_LEN];
        assert_int_equal(wh_memstate_add_nodes(ms, arr, NULL, errbuf), WH_OK);
        cJSON_Delete(arr);
        struct wh_state indexed = wh_memstate_view(ms);
        assert_non_null(indexed.ops->each_node_with);
        struct wh_state_ops walk_ops = *indexed.ops;
        walk_ops.each_node_with = NULL;
        struct wh_state walked = {.ops = &walk_ops, .impl = indexed.impl};
        for (int q = 0; q < 50; q++) {
            cJSON *sel = cJSON_CreateObject();
            for (size_t k = 0; k < sizeof(sel_keys) / sizeof(sel_keys[0]); k++) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                unsigned r = (unsigned)(x >> 33);
                char v[16];
                snprintf(v, sizeof(v), "%c%u", "vpbr"[k], (r >> 2) % 3);
                if (r % 3 == 0)
                    cJSON_AddStringToObject(sel, sel_keys[k], v);
            }
            long hosts = 1 + (long)(x >> 40) % 8;
            struct wh_subslice_index a, b;
            assert_int_equal(wh_subslice_find(&indexed, sel, hosts, &a, errbuf), WH_OK);
            assert_int_equal(wh_subslice_find(&walked, sel, hosts, &b, errbuf), WH_OK);
            assert_int_equal(a.n_nodes, b.n_nodes);
            assert_ptr_equal(a.key, b.key);
            assert_int_equal(a.pool_only, b.pool_only);
            keyed += a.key != NULL;
            cJSON_Delete(sel);
        }
        wh_memstate_free(ms);
    }
    assert_true(keyed > 100); /* the inputs make answers with a key, not only "none" */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topology_key),
        cmocka_unit_test(test_merge_empty),
        cmocka_unit_test(test_merge_keeps_user_terms_first),
        cmocka_unit_test(test_merge_partial),
        cmocka_unit_test(test_merge_legacy_selector),
        cmocka_unit_test(test_write_fresh_is_the_merge),
        cmocka_unit_test(test_subslice_levels),
        cmocka_unit_test(test_subslice_pool_only),
        cmocka_unit_test(test_subslice_many_nodes),
        cmocka_unit_test(test_subslice_memo_one_walk_per_selector),
        cmocka_unit_test(test_subslice_index_is_the_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
