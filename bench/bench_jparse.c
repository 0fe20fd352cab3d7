/* bench_jparse.c: wh_jparse against cJSON's parser, the same text in the
 * same run.
 *
 *   wh-bench-jparse [RUNS] [FILE...]
 *
 * Parses each text many times with wh_jparse (src/util/jparse.c) and with
 * cJSON_ParseWithLength, each tree freed after it, on the C heap and in an
 * arena as the server parses a review (every block of the request's arena,
 * reset after each parse). Prints the median time per parse over RUNS runs
 * (default 31) of each, MB/s and the ratio cJSON / wh_jparse. The texts: a
 * 16-host native v6e pod AdmissionReview built here, compact as the API
 * server sends it and indented (cJSON_Print), a list of 500 such pods (a
 * LIST answer of the Kubernetes client), and any FILE given. A benchmark, not
 * a test: it only fails when the parsers disagree on whether a text is JSON.
 */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* qsort, atoi, free */
#include <string.h> /* strlen */

#include <cjson/cJSON.h>

#include "arenahooks.h" /* wh_test_arena_install (tests/) */
#include "wh/arena.h"   /* wh_arena_* */
#include "wh/buf.h"     /* wh_buf */
#include "wh/jparse.h"  /* wh_jparse */
#include "wh/mem.h"     /* wh_free */

#include "benchutil.h" /* wh_bench_now_s, wh_bench_cmp_double */

/* One pod as the API server sends it in a review (the shape of
 * tests/fixtures/reviews/v6e-16-native-host1.json). */
