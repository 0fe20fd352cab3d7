/* bench_scaling.c: paths whose cost could grow faster than their input
 * (issue 22, item 4), each timed at a size n and at 4n in the same run.
 *
 *   wh-bench-scaling [RUNS]
 *
 * Each case prints the median CPU time (CLOCK_PROCESS_CPUTIME_ID) of RUNS
 * runs (default 3) at n and at 4n and their ratio: about 4 for a cost
 * linear in n, 16 for a quadratic one. The ratio is the figure to read on
 * a loaded machine: load slows both sizes alike. Each run is a child
 * process of its own (a fresh heap: glibc's bins, left fragmented by the
 * runs before, made one case look quadratic when it was not).
 *
 *  - node cache: a LIST of n TPU nodes applied to the store (the node
 *    watch's work, store.h), then a relist of the same n (every node
 *    updated) and the sweep. Each apply finds the node by name.
 *  - check: `tpu-webhook check` (wh_check_text) of a RayCluster of n worker
 *    groups, each with a problem and a warning: one row per group, its
 *    message and warnings taken from the validation's findings.
 *  - check --strict: the same with an unknown field in each group, so the
 *    strict walk (strict.h) visits every value and finds n unknown fields
 *    (WH_STRICT_MAX_FINDINGS listed, then one "and N more").
 *  - doctor: n TPU nodes and n/4 pending TPU pods, each with a nodeSelector
 *    of its own (node pool and subblock), judged by doctor's rules
 *    (wh_doctor_run: is some node able to take each pod?).
 *  - render state: n worker pods in groups of 8 added to the in-memory
 *    state (wh_memstate, what render and the CLI use) and, after each, its
 *    group's pods visited, as the next pod's mutation does.
 *  - validate-workload: n TPU nodes (pools of 16) and a JobSet of n/4
 *    replicated jobs whose templates name only their node pool
 *    (/validate-workload reads each pool's accelerator and topology from
 *    its nodes, issue 35 item 3), timed twice: with the pools looked up
 *    in the index of nodes by label (after), and with the state's index
 *    taken away so that each lookup walks the nodes (before: ~16).
 *
 * A benchmark, not a test: it prints figures and fails only when a case
 * does not get the expected answer.
 */
#include <stdbool.h> /* bool */
#include <stdio.h>   /* printf, snprintf */
#include <stdlib.h>  /* qsort, free, atoi */
#include <string.h>  /* strstr */

#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, pipe */

#include <cjson/cJSON.h>

#include "wh/buf.h"               /* wh_buf_* */
#include "wh/check.h"             /* wh_check_text_opts */
#include "wh/decision.h"          /* wh_decision_* */
#include "wh/doctor.h"            /* wh_doctor_run */
#include "wh/json.h"              /* wh_json_* */
#include "wh/review.h"            /* wh_review_of_request */
#include "wh/state.h"             /* wh_memstate_* */
#include "wh/strict.h"            /* WH_STRICT_MAX_FINDINGS */
#include "wh/workload_validate.h" /* wh_validate_workload */
#include "store.h"                /* wh_store_* (the kube room's, private) */

#include "benchutil.h" /* wh_bench_cpu_ms, wh_bench_cmp_double, wh_bench_die */

/* ---- node cache ---------------------------------------------------------- */

static cJSON *node_list(int n)
{
    struct wh_buf b;
    wh_buf_init(&b, (size_t)256 << 20);
    enum wh_err err = wh_buf_add(&b, "[");
    for (int i = 0; !err && i < n; i++) {
        err = wh_buf_addf(&b,
                          "%s{\"metadata\":{\"name\":\"gke-tpu-node-%d\",\"labels\":{"
                          "\"" WH_STORE_NODE_LABEL "\":\"tpu7x\","
                          "\"cloud.google.com/gke-tpu-topology\":\"4x4x4\","
                          "\"cloud.google.com/gke-nodepool\":\"pool-%d\","
                          "\"cloud.google.com/gce-topology-subblock\":\"sub-%d\","
                          "\"kubernetes.io/hostname\":\"gke-tpu-node-%d\"",
                          i ? "," : "", i, i / 16, i / 4, i);
        for (int k = 0; !err && k < 20; k++)
            err = wh_buf_addf(&b, ",\"example.com/label-%d\":\"value-%d\"", k, k);
        if (!err)
            err = wh_buf_add(&b, "}}}");
    }
    if (!err)
        err = wh_buf_add(&b, "]");
    cJSON *j = err ? NULL : cJSON_ParseWithLength(wh_buf_ptr(&b), wh_buf_len(&b));
    wh_buf_free(&b);
    if (!j)
        wh_bench_die("cannot build the nodes");
    return j;
}

