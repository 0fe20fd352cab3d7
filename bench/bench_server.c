/* bench_server.c: throughput and latency of the HTTPS server end to end.
 *
 *   wh-bench-server [SECONDS_PER_ROUTE [CLIENT_THREADS [SERVER_THREADS]]]
 *
 * Starts the real server in this process (standalone pipeline, a fresh
 * development certificate, 127.0.0.1 port 0) and drives it with libcurl
 * clients, each on one kept-alive connection, posting a RayCluster review
 * to /validate and a native-index TPU pod review to /mutate (neither grows
 * the ledger, so every request costs the same). Prints requests per second
 * and client-side latency percentiles. Clients and server share the CPUs,
 * so the figures are a floor. Prints; asserts nothing.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "wh/memtune.h" /* wh_memtune_server */
#include "wh/admit.h"
#include "wh/commands.h" /* wh_serve_admit, the pipeline serve wires */
#include "certs.h"
#include "wh/log.h"
#include "wh/metrics.h"
#include "wh/server.h"
#include "wh/tls.h"

#include "benchutil.h" /* wh_bench_now_s, wh_bench_cmp_double, wh_bench_die */

#define MAX_SAMPLES 2000000

static const char pod_review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":"
    "\"b-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"namespace\":"
    "\"default\",\"operation\":\"CREATE\",\"object\":{\"metadata\":{\"name\":\"w-0\","
    "\"namespace\":\"default\",\"labels\":{\"ray.io/cluster\":\"c\",\"ray.io/group\":\"g\","
    "\"ray.io/node-type\":\"worker\",\"ray.io/worker-group-replica-index\":\"0\","
    "\"ray.io/replica-host-index\":\"1\",\"ray.io/worker-group-replica-name\":\"g-abc\"}},"
    "\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":"
    "\"tpu-v6e-slice\",\"cloud.google.com/gke-tpu-topology\":\"4x4\"},\"containers\":[{"
    "\"name\":\"ray-worker\",\"image\":\"rayproject/ray\",\"resources\":{\"limits\":{"
    "\"google.com/tpu\":\"4\"},\"requests\":{\"google.com/tpu\":\"4\"}}}]}}}}";

static const char cluster_review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":"
    "\"b-2\",\"kind\":{\"group\":\"ray.io\",\"version\":\"v1\",\"kind\":\"RayCluster\"},"
    "\"namespace\":\"default\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":"
    "\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"c\",\"namespace\":"
    "\"default\"},\"spec\":{\"workerGroupSpecs\":[{\"groupName\":\"g\",\"replicas\":1,"
    "\"numOfHosts\":4,\"template\":{\"spec\":{\"nodeSelector\":{"
    "\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\","
    "\"cloud.google.com/gke-tpu-topology\":\"4x4\"},\"containers\":[{\"name\":\"w\","
    "\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}}}]}}}]}}}}";

struct client {
    pthread_t th;
    const char *url;
    const char *body;
    const char *ca;
    double seconds;
    long ok, failed;
    double *lat_us; /* samples, owned by main */
    long n_lat, cap_lat;
};

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
    (void)p, (void)ud;
    return sz * n;
}

