/* bench_engine.c: time and heap allocations per review of the engine.
 *
 *   wh-bench-engine [RUNS]
 *
 * Reviews pod AdmissionReviews built here (no files): a 1-host v6e pod, a
 * 16-host v6e pod and a 256-host tpu7x pod with two TPU containers of 2 chips
 * (topology 8x8x16, address lists of ~120 KB), all with KubeRay-native index
 * labels so no cluster state is needed, plus the 256-host pod on the legacy
 * path with 255 existing hosts in an in-memory state; and the same 16- and
 * 256-host shapes as Indexed-Job and JobSet pods on the /mutate-workload
 * route, with their cost relative to the KubeRay-native case of the same
 * shape (target: within 20%). Prints the median time
 * per review over RUNS runs (default 51) and the heap allocations of one
 * review. The allocator is counted through the linker's --wrap
 * (bench/CMakeLists.txt) and cJSON_InitHooks, which also works for static
 * binaries. A benchmark, not a test: it prints figures and only fails when a
 * review does not give the expected answer. Target: milliseconds per review.
 */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* qsort, free, atoi */
#include <string.h> /* strstr */

#include "allocwrap.h"  /* wh_allocwrap_* */
#include "wh/memtune.h" /* wh_memtune_server */
#include "wh/reqmem.h"  /* wh_reqmem_install, wh_reqmem_bind */
#include "wh/b64.h"     /* wh_b64_decode */
#include "wh/buf.h"     /* wh_buf */
#include "wh/json.h"    /* wh_json_* */
#include "wh/engine.h"  /* wh_engine_review */
#include "wh/state.h"   /* wh_memstate */

#include "benchutil.h" /* wh_bench_now_s, wh_bench_cmp_double, wh_bench_die */

#define REVIEW_MAX ((size_t)1 << 20)
#define GROUP "tpu-group"
#define CLUSTER "raycluster-bench-0123456789"

struct pod_shape {
    const char *accel;
    const char *topology;
    int containers; /* TPU containers */
    int chips;      /* per container */
    bool native;    /* ray.io/worker-group-replica-index + replica-host-index */
    long host;      /* host index label (native), completion index (workload) */
    enum { KUBERAY, INDEXED_JOB, JOBSET } kind;
};

#define JOB "train-bench-0123456789"

static enum wh_err add_container(struct wh_buf *b, int i, int chips)
{
    return wh_buf_addf(
        b,
        "%s{\"name\":\"ray-worker-%d\",\"image\":\"rayproject/ray:2.52.0-py310\","
        "\"resources\":{\"limits\":{\"cpu\":\"24\",\"google.com/tpu\":\"%d\","
        "\"memory\":\"200G\"},\"requests\":{\"cpu\":\"24\",\"google.com/tpu\":\"%d\","
        "\"memory\":\"200G\"}},\"env\":[{\"name\":\"JAX_PLATFORMS\",\"value\":\"tpu,cpu\"},"
        "{\"name\":\"NODE_IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}}]}",
        i ? "," : "", i, chips, chips);
}

/* An Indexed-Job or JobSet pod as the Job controller creates it. */
static enum wh_err workload_head(struct wh_buf *b, const struct pod_shape *s)
{
    const char *jobset = s->kind == JOBSET ? "\"jobset.sigs.k8s.io/jobset-name\":\"" JOB "\","
                                             "\"jobset.sigs.k8s.io/replicatedjob-name\":\"slice\","
                                             "\"jobset.sigs.k8s.io/replicatedjob-replicas\":\"2\","
                                             "\"jobset.sigs.k8s.io/job-index\":\"1\","
                                           : "";
    const char *job = s->kind == JOBSET ? JOB "-slice-1" : JOB;
    return wh_buf_addf(
        b,
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"bench-uid\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
        "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
        "\"namespace\":\"default\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\","
        "\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"%s-%ld-\",\"namespace\":\"default\","
        "\"annotations\":{%s\"batch.kubernetes.io/job-completion-index\":\"%ld\"},"
        "\"labels\":{%s\"batch.kubernetes.io/job-name\":\"%s\",\"job-name\":\"%s\","
        "\"batch.kubernetes.io/job-completion-index\":\"%ld\",\"tpu-webhook/inject\":\"enabled\""
        "}},\"spec\":{\"hostname\":\"%s-%ld\",\"subdomain\":\"" JOB "\",\"containers\":[",
        job, s->host, jobset, s->host, jobset, job, job, s->host, job, s->host);
}