static double node_cache(int n)
{
    cJSON *list = node_list(n);
    struct wh_store *s = wh_store_new();
    if (!s)
        wh_bench_die("out of memory");
    double t0 = wh_bench_cpu_ms();
    for (uint32_t gen = 1; gen <= 2; gen++) {
        for (const cJSON *o = list->child; o; o = o->next)
            if (wh_store_apply_node(s, o, false, gen))
                wh_bench_die("out of memory");
        wh_store_sweep_nodes(s, gen);
    }
    double t = wh_bench_cpu_ms() - t0;
    size_t pods, nodes, interned;
    wh_store_counts(s, &pods, &nodes, &interned);
    if (nodes != (size_t)n)
        wh_bench_die("the store does not hold every node");
    wh_store_free(s);
    cJSON_Delete(list);
    return t;
}

/* ---- check --------------------------------------------------------------- */

/* n single-host tpu7x groups: numOfHosts 2 where the topology has 1 host (a
 * problem) and MEGASCALE_NUM_SLICES on it (a warning); extra is put into
 * each group (JSON members with a trailing comma, or ""). */
static char *check_text(int n, const char *extra, size_t *len)
{
    struct wh_buf b;
    wh_buf_init(&b, (size_t)64 << 20);
    enum wh_err err =
        wh_buf_add(&b, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{"
                       "\"name\":\"rc\",\"namespace\":\"default\"},\"spec\":{\"headGroupSpec\":{"
                       "\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{\"name\":"
                       "\"ray-head\",\"image\":\"rayproject/ray:2.52.0\"}]}}},"
                       "\"workerGroupSpecs\":[");
    for (int i = 0; !err && i < n; i++)
        err = wh_buf_addf(
            &b,
            "%s{%s\"groupName\":\"group-%d\",\"replicas\":2,\"minReplicas\":0,\"maxReplicas\":2,"
            "\"numOfHosts\":2,\"rayStartParams\":{},\"template\":{\"spec\":{\"nodeSelector\":{"
            "\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\","
            "\"cloud.google.com/gke-tpu-topology\":\"2x2x1\"},\"containers\":[{\"name\":"
            "\"ray-worker\",\"image\":\"rayproject/ray:2.52.0-py310\",\"resources\":{"
            "\"limits\":{\"google.com/tpu\":\"4\"},\"requests\":{\"google.com/tpu\":\"4\"}},"
            "\"env\":[{\"name\":\"MEGASCALE_NUM_SLICES\",\"value\":\"2\"}]}]}}}",
            i ? "," : "", extra, i);
    if (!err)
        err = wh_buf_add(&b, "]}}\n");
    if (err)
        wh_bench_die("out of memory");
    return wh_buf_take(&b, len);
}

static double check_with(int n, bool strict)
{
    size_t len;
    char *text = check_text(n, strict ? "\"numOfHost\":2," : "", &len);
    cJSON *rows = cJSON_CreateArray();
    struct wh_check_stats st = {0};
    struct wh_check_opts opts = {.strict = strict};
    char errbuf[WH_ERRBUF_LEN];
    double t0 = wh_bench_cpu_ms();
    if (!rows || wh_check_text_opts("bench.yaml", text, len, &opts, rows, &st, errbuf))
        wh_bench_die("check failed");
    double t = wh_bench_cpu_ms() - t0;
    if (st.rejected != (size_t)n || st.strict != (strict ? WH_STRICT_MAX_FINDINGS + 1 : 0) ||
        st.rows != st.rejected + st.strict)
        wh_bench_die("check: not one rejected row per group (and the strict rows)");
    cJSON_Delete(rows);
    free(text);
    return t;
}

static double check(int n)
{
    return check_with(n, false);
}

static double check_strict(int n)
{
    return check_with(n, true);
}

/* ---- doctor -------------------------------------------------------------- */

static cJSON *pending_pods(int n)
{
    struct wh_buf b;
    wh_buf_init(&b, (size_t)64 << 20);
    enum wh_err err = wh_buf_add(&b, "[");
    for (int i = 0; !err && i < n; i++)
        err = wh_buf_addf(&b,
                          "%s{\"metadata\":{\"name\":\"tpu-pod-%d\",\"namespace\":\"default\"},"
                          "\"spec\":{\"nodeSelector\":{"
                          "\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\","
                          "\"cloud.google.com/gke-tpu-topology\":\"4x4x4\","
                          "\"cloud.google.com/gke-nodepool\":\"pool-%d\","
                          "\"cloud.google.com/gce-topology-subblock\":\"sub-%d\"},"
                          "\"containers\":[{\"name\":\"w\",\"resources\":{\"limits\":{"
                          "\"google.com/tpu\":\"4\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
                          i ? "," : "", i, i / 4, i);
    if (!err)
        err = wh_buf_add(&b, "]");
    cJSON *j = err ? NULL : cJSON_ParseWithLength(wh_buf_ptr(&b), wh_buf_len(&b));
    wh_buf_free(&b);
    if (!j)
        wh_bench_die("cannot build the pods");
    return j;
}

static double doctor(int n)
{
    cJSON *nodes = node_list(n), *pods = pending_pods(n / 4), *report = NULL;
    struct wh_doctor_input in = {.pods = pods, .nodes = nodes, .no_drift = true};
    char errbuf[WH_ERRBUF_LEN];
    double t0 = wh_bench_cpu_ms();
    if (wh_doctor_run(&in, &report, errbuf))
        wh_bench_die(errbuf);
    double t = wh_bench_cpu_ms() - t0;
    char *text = cJSON_PrintUnformatted(report);
    if (!text || strstr(text, "unschedulable"))
        wh_bench_die("doctor: a pod that a node can take was found unschedulable");
    free(text);
    cJSON_Delete(report);
    cJSON_Delete(pods);
    cJSON_Delete(nodes);
    return t;
}

/* ---- render state -------------------------------------------------------- */

static int count_pod(void *arg, const struct wh_pod_rec *pod)
{
    (void)pod;
    ++*(size_t *)arg;
    return 0;
}

static double render_state(int n)
{
    struct wh_memstate *ms = wh_memstate_new();
    char name[64], group[64];
    double t = 0;
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "rc-tpu-%d-worker-%d", i / 8, i % 8);
        snprintf(group, sizeof(group), "tpu-%d", i / 8);
        struct wh_pod_rec r = {.name = name,
                               .ns = "default",
                               .cluster = "rc",
                               .group = group,
                               .n_tpu_containers = 1,
                               .worker_id = i % 8};
        double t0 = wh_bench_cpu_ms();
        if (!ms || wh_memstate_add_rec(ms, &r))
            wh_bench_die("out of memory");
        struct wh_state st = wh_memstate_view(ms);
        size_t seen = 0;
        char errbuf[WH_ERRBUF_LEN];
        if (st.ops->each_group_pod(st.impl, "default", "rc", group, count_pod, &seen, errbuf) ||
            seen != (size_t)(i % 8) + 1)
            wh_bench_die("render state: the group's pods not all seen");
        t += wh_bench_cpu_ms() - t0;
    }
    wh_memstate_free(ms);
    return t;
}

