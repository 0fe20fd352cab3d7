/* bench_validate.c: CPU time of RayCluster validation on large inputs.
 *
 *   wh-bench-validate [RUNS]
 *
 * Two reviews built here (no files), each validated RUNS times (default 5)
 * in a request arena as the server does, printing the median CPU time of
 * one review (CLOCK_PROCESS_CPUTIME_ID), the sizes and the warnings:
 *
 *  - a ~4 MB RayCluster of 8,000 single-host tpu7x worker groups with two
 *    warnings each (MEGASCALE_NUM_SLICES=2 on one host, 2 replicas; TPU=2x chips without
 *    RAY_TPU_RESOURCE_PER_CHIP), 16,000 in all (issue 22: 3.4 s of CPU before; target < 100 ms);
 *  - 1,000 TPU nodes (tpu7x, 4x4x4 pools of 16 hosts: blocks, subblocks,
 *    20 other labels each) and a RayCluster of 400 subslice groups
 *    (annotations 2x2x4 and 4x4x4 in the pool's 4x4x4: a subblock of 4
 *    hosts, a block of 16), once with the
 *    same nodeSelector in every group (a real cluster's shape) and once
 *    with a different gke-nodepool in each (400 distinct selectors, the
 *    worst case: one walk over the nodes each). Target < 200 ms.
 *  - scaling: n = 2,500 nodes and n/5 = 500 groups with a selector each
 *    of its own (node pool and subblock: 4 nodes), then 4n = 10,000 nodes
 *    and 2,000 groups, once with the nodes walked per selector (before the
 *    index of nodes by label, issue 22) and once looked up in it; printed
 *    with the ratio of 4n to n (16 for a cost of nodes x selectors, 4 for a
 *    linear one), which load on the machine disturbs less than the times.
 *
 * A benchmark, not a test: it prints figures and fails only when a review
 * does not get the expected answer.
 */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* qsort, free, atoi */
#include <string.h> /* strstr */

#include "wh/arena.h"   /* wh_arena */
#include "wh/buf.h"     /* wh_buf */
#include "wh/engine.h"  /* wh_engine_review */
#include "wh/json.h"    /* wh_json_* */
#include "wh/memtune.h" /* wh_memtune_server */
#include "wh/reqmem.h"  /* wh_reqmem_install, wh_reqmem_bind */
#include "wh/state.h"   /* wh_memstate */

#include "benchutil.h" /* wh_bench_cpu_ms, wh_bench_cmp_double, wh_bench_die */

#define REVIEW_MAX ((size_t)8 << 20)
#define NODES 1000
#define POOL_HOSTS 16
#define SCALE_NODES 2500

static void review_head(struct wh_buf *b)
{
    if (wh_buf_add(b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"request\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
                      "\"kind\":{\"group\":\"ray.io\",\"version\":\"v1\",\"kind\":\"RayCluster\"},"
                      "\"resource\":{\"group\":\"ray.io\",\"version\":\"v1\",\"resource\":"
                      "\"rayclusters\"},\"namespace\":\"default\",\"operation\":\"CREATE\","
                      "\"object\":{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
                      "\"metadata\":{\"name\":\"rc\",\"namespace\":\"default\"},\"spec\":{"
                      "\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":"
                      "{\"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\"}"
                      "]}}},\"workerGroupSpecs\":["))
        wh_bench_die("out of memory");
}

static void review_tail(struct wh_buf *b)
{
    if (wh_buf_add(b, "]}}}}"))
        wh_bench_die("out of memory");
}