/* A pod AdmissionReview as KubeRay (or a Job controller) sends it; malloc'd. */
static char *pod_review(const struct pod_shape *s, size_t *len)
{
    struct wh_buf b;
    wh_buf_init(&b, REVIEW_MAX);
    enum wh_err err =
        s->kind != KUBERAY
            ? workload_head(&b, s)
            : wh_buf_addf(
                  &b,
                  "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
                  "\"uid\":\"bench-uid\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
                  "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
                  "\"namespace\":\"default\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\","
                  "\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"" CLUSTER "-" GROUP "-worker-\","
                  "\"namespace\":\"default\",\"labels\":{\"ray.io/cluster\":\"" CLUSTER "\","
                  "\"ray.io/group\":\"" GROUP "\",\"ray.io/node-type\":\"worker\","
                  "\"app.kubernetes.io/created-by\":\"kuberay-operator\",\"ray.io/is-ray-node\":\"yes\"");
    if (!err && s->native && s->kind == KUBERAY)
        err = wh_buf_addf(&b,
                          ",\"ray.io/worker-group-replica-index\":\"0\","
                          "\"ray.io/replica-host-index\":\"%ld\","
                          "\"ray.io/worker-group-replica-name\":\"" CLUSTER "-" GROUP "-abcde\"",
                          s->host);
    if (!err && s->kind == KUBERAY)
        err = wh_buf_add(&b, "}},\"spec\":{\"containers\":[");
    for (int i = 0; i < s->containers && !err; i++)
        err = add_container(&b, i, s->chips);
    if (!err)
        err = wh_buf_addf(&b,
                          "],\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"%s\","
                          "\"cloud.google.com/gke-tpu-topology\":\"%s\"}}}}}",
                          s->accel, s->topology);
    if (err) {
        fprintf(stderr, "bench: cannot build a review: %s\n", wh_strerror(err));
        exit(1);
    }
    return wh_buf_take(&b, len);
}

/* n existing hosts 0..n-1 of replica 0, each with two TPU containers. */
static struct wh_memstate *legacy_state(long n, int containers)
{
    struct wh_memstate *ms = wh_memstate_new();
    for (long h = 0; ms && h < n; h++) {
        char name[96];
        snprintf(name, sizeof(name), CLUSTER "-" GROUP "-worker-%ld", h);
        struct wh_pod_rec rec = {
            .name = name,
            .ns = "default",
            .cluster = CLUSTER,
            .group = GROUP,
            .replica_label = GROUP "-0",
            .n_tpu_containers = (unsigned)containers,
            .worker_id = h * containers,
        };
        if (wh_memstate_add_rec(ms, &rec)) {
            wh_memstate_free(ms);
            ms = NULL;
        }
    }
    if (!ms) {
        wh_bench_die("out of memory");
    }
    return ms;
}

/* Longest string value in the response's patch (the address lists), in
 * bytes; 0 when there is no patch. Not timed. */
static size_t longest_value(const char *body)
{
    cJSON *r = cJSON_Parse(body);
    const char *b64 = wh_json_str(wh_json_get(r, "response"), "patch");
    size_t best = 0;
    struct wh_buf b;
    wh_buf_init(&b, (size_t)1 << 28);
    if (b64 && !wh_b64_decode(&b, b64, strlen(b64))) {
        cJSON *patch = cJSON_Parse(wh_buf_ptr(&b));
        for (const cJSON *op = patch ? patch->child : NULL; op; op = op->next) {
            const cJSON *v = wh_json_get(op, "value");
            const cJSON *arr = cJSON_IsArray(v) ? v->child : v; /* env creation: [entry] */
            const char *s = wh_json_str(arr, "value");
            if (s && strlen(s) > best)
                best = strlen(s);
        }
        cJSON_Delete(patch);
    }
    wh_buf_free(&b);
    cJSON_Delete(r);
    return best;
}

struct bench_case {
    const char *name;
    struct pod_shape shape;
    long existing; /* legacy: hosts already in the state */
    long want_host;
};

/* One case, with the review's memory from the C library's heap (arena
 * NULL) or from an arena bound to the thread and reset after each review,
 * as the server runs it (reqmem.h). The allocations printed are the first
 * review's: a fresh arena's growth (later reviews reuse the kept chunks).
 * Returns the median ms per review, or -1 when the answer was wrong. */
