/* bench_cache_memory.c: resident memory of the pod cache holding 100,000
 * KubeRay worker pods LISTed (500 per page) from the fake API server, and
 * the time the first sync takes. Target: < 64 MiB resident. Prints figures
 * only; asserts nothing. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/kube/harness.h"
#include "wh/admit.h"
#include "wh/log.h"

#define PODS 100000

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

int main(void)
{
    wh_log_set_verbosity(-1);
    struct kh_server srv = {0};
    static const char *const args[] = {"--gen-pods", "100000", "--gen-nodes", "256", NULL};
    if (kh_certs(&srv) || kh_server_start(&srv, args) || kh_kubeconfig(&srv, "kc", NULL)) {
        fprintf(stderr, "bench: cannot start the fake API server\n");
        kh_cleanup(&srv);
        return 1;
    }
    char p[512], errbuf[WH_ERRBUF_LEN], why[256];
    snprintf(p, sizeof(p), "%s/kc", srv.dir);
    long before = rss_kib();
    struct wh_admit_opts o = {.kubeconfig_path = p};
    long t0 = kh_now_ms();
    struct wh_admit *ad = wh_admit_new(&o, errbuf);
    if (!ad) {
        fprintf(stderr, "bench: %s\n", errbuf);
        kh_cleanup(&srv);
        return 1;
    }
    struct wh_mgauges st = {0};
    for (long end = kh_now_ms() + 300000; kh_now_ms() < end; kh_sleep_ms(50)) {
        wh_admit_stats(ad, &st);
        if (wh_admit_ready(ad, why, sizeof(why)) && st.pods_cached >= PODS)
            break;
    }
    long synced_ms = kh_now_ms() - t0;
    long after = rss_kib();
    malloc_trim(0);
    long trimmed = rss_kib();
    printf("pods cached: %zu, TPU nodes cached: %zu, first sync: %ld ms\n", st.pods_cached,
           st.nodes_cached, synced_ms);
    printf("resident memory: %.1f MiB before, %.1f MiB with the cache (%.1f MiB after "
           "malloc_trim), %.0f bytes per pod\n",
           before / 1024.0, after / 1024.0, trimmed / 1024.0,
           (trimmed - before) * 1024.0 / (st.pods_cached ? (double)st.pods_cached : 1.0));
    printf("target: < 64 MiB resident\n");
    wh_admit_free(ad);
    kh_cleanup(&srv);
    return 0;
}