/* 8,000 single-host tpu7x groups, two warnings each. */
static char *warnings_review(size_t *len)
{
    struct wh_buf b;
    wh_buf_init(&b, REVIEW_MAX);
    review_head(&b);
    for (int i = 0; i < 8000; i++)
        if (wh_buf_addf(&b,
                        "%s{\"groupName\":\"group-%d\",\"replicas\":2,\"minReplicas\":0,\"maxReplicas\":2,"
                        "\"numOfHosts\":1,\"rayStartParams\":{\"resources\":\"{\\\"TPU\\\": 8}\"},"
                        "\"template\":{\"spec\":{\"nodeSelector\":{"
                        "\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\","
                        "\"cloud.google.com/gke-tpu-topology\":\"2x2x1\"},\"containers\":[{\"name\":"
                        "\"ray-worker\",\"image\":\"rayproject/ray:2.52.0-py310\",\"resources\":{"
                        "\"limits\":{\"cpu\":\"8\",\"memory\":\"40G\",\"google.com/tpu\":\"4\"},"
                        "\"requests\":{\"cpu\":\"8\",\"memory\":\"40G\",\"google.com/tpu\":\"4\"}},"
                        "\"env\":[{\"name\":\"MEGASCALE_NUM_SLICES\",\"value\":\"2\"}]}]}}}",
                        i ? "," : "", i))
            wh_bench_die("out of memory");
    review_tail(&b);
    return wh_buf_take(&b, len);
}

/* 400 subslice groups; distinct: a nodepool of its own in each selector. */
static char *subslice_review(bool distinct, size_t *len)
{
    static const struct {
        const char *topo;
        int hosts;
    } sub[] = {{"2x2x4", 4}, {"4x4x4", 16}};
    struct wh_buf b;
    wh_buf_init(&b, REVIEW_MAX);
    review_head(&b);
    for (int i = 0; i < 400; i++) {
        char pool[80] = "";
        if (distinct)
            snprintf(pool, sizeof(pool), ",\"cloud.google.com/gke-nodepool\":\"pool-%d\"",
                     i % (NODES / POOL_HOSTS));
        int s = i % 2;
        if (wh_buf_addf(
                &b,
                "%s{\"groupName\":\"sub-%d\",\"replicas\":1,\"minReplicas\":0,\"maxReplicas\":1,"
                "\"numOfHosts\":%d,\"rayStartParams\":{},\"template\":{\"metadata\":{"
                "\"annotations\":{\"cloud.google.com/gke-tpu-slice-topology\":\"%s\"}},"
                "\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\","
                "\"cloud.google.com/gke-tpu-topology\":\"4x4x4\"%s},\"containers\":[{\"name\":"
                "\"ray-worker\",\"image\":\"rayproject/ray:2.52.0-py310\",\"resources\":{"
                "\"limits\":{\"cpu\":\"8\",\"memory\":\"40G\",\"google.com/tpu\":\"4\"},"
                "\"requests\":{\"cpu\":\"8\",\"memory\":\"40G\",\"google.com/tpu\":\"4\"}}}]}}}",
                i ? "," : "", i, sub[s].hosts, sub[s].topo, pool))
            wh_bench_die("out of memory");
    }
    review_tail(&b);
    return wh_buf_take(&b, len);
}

/* groups subslice groups of 4 hosts, each with a selector of its own: the
 * node pool and the subblock of its 4 nodes. */
static char *distinct_review(int groups, size_t *len)
{
    struct wh_buf b;
    wh_buf_init(&b, REVIEW_MAX);
    review_head(&b);
    for (int i = 0; i < groups; i++)
        if (wh_buf_addf(
                &b,
                "%s{\"groupName\":\"sub-%d\",\"replicas\":1,\"minReplicas\":0,\"maxReplicas\":1,"
                "\"numOfHosts\":4,\"rayStartParams\":{},\"template\":{\"metadata\":{"
                "\"annotations\":{\"cloud.google.com/gke-tpu-slice-topology\":\"2x2x4\"}},"
                "\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\","
                "\"cloud.google.com/gke-tpu-topology\":\"4x4x4\","
                "\"cloud.google.com/gke-nodepool\":\"pool-%d\","
                "\"cloud.google.com/gce-topology-subblock\":\"sub-%d-%d\"},"
                "\"containers\":[{\"name\":"
                "\"ray-worker\",\"image\":\"rayproject/ray:2.52.0-py310\",\"resources\":{"
                "\"limits\":{\"cpu\":\"8\",\"memory\":\"40G\",\"google.com/tpu\":\"4\"},"
                "\"requests\":{\"cpu\":\"8\",\"memory\":\"40G\",\"google.com/tpu\":\"4\"}}}]}}}",
                i ? "," : "", i, i / 4, i / 4, i % 4))
            wh_bench_die("out of memory");
    review_tail(&b);
    return wh_buf_take(&b, len);
}