static void *run_client(void *arg)
{
    struct client *c = arg;
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    double end = wh_bench_now_s() + c->seconds;
    while (wh_bench_now_s() < end) {
        double t0 = wh_bench_now_s();
        CURLcode rc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (rc == CURLE_OK && status == 200)
            c->ok++;
        else
            c->failed++;
        if (c->n_lat < c->cap_lat)
            c->lat_us[c->n_lat++] = (wh_bench_now_s() - t0) * 1e6;
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return NULL;
}

static void bench_route(const char *name, const char *url, const char *body, const char *ca,
                        double seconds, int n_clients)
{
    struct client *cl = calloc((size_t)n_clients, sizeof(*cl));
    double *lat = malloc(sizeof(double) * MAX_SAMPLES);
    if (!cl || !lat) {
        wh_bench_die("out of memory");
    }
    long per = MAX_SAMPLES / n_clients;
    for (int i = 0; i < n_clients; i++) {
        cl[i] = (struct client){.url = url,
                                .body = body,
                                .ca = ca,
                                .seconds = seconds,
                                .lat_us = lat + i * per,
                                .cap_lat = per};
        pthread_create(&cl[i].th, NULL, run_client, &cl[i]);
    }
    long ok = 0, failed = 0, n = 0;
    for (int i = 0; i < n_clients; i++) {
        pthread_join(cl[i].th, NULL);
        ok += cl[i].ok;
        failed += cl[i].failed;
        memmove(lat + n, cl[i].lat_us, sizeof(double) * (size_t)cl[i].n_lat);
        n += cl[i].n_lat;
    }
    qsort(lat, (size_t)n, sizeof(double), wh_bench_cmp_double);
    printf("%-10s %2d clients  %8.0f req/s  p50 %7.0f us  p99 %7.0f us  max %7.0f us  "
           "(%ld ok, %ld failed)\n",
           name, n_clients, (double)ok / seconds, n ? lat[n / 2] : 0.0,
           n ? lat[(long)(n * 0.99)] : 0.0, n ? lat[n - 1] : 0.0, ok, failed);
    free(lat);
    free(cl);
}

int main(int argc, char **argv)
{
    wh_memtune_server(); /* as `serve` runs */
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    int n_clients = argc > 2 ? atoi(argv[2]) : 4;
    unsigned threads = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
    if (seconds <= 0 || seconds > 60 || n_clients < 1 || n_clients > 64 || threads < 1 ||
        threads > 64) {
        fprintf(stderr, "usage: wh-bench-server [SECONDS 0-60 [CLIENTS 1-64 [THREADS 1-64]]]\n");
        return 2;
    }
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_buf cac, cak, crt, key;
    wh_buf_init(&cac, 1 << 16);
    wh_buf_init(&cak, 1 << 16);
    wh_buf_init(&crt, 1 << 16);
    wh_buf_init(&key, 1 << 16);
    const char *sans[] = {"DNS:localhost", "IP:127.0.0.1"};
    char ca_path[] = "/tmp/wh-bench-ca-XXXXXX";
    int fd = mkstemp(ca_path);
    if (fd < 0 || wh_certs_make_ca("bench CA", 30, &cac, &cak, errbuf) ||
        wh_certs_make_server(wh_buf_ptr(&cac), wh_buf_len(&cac), wh_buf_ptr(&cak), wh_buf_len(&cak),
                             sans, 2, 30, &crt, &key, errbuf) ||
        write(fd, wh_buf_ptr(&cac), wh_buf_len(&cac)) != (ssize_t)wh_buf_len(&cac)) {
        fprintf(stderr, "certificates: %s\n", errbuf);
        return 1;
    }
    close(fd);
    struct wh_tls_opts to = {.cert_pem = wh_buf_ptr(&crt),
                             .cert_len = wh_buf_len(&crt),
                             .key_pem = wh_buf_ptr(&key),
                             .key_len = wh_buf_len(&key)};
    struct wh_tls *tls = wh_tls_new(&to, errbuf);
    struct wh_admit_opts ao = {.standalone = true};
    struct wh_pipeline pl;
    bool ad = tls && wh_serve_admit.start(&ao, &pl, errbuf);
    struct wh_metrics *m = wh_metrics_new();
    struct wh_server_opts so = {.bind = "127.0.0.1:0",
                                .threads = threads,
                                .max_connections = 256,
                                .idle_timeout_ms = 60000,
                                .header_timeout_ms = 10000,
                                .request_timeout_ms = 30000,
                                .max_body = WH_SERVER_MAX_BODY_DEFAULT};
    struct wh_server *srv = ad && m ? wh_server_start(&so, &pl, m, errbuf) : NULL;
    if (!srv) {
        fprintf(stderr, "server: %s\n", errbuf);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    char url_v[64], url_m[64];
    snprintf(url_v, sizeof(url_v), "https://127.0.0.1:%u/validate", wh_server_port(srv));
    snprintf(url_m, sizeof(url_m), "https://127.0.0.1:%u/mutate", wh_server_port(srv));
    printf("server: %u threads; %.1f s per route\n", threads, seconds);
    bench_route("/validate", url_v, cluster_review, ca_path, seconds, n_clients);
    bench_route("/mutate", url_m, pod_review, ca_path, seconds, n_clients);
    wh_server_drain(srv, 0, 5000);
    wh_server_free(srv);
    wh_serve_admit.stop(&pl);
    wh_tls_free(tls);
    wh_metrics_free(m);
    curl_global_cleanup();
    unlink(ca_path);
    wh_buf_free(&cac);
    wh_buf_free(&cak);
    wh_buf_free(&crt);
    wh_buf_free(&key);
    return 0;
}