/* ---- validate-workload --------------------------------------------------- */

/* A JobSet request of n_rj replicated jobs, each a 16-host slice whose
 * template names only its node pool (the last pools first, so that a walk
 * goes far). */
static cJSON *pool_jobset(int n_rj, int n_pools)
{
    struct wh_buf b;
    wh_buf_init(&b, (size_t)256 << 20);
    enum wh_err err =
        wh_buf_add(&b,
                   "{\"uid\":\"u\",\"kind\":{\"group\":\"jobset.x-k8s.io\",\"version\":\"v1alpha2\","
                   "\"kind\":\"JobSet\"},\"namespace\":\"default\",\"operation\":\"CREATE\","
                   "\"object\":{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
                   "\"metadata\":{\"name\":\"js\",\"namespace\":\"default\"},\"spec\":{"
                   "\"replicatedJobs\":[");
    for (int i = 0; !err && i < n_rj; i++)
        err = wh_buf_addf(&b,
                          "%s{\"name\":\"rj-%d\",\"replicas\":1,\"template\":{\"spec\":{"
                          "\"parallelism\":16,\"completions\":16,\"completionMode\":"
                          "\"Indexed\",\"template\":{\"spec\":{\"nodeSelector\":{"
                          "\"cloud.google.com/gke-nodepool\":\"pool-%d\"},\"containers\":[{"
                          "\"name\":\"w\",\"resources\":{\"limits\":{\"google.com/tpu\":"
                          "\"4\"}}}]}}}}}",
                          i ? "," : "", i, n_pools - 1 - i % n_pools);
    if (!err)
        err = wh_buf_add(&b, "]}}}");
    cJSON *j = err ? NULL : cJSON_ParseWithLength(wh_buf_ptr(&b), wh_buf_len(&b));
    wh_buf_free(&b);
    if (!j)
        wh_bench_die("cannot build the JobSet");
    return j;
}