static const char pod[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":"
    "\"raycluster-tpu-v6e-multihost-tpu-group-worker-\",\"namespace\":\"default\","
    "\"labels\":{\"app.kubernetes.io/created-by\":\"kuberay-operator\",\"app.kubernetes.io/"
    "name\":\"kuberay\",\"ray.io/cluster\":\"raycluster-tpu-v6e-multihost\",\"ray.io/group\":"
    "\"tpu-group\",\"ray.io/identifier\":\"raycluster-tpu-v6e-multihost-worker\",\"ray.io/"
    "is-ray-node\":\"yes\",\"ray.io/node-type\":\"worker\",\"ray.io/worker-group-replica-index\":"
    "\"0\",\"ray.io/replica-host-index\":\"1\",\"ray.io/worker-group-replica-name\":"
    "\"raycluster-tpu-v6e-multihost-tpu-group-0-abcde\"},\"annotations\":{\"ray.io/"
    "ft-enabled\":\"false\",\"note\":\"caf\\u00e9 \\\"quoted\\\"\\n\"},\"ownerReferences\":[{"
    "\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"name\":"
    "\"raycluster-tpu-v6e-multihost\",\"uid\":\"6a1c3d3e-1f2b-4f7e-9c55-0a1b2c3d4e5f\","
    "\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"containers\":[{\"name\":"
    "\"ray-worker\",\"image\":\"rayproject/ray:2.53.0-py311\",\"command\":[\"/bin/bash\",\"-lc\","
    "\"--\"],\"args\":[\"ulimit -n 65536; ray start --address=raycluster-head-svc:6379 "
    "--block\"],\"ports\":[{\"containerPort\":8081,\"name\":\"tpu\",\"protocol\":\"TCP\"},{"
    "\"containerPort\":8471,\"protocol\":\"TCP\"}],\"resources\":{\"limits\":{\"cpu\":\"24\","
    "\"google.com/tpu\":\"4\",\"memory\":\"200G\"},\"requests\":{\"cpu\":\"24\",\"google.com/"
    "tpu\":\"4\",\"memory\":\"200G\"}},\"env\":[{\"name\":\"RAY_memory_monitor_refresh_ms\","
    "\"value\":\"0\"},{\"name\":\"MY_POD_IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
    "\"status.podIP\"}}}],\"securityContext\":{\"privileged\":false,\"runAsUser\":1000}}],"
    "\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\","
    "\"cloud.google.com/gke-tpu-topology\":\"4x4\"},\"restartPolicy\":\"Never\","
    "\"terminationGracePeriodSeconds\":30,\"priority\":0,\"enableServiceLinks\":true,"
    "\"tolerations\":[{\"key\":\"google.com/tpu\",\"operator\":\"Exists\",\"effect\":"
    "\"NoSchedule\",\"tolerationSeconds\":300.5}],\"dnsPolicy\":null}}";

struct text {
    const char *name;
    const char *ptr;
    size_t len;
};

static struct wh_arena *arena; /* NULL: the C heap */

/* One parse and its release; false when the text is refused. */
static bool parse_once(const struct text *t, bool mine)
{
    cJSON *j = NULL;
    if (mine) {
        size_t at;
        int trailing;
        if (wh_jparse(t->ptr, t->len, &j, &at, &trailing))
            return false;
    } else if (!(j = cJSON_ParseWithLength(t->ptr, t->len))) {
        return false;
    }
    if (arena)
        wh_arena_reset(arena);
    else
        cJSON_Delete(j);
    return true;
}

/* Median seconds per parse over runs batches of about 20 ms. */
static double per_parse(const struct text *t, bool mine, int runs, bool *ok)
{
    int batch = (int)(2e6 / (double)(t->len + 64)) + 1;
    double *v = malloc(sizeof(double) * (size_t)runs);
    if (!v)
        return *ok = false, 0;
    for (int r = 0; r < runs; r++) {
        double t0 = wh_bench_now_s();
        for (int i = 0; i < batch; i++)
            *ok = parse_once(t, mine) && *ok;
        v[r] = (wh_bench_now_s() - t0) / batch;
    }
    qsort(v, (size_t)runs, sizeof(double), wh_bench_cmp_double);
    double m = v[runs / 2];
    free(v);
    return m;
}

static bool bench(const struct text *t, int runs)
{
    bool ok = true;
    for (int in_arena = 0; in_arena < 2; in_arena++) {
        if (in_arena) {
            if (!(arena = wh_arena_new(NULL)))
                return false;
            wh_test_arena_install(arena);
        }
        double mine = per_parse(t, true, runs, &ok), theirs = per_parse(t, false, runs, &ok);
        printf("%-34s %-5s %9zu B  wh_jparse %9.2f us %7.0f MB/s  cJSON %9.2f us %7.0f MB/s  "
               "cJSON/wh_jparse %.1fx\n",
               t->name, in_arena ? "arena" : "heap", t->len, mine * 1e6, t->len / mine / 1e6,
               theirs * 1e6, t->len / theirs / 1e6, theirs / mine);
        if (in_arena) {
            wh_test_arena_install(NULL);
            wh_arena_free(arena);
            arena = NULL;
        }
    }
    return ok;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    struct wh_buf b;
    wh_buf_init(&b, (size_t)1 << 30);
    char chunk[65536];
    size_t n;
    bool ok = f != NULL;
    while (ok && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        ok = !wh_buf_addn(&b, chunk, n);
    if (f)
        fclose(f);
    *len = wh_buf_len(&b);
    if (ok)
        return wh_buf_take(&b, len);
    wh_buf_free(&b);
    return NULL;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 31;
    if (runs < 1)
        runs = 31;
    struct wh_buf review, list;
    wh_buf_init(&review, (size_t)1 << 20);
    wh_buf_init(&list, (size_t)1 << 24);
    bool ok = !wh_buf_addf(&review,
                           "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                           "\"request\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
                           "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
                           "\"namespace\":\"default\",\"operation\":\"CREATE\",\"object\":%s}}",
                           pod) &&
              !wh_buf_add(&list, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[");
    for (int i = 0; ok && i < 500; i++)
        ok = !wh_buf_add(&list, i ? "," : "") && !wh_buf_add(&list, pod);
    ok = ok && !wh_buf_add(&list, "]}");
    cJSON *tree = ok ? cJSON_Parse(wh_buf_ptr(&review)) : NULL;
    char *indented = tree ? cJSON_Print(tree) : NULL;
    cJSON_Delete(tree);
    if (!indented) {
        fprintf(stderr, "wh-bench-jparse: out of memory\n");
        return 1;
    }
    struct text texts[] = {
        {"review (compact, as sent)", wh_buf_ptr(&review), wh_buf_len(&review)},
        {"review (indented)", indented, strlen(indented)},
        {"pod list (500 pods)", wh_buf_ptr(&list), wh_buf_len(&list)},
    };
    for (size_t i = 0; ok && i < sizeof(texts) / sizeof(texts[0]); i++)
        ok = bench(&texts[i], runs);
    for (int i = 2; ok && i < argc; i++) {
        struct text t = {argv[i], NULL, 0};
        char *file = read_file(argv[i], &t.len);
        if (!file) {
            fprintf(stderr, "wh-bench-jparse: cannot read %s\n", argv[i]);
            return 1;
        }
        t.ptr = file;
        ok = bench(&t, runs);
        wh_free(file);
    }
    cJSON_free(indented);
    wh_buf_free(&review);
    wh_buf_free(&list);
    if (!ok)
        fprintf(stderr, "wh-bench-jparse: a text was refused by one of the parsers\n");
    return ok ? 0 : 1;
}
