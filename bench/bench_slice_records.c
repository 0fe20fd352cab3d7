/* bench_slice_records.c: heap bytes per TPU pod the pod store keeps, slice
 * record (slicerec.h) included, for pods as the webhook leaves them (16-host
 * v5p slices: labels of KubeRay 1.6, node name, hostname, subdomain, node
 * selector, TPU_WORKER_ID, TPU_NAME, TPU_WORKER_HOSTNAMES of 16 hosts,
 * MEGASCALE variables), and the time one rebuild of them as JSON for the
 * slice check takes (wh_store_slice_lists). Applies the objects straight to
 * a store (no API server). Prints figures only; asserts nothing. */
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store.h"

#include "benchutil.h" /* wh_bench_now_s, wh_bench_cpu_ms, wh_bench_die */

#define PODS 20000
#define HOSTS 16

static size_t heap(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static cJSON *pod(int i, bool tpu)
{
    int c = i / 1024, r = (i % 1024) / HOSTS, h = i % HOSTS;
    char hosts[HOSTS * 64] = "", text[8192];
    for (int k = 0; k < HOSTS; k++)
        snprintf(hosts + strlen(hosts), sizeof(hosts) - strlen(hosts),
                 "%sc%d-tpu-%d-%d.c%d-headless", k ? "," : "", c, r, k, c);
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"c%d-tpu-worker-%05d\",\"namespace\":\"ns%d\",\"labels\":{"
             "\"ray.io/cluster\":\"c%d\",\"ray.io/group\":\"tpu\",\"ray.io/node-type\":\"worker\","
             "\"ray.io/is-ray-node\":\"yes\",\"app.kubernetes.io/created-by\":\"kuberay-operator\","
             "\"app.kubernetes.io/name\":\"kuberay\",\"ray.io/worker-group-replica-index\":\"%d\","
             "\"ray.io/replica-host-index\":\"%d\",\"ray.io/worker-group-replica-name\":\"c%d-tpu-%d\","
             "\"user-label\":\"x\"}},\"spec\":{\"nodeName\":\"gke-node-%d\",\"hostname\":"
             "\"c%d-tpu-%d-%d\",\"subdomain\":\"c%d-headless\",\"nodeSelector\":{"
             "\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v5p-slice\","
             "\"cloud.google.com/gke-tpu-topology\":\"4x4x4\"},\"containers\":[{\"name\":"
             "\"ray-worker\",\"image\":\"rayproject/ray:2.9.0\",\"resources\":{\"limits\":{"
             "\"google.com/tpu\":\"4\",\"cpu\":\"8\"},\"requests\":{\"google.com/tpu\":\"4\"}},"
             "\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"%d\"},{\"name\":\"TPU_NAME\","
             "\"value\":\"c%d-tpu-%d\"},{\"name\":\"TPU_WORKER_HOSTNAMES\",\"value\":\"%s\"},"
             "{\"name\":\"MEGASCALE_NUM_SLICES\",\"value\":\"1\"},{\"name\":\"RAY_ADDRESS\","
             "\"value\":\"c%d-head:6379\"}]}]},\"status\":{\"phase\":\"Running\"}}",
             c, i, c % 8, c, r, h, c, r, i, c, r, h, c, h, c, r, hosts, c);
    if (!tpu) /* the same pod without a TPU request: no slice record */
        for (char *q; (q = strstr(text, "google.com/tpu"));)
            memcpy(q, "example.com/gp", 14);
    return cJSON_Parse(text);
}

/* Heap bytes per pod of a store holding PODS pods; *out keeps the store. */
static double fill(bool tpu, struct wh_store **out)
{
    size_t before = heap();
    struct wh_store *s = wh_store_new();
    for (int i = 0; s && i < PODS; i++) {
        cJSON *o = pod(i, tpu);
        struct wh_pod_rec rec;
        if (!o || wh_store_apply_pod(s, o, false, 1, &rec)) {
            wh_bench_die("out of memory");
        }
        cJSON_Delete(o);
    }
    *out = s;
    return s ? (double)(heap() - before) / PODS : -1;
}

int main(void)
{
    struct wh_store *s = NULL;
    double base = fill(false, &s);
    wh_store_free(s);
    double with = fill(true, &s);
    if (!s)
        return 1;
    size_t pods, nodes, interned;
    wh_store_counts(s, &pods, &nodes, &interned);
    double t0 = wh_bench_now_s(), c0 = wh_bench_cpu_ms();
    cJSON *lp = NULL, *ln = NULL;
    unsigned long long v;
    if (wh_store_slice_lists(s, &lp, &ln, &v))
        return 1;
    double took = (wh_bench_now_s() - t0) * 1e3, cpu = wh_bench_cpu_ms() - c0;
    printf("TPU pods in the store: %zu (%d-host slices), interned strings: %zu\n", pods, HOSTS,
           interned);
    printf("heap per pod: %.0f bytes, of which the slice record %.0f (%.0f without a TPU "
           "request)\n",
           with, with - base, base);
    printf("one rebuild as JSON for the slice check (the records' mutex held): %.1f ms, %.1f ms "
           "of CPU\n",
           took, cpu);
    cJSON_Delete(lp);
    cJSON_Delete(ln);
    wh_store_free(s);
    return 0;
}
