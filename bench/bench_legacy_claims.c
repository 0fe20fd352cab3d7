/* bench_legacy_claims.c: a 1,024-host legacy slice admitted through 3
 * webhook replicas (3 admission pipelines in this process, each with its own
 * caches, ledger and claims client) that share one fake API server, with
 * 1 ms and 10 ms injected API latency. Prints pods/s, latency percentiles,
 * claim conflicts and a check that every id was handed out once. Targets:
 * > 500 pods/s at 1 ms; p99 far below the API server's 10 s webhook
 * timeout at 10 ms. The peer in the same run: one replica without claims
 * (what a single replica did before claims existed), for the ratio.
 * Prints figures only; asserts nothing.
 *
 * 16 client threads (a burst, or several KubeRay workers) each send the
 * next pod to a random replica. Admitted pods are created in the fake API
 * server by a separate thread, in batches, so that the watches show them
 * while admissions run, as in a real cluster. The pods carry the
 * ownerReference KubeRay sets, so a claim that meets 409 reads the Lease
 * back (GET) to see which RayCluster instance holds it
 * (docs/legacy-indices.md).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/kube/harness.h"
#include "pod_creator.h"
#include "wh/admit.h"
#include "wh/log.h"
#include "wh/memtune.h" /* wh_memtune_server */

#define HOSTS 1024
#define THREADS 16
#define REPLICAS 3

static struct kh_server srv;
static char *review;

struct run {
    struct wh_admit **ads;
    int n_ads;
    const char *body;
    const char *cluster;
    long lat[HOSTS];
    atomic_int next;
    atomic_int denied;
    atomic_uint seed;
    char seen[HOSTS];
    pthread_mutex_t seen_mu;
    atomic_int dups;
};

static void *admit_loop(void *arg)
{
    struct run *r = arg;
    char errbuf[WH_ERRBUF_LEN];
    unsigned seed = atomic_fetch_add(&r->seed, 7919);
    for (int i; (i = atomic_fetch_add(&r->next, 1)) < HOSTS;) {
        long t0 = pc_now_us();
        struct wh_engine_result res;
        bool ok = false;
        /* A denial (claims could not be made) is retried, as KubeRay does. */
        for (int tries = 0; tries < 20 && !ok; tries++) {
            struct wh_admit *ad = r->ads[rand_r(&seed) % (unsigned)r->n_ads];
            if (wh_admit_review(ad, r->body, strlen(r->body), WH_ROUTE_MUTATE, &res, errbuf))
                continue;
            ok = res.allowed && res.assigned && res.replica == 0 && res.host >= 0 &&
                 res.host < HOSTS;
            if (!ok) {
                atomic_fetch_add(&r->denied, 1);
                wh_engine_result_free(&res);
            }
        }
        r->lat[i] = pc_now_us() - t0;
        if (!ok)
            continue;
        pthread_mutex_lock(&r->seen_mu);
        if (r->seen[res.host]++)
            atomic_fetch_add(&r->dups, 1);
        pthread_mutex_unlock(&r->seen_mu);
        char name[128];
        snprintf(name, sizeof(name), "%s-w-%d", r->cluster, i);
        char *pod = kh_created_pod(r->body, name, res.replica, res.host, res.n_tpu_containers);
        if (pod)
            pc_enqueue(pod);
        wh_engine_result_free(&res);
    }
    return NULL;
}

static long long held_total(struct wh_admit **ads, int n)
{
    long long h = 0;
    for (int i = 0; i < n; i++) {
        struct wh_mgauges st;
        wh_admit_stats(ads[i], &st);
        h += (long long)st.claim.held;
    }
    return h;
}

/* Returns pods/s. */
static double run_once(struct wh_admit **ads, int n_ads, const char *cluster, const char *what)
{
    struct run *r = calloc(1, sizeof(*r));
    char uid[128];
    snprintf(uid, sizeof(uid), "uid-%s", cluster);
    char *body = kh_owned_review(review, cluster, "tpu", uid);
    if (!body) {
        fprintf(stderr, "bench: cannot build the review\n");
        free(r);
        return 0;
    }
    r->ads = ads;
    r->n_ads = n_ads;
    r->body = body;
    r->cluster = cluster;
    atomic_init(&r->seed, 12345u);
    pthread_mutex_init(&r->seen_mu, NULL);
    long long held0 = held_total(ads, n_ads);
    pthread_t th[THREADS];
    long t0 = pc_now_us();
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, admit_loop, r);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    long total = pc_now_us() - t0;
    qsort(r->lat, HOSTS, sizeof(long), pc_cmp_long);
    int missing = 0;
    for (int h = 0; h < HOSTS; h++)
        missing += !r->seen[h];
    double rate = HOSTS / (total / 1e6);
    printf("%-28s %d hosts, %d threads: %6.0f pods/s  p50 %7ld us  p99 %7ld us  max %7ld us  "
           "conflicts %lld  denials retried %d  duplicate ids %d  ids missing %d\n",
           what, HOSTS, THREADS, rate, r->lat[HOSTS / 2], r->lat[HOSTS * 99 / 100],
           r->lat[HOSTS - 1], held_total(ads, n_ads) - held0, atomic_load(&r->denied),
           atomic_load(&r->dups), missing);
    pthread_mutex_destroy(&r->seen_mu);
    free(body);
    free(r);
    return rate;
}

static bool start(struct wh_admit **ads, int n, bool claims)
{
    char p[1024], errbuf[WH_ERRBUF_LEN];
    snprintf(p, sizeof(p), "%s/kc", srv.dir);
    struct wh_admit_opts o = {.kubeconfig_path = p, .claims_off = !claims};
    for (int i = 0; i < n; i++) {
        ads[i] = wh_admit_new(&o, errbuf);
        if (!ads[i]) {
            fprintf(stderr, "bench: %s\n", errbuf);
            return false;
        }
    }
    char why[512];
    for (int i = 0; i < n; i++)
        for (long end = kh_now_ms() + 30000;
             !wh_admit_ready(ads[i], why, sizeof(why)) && kh_now_ms() < end;)
            kh_sleep_ms(10);
    return true;
}

int main(void)
{
    wh_memtune_server(); /* as `serve` runs */
    wh_log_set_verbosity(-1);
    review = pc_fake_start(&srv, "legacy-v5p-1024.json");
    if (!review)
        return 1;
    pc_start(&srv);
    struct wh_admit *ads[REPLICAS] = {0};
    struct wh_admit *peer = NULL;
    double base = 0, at1 = 0;
    int rc = 1;
    if (kh_control(&srv, "faults", "{\"latency_ms\": 1}", NULL) || !start(&peer, 1, false))
        goto out;
    base = run_once(&peer, 1, "peer", "1 replica, no claims, 1 ms");
    wh_admit_free(peer);
    peer = NULL;
    if (!start(ads, REPLICAS, true))
        goto out;
    at1 = run_once(ads, REPLICAS, "claims-1ms", "3 replicas, claims, 1 ms");
    if (kh_control(&srv, "faults", "{\"latency_ms\": 10}", NULL))
        goto out;
    run_once(ads, REPLICAS, "claims-10ms", "3 replicas, claims, 10 ms");
    printf("3 replicas with claims / 1 replica without, at 1 ms: %.2f\n", at1 / base);
    printf("targets: > 500 pods/s at 1 ms; p99 far below 10 s at 10 ms\n");
    rc = 0;
out:
    pc_stop();
    for (int i = 0; i < REPLICAS; i++)
        wh_admit_free(ads[i]);
    wh_admit_free(peer);
    kh_cleanup(&srv);
    return rc;
}