static double run_case(const struct bench_case *bc, int runs, struct wh_arena *arena)
{
    size_t len;
    char *body = pod_review(&bc->shape, &len);
    struct wh_memstate *ms = bc->existing ? legacy_state(bc->existing, bc->shape.containers)
                                          : wh_memstate_new();
    struct wh_state st = wh_memstate_view(ms);
    double *t = calloc((size_t)runs, sizeof(double));
    struct wh_alloc_stats one = {0};
    struct wh_engine_result res = {0};
    int rc = 0;
    double median = -1;
    enum wh_route route = bc->shape.kind == KUBERAY ? WH_ROUTE_MUTATE : WH_ROUTE_MUTATE_WORKLOAD;
    if (!ms || !t) {
        wh_bench_die("out of memory");
    }
    for (int i = 0; i < runs && !rc; i++) {
        char errbuf[WH_ERRBUF_LEN];
        wh_allocwrap_reset();
        double t0 = wh_bench_now_s();
        wh_reqmem_bind(arena);
        enum wh_err err = wh_engine_review(body, len, route, &st, &res, errbuf);
        wh_reqmem_bind(NULL);
        t[i] = (wh_bench_now_s() - t0) * 1e6;
        if (i == 0)
            one = wh_allocwrap_stats();
        if (err || !res.allowed || !res.n_ops || (bc->existing && res.host != bc->want_host) ||
            (!bc->existing && res.assigned)) {
            fprintf(stderr, "bench: %s: unexpected answer: %s %s\n", bc->name,
                    err ? wh_strerror(err) : "", err ? errbuf : res.body);
            rc = 1;
        }
        if (i == runs - 1 || rc) {
            qsort(t, (size_t)i + 1, sizeof(double), wh_bench_cmp_double);
            median = rc ? -1 : t[i / 2] / 1000.0;
            printf("%-28s %-6s %6zu KB %7zu KB %8zu KB %5zu %10.3f %9lu %9lu %8zu KB\n", bc->name,
                   arena ? "arena" : "malloc", len / 1024, res.body_len / 1024,
                   res.body ? longest_value(res.body) / 1024 : 0, res.n_ops, t[i / 2] / 1000.0,
                   one.allocs, one.reallocs, arena ? wh_arena_peak(arena) / 1024 : 0);
        }
        wh_reqmem_bind(arena);
        wh_engine_result_free(&res);
        wh_reqmem_bind(NULL);
        if (arena)
            wh_arena_reset(arena);
    }
    free(t);
    wh_memstate_free(ms);
    free(body);
    return median;
}

int main(int argc, char **argv)
{
    wh_memtune_server(); /* as `serve` runs */
    int runs = argc > 1 ? atoi(argv[1]) : 51;
    if (runs < 1 || runs > 10000) {
        fprintf(stderr, "usage: wh-bench-engine [RUNS (1-10000, default 51)]\n");
        return 2;
    }
    wh_allocwrap_install();
    wh_reqmem_install(); /* the server's hooks: malloc (counted) with no arena bound */
    /* The server's request arena (its default budget), with chunks from
     * malloc so that they are counted (the server maps chunks of 256 KiB
     * and more); one per case, so that its peak is the case's. */
    struct wh_arena_opts ao = {.first_chunk = WH_REQMEM_FIRST_CHUNK,
                               .budget = WH_REQMEM_REQUEST_DEFAULT,
                               .retain = WH_REQMEM_RETAIN};
    static const struct bench_case cases[] = {
        {"1 host v6e 2x4", {"tpu-v6e-slice", "2x4", 1, 8, true, 0, KUBERAY}, 0, 0},
        {"16 hosts v6e 8x8", {"tpu-v6e-slice", "8x8", 1, 4, true, 7, KUBERAY}, 0, 0},
        {"256 hosts tpu7x 8x8x16 2x2", {"tpu7x", "8x8x16", 2, 2, true, 255, KUBERAY}, 0, 0},
        {"256 hosts legacy (255 pods)", {"tpu7x", "8x8x16", 2, 2, false, 0, KUBERAY}, 255, 255},
        {"16 hosts v6e Indexed Job", {"tpu-v6e-slice", "8x8", 1, 4, false, 7, INDEXED_JOB}, 0, 0},
        {"256 hosts tpu7x JobSet", {"tpu7x", "8x8x16", 2, 2, false, 255, JOBSET}, 0, 0},
    };
    /* Workload case -> the KubeRay-native case of the same shape. */
    static const size_t peer[][2] = {{4, 1}, {5, 2}};
    double ms[sizeof(cases) / sizeof(cases[0])];
    printf("wh-bench-engine: median of %d runs per case\n", runs);
    printf("%-28s %-6s %9s %10s %11s %5s %10s %9s %9s %11s\n", "case", "memory", "review",
           "response", "longest env", "ops", "ms/review", "allocs", "reallocs", "arena peak");
    int rc = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct wh_arena *arena = wh_arena_new(&ao);
        if (!arena) {
            fprintf(stderr, "bench: out of memory\n");
            return 1;
        }
        rc |= run_case(&cases[i], runs, NULL) < 0;
        ms[i] = run_case(&cases[i], runs, arena); /* as the server runs */
        rc |= ms[i] < 0;
        wh_arena_free(arena);
    }
    for (size_t i = 0; !rc && i < sizeof(peer) / sizeof(peer[0]); i++)
        printf("%s / %s (arena): %.2f (target <= 1.20)\n", cases[peer[i][0]].name,
               cases[peer[i][1]].name, ms[peer[i][0]] / ms[peer[i][1]]);
    return rc;
}