static double workload(int n, bool walk)
{
    cJSON *nodes = node_list(n), *req = pool_jobset(n / 4, n / 16);
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_review *rv = NULL;
    char errbuf[WH_ERRBUF_LEN];
    size_t added = 0;
    if (!ms || wh_memstate_add_nodes(ms, nodes, &added, errbuf) || added != (size_t)n ||
        wh_review_of_request(req, &rv))
        wh_bench_die("validate-workload: cannot build the state or the review");
    struct wh_state st = wh_memstate_view(ms);
    struct wh_state_ops walk_ops = *st.ops;
    walk_ops.each_node_with = NULL; /* what /validate-workload did before */
    if (walk)
        st.ops = &walk_ops;
    struct wh_decision d;
    wh_decision_init(&d);
    double t0 = wh_bench_cpu_ms();
    if (wh_validate_workload(rv, &st, &d, errbuf))
        wh_bench_die(errbuf);
    double t = wh_bench_cpu_ms() - t0;
    if (!d.allowed)
        wh_bench_die("validate-workload: a JobSet that its pools fit was denied");
    wh_decision_free(&d);
    wh_review_free(rv);
    wh_memstate_free(ms);
    cJSON_Delete(req);
    cJSON_Delete(nodes);
    return t;
}

static double workload_index(int n)
{
    return workload(n, false);
}

static double workload_walk(int n)
{
    return workload(n, true);
}

/* ---- driver -------------------------------------------------------------- */

/* One run in a child process of its own: a fresh heap, so that what the
 * runs before left in the allocator's bins does not weigh on this one. */
static double isolated(double (*fn)(int), int n)
{
    int fd[2];
    if (pipe(fd))
        wh_bench_die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        wh_bench_die("fork");
    if (!pid) {
        close(fd[0]);
        double t = fn(n);
        _exit(write(fd[1], &t, sizeof(t)) == (ssize_t)sizeof(t) ? 0 : 1);
    }
    close(fd[1]);
    double t = -1;
    ssize_t got = read(fd[0], &t, sizeof(t));
    close(fd[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) ||
        got != (ssize_t)sizeof(t))
        wh_bench_die("a run failed");
    return t;
}

static double median(double (*fn)(int), int n, int runs)
{
    double t[32];
    for (int i = 0; i < runs; i++)
        t[i] = isolated(fn, n);
    qsort(t, (size_t)runs, sizeof(double), wh_bench_cmp_double);
    return t[runs / 2];
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 3;
    if (runs < 1 || runs > 32) {
        fprintf(stderr, "usage: wh-bench-scaling [RUNS (1-32, default 3)]\n");
        return 2;
    }
    static const struct {
        const char *name;
        double (*fn)(int);
        int n;
    } cases[] = {
        {"node cache: LIST + relist of n nodes", node_cache, 5000},
        {"check: RayCluster of n denied groups", check, 1000},
        {"check --strict: the same, n typos", check_strict, 1000},
        {"doctor: n nodes, n/4 pending selectors", doctor, 4000},
        {"render state: n pods, groups of 8", render_state, 2000},
        {"validate-workload: n nodes, index", workload_index, 4000},
        {"validate-workload: n nodes, walk (before)", workload_walk, 4000},
    };
    printf("wh-bench-scaling: CPU ms, median of %d runs; 4n/n is ~4 when linear, ~16 when "
           "quadratic\n",
           runs);
    printf("%-40s %8s %10s %8s %10s %6s\n", "case", "n", "ms", "4n", "ms", "4n/n");
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double a = median(cases[c].fn, cases[c].n, runs);
        double b = median(cases[c].fn, 4 * cases[c].n, runs);
        printf("%-40s %8d %10.1f %8d %10.1f %6.1f\n", cases[c].name, cases[c].n, a, 4 * cases[c].n,
               b, a > 0 ? b / a : 0);
    }
    return 0;
}