/* n_nodes tpu7x nodes in pools of 16 (one block, four subblocks of 4 each). */
static struct wh_memstate *nodes_state(int n_nodes)
{
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_buf b;
    wh_buf_init(&b, (size_t)64 << 20);
    enum wh_err err = ms ? wh_buf_add(&b, "[") : WH_ERR_NOMEM;
    for (int i = 0; !err && i < n_nodes; i++) {
        int pool = i / POOL_HOSTS;
        err = wh_buf_addf(&b,
                          "%s{\"metadata\":{\"name\":\"gke-node-%d\",\"labels\":{"
                          "\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\","
                          "\"cloud.google.com/gke-tpu-topology\":\"4x4x4\","
                          "\"cloud.google.com/gke-nodepool\":\"pool-%d\","
                          "\"cloud.google.com/gce-topology-block\":\"block-%d\","
                          "\"cloud.google.com/gce-topology-subblock\":\"sub-%d-%d\","
                          "\"cloud.google.com/gce-topology-host\":\"host-%d\"",
                          i ? "," : "", i, pool, pool, pool, (i % POOL_HOSTS) / 4, i);
        for (int k = 0; !err && k < 20; k++)
            err = wh_buf_addf(&b, ",\"example.com/label-%d\":\"value-%d\"", k, k);
        if (!err)
            err = wh_buf_add(&b, "}}}");
    }
    if (!err)
        err = wh_buf_add(&b, "]");
    cJSON *j = err ? NULL : cJSON_ParseWithLength(wh_buf_ptr(&b), wh_buf_len(&b));
    size_t added = 0;
    char errbuf[WH_ERRBUF_LEN];
    if (!j || wh_memstate_add_nodes(ms, j, &added, errbuf) || added != (size_t)n_nodes)
        wh_bench_die("cannot build the nodes");
    cJSON_Delete(j);
    wh_buf_free(&b);
    return ms;
}

static size_t count_warnings(const char *body)
{
    size_t n = 0;
    const char *w = body ? strstr(body, "\"warnings\":[") : NULL;
    for (const char *p = w; p && *p && *p != ']'; p++)
        n += *p == '"' && p[-1] != '\\' && p >= w + 12;
    return n / 2;
}

static int run(const char *name, const char *body, size_t len, const struct wh_state *st, int runs,
               double target_ms, struct wh_arena *arena, double *median)
{
    double *t = calloc((size_t)runs, sizeof(double));
    if (!t)
        wh_bench_die("out of memory");
    int rc = 0;
    size_t resp_len = 0, warnings = 0, found = 0;
    for (int i = 0; i < runs && !rc; i++) {
        struct wh_engine_result res = {0};
        char errbuf[WH_ERRBUF_LEN];
        wh_reqmem_bind(arena);
        double t0 = wh_bench_cpu_ms();
        enum wh_err err = wh_engine_review(body, len, WH_ROUTE_VALIDATE, st, &res, errbuf);
        t[i] = wh_bench_cpu_ms() - t0;
        if (err || !res.allowed) {
            fprintf(stderr, "wh-bench-validate: %s: unexpected answer: %s %.300s\n", name,
                    err ? errbuf : "", res.message ? res.message : "");
            rc = 1;
        }
        resp_len = res.body_len;
        warnings = count_warnings(res.body);
        found = res.n_warnings;
        wh_engine_result_free(&res);
        wh_reqmem_bind(NULL);
        wh_arena_reset(arena);
    }
    if (!rc) {
        qsort(t, (size_t)runs, sizeof(double), wh_bench_cmp_double);
        if (median)
            *median = t[runs / 2];
        printf("%-44s %7zu KB %7zu B %6zu %6zu %9.1f %9.1f", name, len / 1024, resp_len, found,
               warnings, t[runs / 2], t[runs - 1]);
        if (target_ms > 0)
            printf("   < %.0f", target_ms);
        printf("\n");
    }
    free(t);
    return rc;
}

