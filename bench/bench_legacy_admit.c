/* bench_legacy_admit.c: admit a 1,024-host legacy (no index labels) slice
 * through wh_admit_review() against the fake API server, and print pods/s
 * and latency percentiles. Target: > 1,000 pods/s on 2 cores (the
 * reference serialises every legacy admission behind a 1 s cache wait when
 * its informer lags). Prints figures only; asserts nothing.
 *
 * Two runs: back to back from one thread (KubeRay's own pattern), and the
 * same slice from 16 threads at once (several KubeRay workers or a burst).
 * The admitted pods are created in the fake API server by a separate
 * thread, in batches, so the watch confirms reservations while admissions
 * run, as in a real cluster.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/kube/harness.h"
#include "pod_creator.h"
#include "wh/memtune.h" /* wh_memtune_server */
#include "wh/admit.h"
#include "wh/log.h"

#define HOSTS 1024
#define THREADS 16

static struct kh_server srv;
static char *review;

struct run {
    struct wh_admit *ad;
    const char *body;
    const char *cluster;
    bool create;
    long lat[HOSTS];
    atomic_int next;
    atomic_int failures;
    char seen[HOSTS];
    pthread_mutex_t seen_mu;
    atomic_int dups;
};

static void *admit_loop(void *arg)
{
    struct run *r = arg;
    char errbuf[WH_ERRBUF_LEN];
    for (int i; (i = atomic_fetch_add(&r->next, 1)) < HOSTS;) {
        struct wh_engine_result res;
        long t0 = pc_now_us();
        enum wh_err err = wh_admit_review(r->ad, r->body, strlen(r->body), WH_ROUTE_MUTATE, &res,
                                          errbuf);
        r->lat[i] = pc_now_us() - t0;
        if (err || !res.allowed || !res.assigned || res.host < 0 || res.host >= HOSTS) {
            atomic_fetch_add(&r->failures, 1);
            if (!err)
                wh_engine_result_free(&res);
            continue;
        }
        pthread_mutex_lock(&r->seen_mu);
        if (r->seen[res.host]++)
            atomic_fetch_add(&r->dups, 1);
        pthread_mutex_unlock(&r->seen_mu);
        char name[128];
        snprintf(name, sizeof(name), "%s-w-%d", r->cluster, i);
        char *pod = kh_created_pod(r->body, name, res.replica, res.host, res.n_tpu_containers);
        if (pod && r->create)
            pc_enqueue(pod);
        else
            free(pod);
        wh_engine_result_free(&res);
    }
    return NULL;
}

static void run_once(struct wh_admit *ad, const char *cluster, int threads, const char *what)
{
    struct run *r = calloc(1, sizeof(*r));
    char *body = kh_review(review, cluster, "tpu");
    r->ad = ad;
    r->body = body;
    r->cluster = cluster;
    r->create = strcmp(what, "standalone") != 0;
    pthread_mutex_init(&r->seen_mu, NULL);
    pthread_t th[THREADS];
    long t0 = pc_now_us();
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, admit_loop, r);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    long total = pc_now_us() - t0;
    qsort(r->lat, HOSTS, sizeof(long), pc_cmp_long);
    printf("%-12s legacy slice of %d hosts, %2d thread(s): %6.0f pods/s  p50 %6ld us  p99 %6ld us  "
           "max %6ld us  failures %d  duplicate ids %d\n",
           what, HOSTS, threads, HOSTS / (total / 1e6), r->lat[HOSTS / 2], r->lat[HOSTS * 99 / 100],
           r->lat[HOSTS - 1], atomic_load(&r->failures), atomic_load(&r->dups));
    pthread_mutex_destroy(&r->seen_mu);
    free(body);
    free(r);
}

int main(void)
{
    wh_memtune_server(); /* as `serve` runs */
    wh_log_set_verbosity(-1);
    review = pc_fake_start(&srv, "legacy-v5p-1024.json");
    if (!review)
        return 1;
    char p[1024];
    snprintf(p, sizeof(p), "%s/kc", srv.dir);
    char errbuf[WH_ERRBUF_LEN];
    struct wh_admit_opts o = {.kubeconfig_path = p};
    struct wh_admit *ad = wh_admit_new(&o, errbuf);
    if (!ad) {
        fprintf(stderr, "bench: %s\n", errbuf);
        kh_cleanup(&srv);
        return 1;
    }
    char why[256];
    for (long end = kh_now_ms() + 30000; !wh_admit_ready(ad, why, sizeof(why)) && kh_now_ms() < end;)
        kh_sleep_ms(10);
    pc_start(&srv);
    run_once(ad, "bench-a", 1, "kubernetes");
    run_once(ad, "bench-b", THREADS, "kubernetes");
    pc_stop();
    /* Let the watch catch up, then report how many reservations it confirmed. */
    struct wh_mgauges st;
    for (long end = kh_now_ms() + 20000; kh_now_ms() < end; kh_sleep_ms(50)) {
        wh_admit_stats(ad, &st);
        if (st.pods_cached >= 2 * HOSTS && st.reservations == 0)
            break;
    }
    wh_admit_stats(ad, &st);
    printf("after the runs: %zu pods cached, %zu reservations still unconfirmed\n", st.pods_cached,
           st.reservations);
    wh_admit_free(ad);
    /* The same slice with no API server and no cache: what the engine alone
     * costs, to tell the pipeline's share from the engine's. */
    struct wh_admit_opts so = {.standalone = true};
    struct wh_admit *sa = wh_admit_new(&so, errbuf);
    if (sa) {
        run_once(sa, "bench-c", 1, "standalone");
        wh_admit_free(sa);
    }
    printf("target: > 1000 pods/s\n");
    kh_cleanup(&srv);
    return 0;
}