/* The distinct-selector review at n and 4n nodes, walked and indexed. */
static int scaling(int runs, struct wh_arena *arena)
{
    static const char *const how[] = {"walk per selector (before)", "index by label (after)"};
    double ms[2][2] = {{0}};
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        int n = k ? 4 * SCALE_NODES : SCALE_NODES;
        struct wh_memstate *ms_nodes = nodes_state(n);
        struct wh_state indexed = wh_memstate_view(ms_nodes);
        struct wh_state_ops walk_ops = *indexed.ops;
        walk_ops.each_node_with = NULL; /* what the engine did before the index */
        struct wh_state walked = {.ops = &walk_ops, .impl = indexed.impl};
        size_t len;
        char *body = distinct_review(n / 5, &len);
        for (int h = 0; h < 2 && !rc; h++) {
            char name[96];
            snprintf(name, sizeof(name), "%d nodes x %d selectors, %s", n, n / 5,
                     h ? "index" : "walk");
            rc = run(name, body, len, h ? &indexed : &walked, runs, 0, arena, &ms[h][k]);
        }
        free(body);
        wh_memstate_free(ms_nodes);
    }
    for (int h = 0; h < 2 && !rc; h++)
        printf("scaling, %-30s n %9.1f ms   4n %9.1f ms   4n/n %5.1f (linear: 4, quadratic: 16)\n",
               how[h], ms[h][0], ms[h][1], ms[h][0] > 0 ? ms[h][1] / ms[h][0] : 0);
    return rc;
}

int main(int argc, char **argv)
{
    wh_memtune_server();
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 1 || runs > 1000) {
        fprintf(stderr, "usage: wh-bench-validate [RUNS (1-1000, default 5)]\n");
        return 2;
    }
    wh_reqmem_install();
    struct wh_arena_opts ao = {.first_chunk = WH_REQMEM_FIRST_CHUNK,
                               .budget = (size_t)256 << 20,
                               .retain = WH_REQMEM_RETAIN};
    struct wh_arena *arena = wh_arena_new(&ao);
    struct wh_memstate *empty = wh_memstate_new(), *nodes = nodes_state(NODES);
    if (!arena || !empty)
        wh_bench_die("out of memory");
    struct wh_state st0 = wh_memstate_view(empty), st1 = wh_memstate_view(nodes);
    printf("wh-bench-validate: CPU ms per review, median and max of %d runs\n", runs);
    printf("%-44s %10s %9s %6s %6s %9s %9s   %s\n", "case", "review", "answer", "found", "listed",
           "cpu ms", "max ms", "target");
    size_t len;
    char *body = warnings_review(&len);
    int rc = run("8,000 groups, 16,000 warnings", body, len, &st0, runs, 100, arena, NULL);
    free(body);
    body = subslice_review(false, &len);
    rc |= run("1,000 nodes x 400 subslice groups", body, len, &st1, runs, 200, arena, NULL);
    free(body);
    body = subslice_review(true, &len);
    rc |= run("1,000 nodes x 400 groups, 62 node pools", body, len, &st1, runs, 200, arena, NULL);
    free(body);
    rc |= scaling(runs, arena);
    wh_memstate_free(empty);
    wh_memstate_free(nodes);
    wh_arena_free(arena);
    return rc;
}
