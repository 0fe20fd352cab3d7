/* metrics.c: lock-free counters and their Prometheus text (see metrics.h). */
#include "wh/metrics.h"

#include <stdatomic.h> /* atomic_* */
#include <stdlib.h>    /* calloc, free */

/* Status codes with their own label; the rest count as "other". Index 0 is
 * "no answer" (client went away). */
static const int codes[] = {0, 200, 400, 404, 405, 413, 500, 503};
#define N_CODES (sizeof(codes) / sizeof(codes[0]))
#define CODE_OTHER N_CODES

/* Upper bounds of the latency buckets, in microseconds. */
static const long long bounds_us[] = {100,   250,   500,    1000,   2500,   5000,    10000,
                                      25000, 50000, 100000, 250000, 500000, 1000000, 2500000};
#define N_BOUNDS (sizeof(bounds_us) / sizeof(bounds_us[0]))

struct hist {
    atomic_llong bucket[N_BOUNDS + 1]; /* last = +Inf */
    atomic_llong sum_us;
    atomic_llong count;
};

struct wh_metrics {
    atomic_llong requests[WH_MPATH__COUNT][N_CODES + 1];
    struct hist latency[WH_MPATH__COUNT];
    atomic_llong admissions[WH_MPATH__COUNT][2]; /* [denied, allowed] */
    atomic_llong patch_ops;
    atomic_llong in_flight;
    atomic_llong cert_not_after;
    atomic_llong reloads[2]; /* [rejected, ok] */
    atomic_llong timeouts;
};

static const char *const path_labels[WH_MPATH__COUNT] = {
    "/mutate", "/validate", "/mutate-workload", "/validate-workload",
    "/",       "/healthz",  "/readyz",          "/metrics",           "other",
};

const char *wh_metrics_path_label(enum wh_mpath p)
{
    return (unsigned)p < WH_MPATH__COUNT ? path_labels[p] : "other";
}

struct wh_metrics *wh_metrics_new(void)
{
    return calloc(1, sizeof(struct wh_metrics));
}

void wh_metrics_free(struct wh_metrics *m)
{
    free(m);
}

static void inc(atomic_llong *a, long long by)
{
    atomic_fetch_add_explicit(a, by, memory_order_relaxed);
}

static long long get(const atomic_llong *a)
{
    return atomic_load_explicit((atomic_llong *)a, memory_order_relaxed);
}

void wh_metrics_begin(struct wh_metrics *m)
{
    inc(&m->in_flight, 1);
}

static size_t code_index(int status)
{
    for (size_t i = 0; i < N_CODES; i++)
        if (codes[i] == status)
            return i;
    return CODE_OTHER;
}

void wh_metrics_end(struct wh_metrics *m, enum wh_mpath path, int status, long long latency_us)
{
    if ((unsigned)path >= WH_MPATH__COUNT)
        path = WH_MPATH_OTHER;
    if (latency_us < 0)
        latency_us = 0;
    inc(&m->in_flight, -1);
    inc(&m->requests[path][code_index(status)], 1);
    struct hist *h = &m->latency[path];
    size_t b = 0;
    while (b < N_BOUNDS && latency_us > bounds_us[b])
        b++;
    inc(&h->bucket[b], 1);
    inc(&h->sum_us, latency_us);
    inc(&h->count, 1);
}

void wh_metrics_admission(struct wh_metrics *m, enum wh_mpath path, bool allowed, size_t n_ops)
{
    if ((unsigned)path >= WH_MPATH__COUNT)
        path = WH_MPATH_OTHER;
    inc(&m->admissions[path][allowed ? 1 : 0], 1);
    inc(&m->patch_ops, (long long)n_ops);
}

void wh_metrics_cert(struct wh_metrics *m, time_t not_after)
{
    atomic_store(&m->cert_not_after, (long long)not_after);
}

void wh_metrics_tls_reload(struct wh_metrics *m, bool ok)
{
    inc(&m->reloads[ok ? 1 : 0], 1);
}

void wh_metrics_timeout(struct wh_metrics *m)
{
    inc(&m->timeouts, 1);
}

long long wh_metrics_in_flight(const struct wh_metrics *m)
{
    return get(&m->in_flight);
}

static enum wh_err head(struct wh_buf *b, const char *name, const char *type, const char *help)
{
    return wh_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static enum wh_err render_requests(const struct wh_metrics *m, struct wh_buf *b)
{
    enum wh_err err = head(b, "tpu_webhook_http_requests_total", "counter",
                           "HTTP requests by path and status code (code 0: client went away).");
    for (size_t p = 0; !err && p < WH_MPATH__COUNT; p++)
        for (size_t c = 0; !err && c <= N_CODES; c++) {
            long long v = get(&m->requests[p][c]);
            if (!v)
                continue;
            if (c == CODE_OTHER)
                err = wh_buf_addf(b, "tpu_webhook_http_requests_total{path=\"%s\",code=\"other\"} %lld\n",
                                  path_labels[p], v);
            else
                err = wh_buf_addf(b, "tpu_webhook_http_requests_total{path=\"%s\",code=\"%d\"} %lld\n",
                                  path_labels[p], codes[c], v);
        }
    return err;
}

static enum wh_err render_latency(const struct wh_metrics *m, struct wh_buf *b)
{
    const char *name = "tpu_webhook_http_request_duration_seconds";
    enum wh_err err = head(b, name, "histogram", "Time from request headers to the last byte of the answer.");
    for (size_t p = 0; !err && p < WH_MPATH__COUNT; p++) {
        const struct hist *h = &m->latency[p];
        if (!get(&h->count) && p > WH_MPATH_VALIDATE_WORKLOAD)
            continue;
        long long cum = 0;
        for (size_t i = 0; !err && i <= N_BOUNDS; i++) {
            cum += get(&h->bucket[i]);
            if (i < N_BOUNDS)
                err = wh_buf_addf(b, "%s_bucket{path=\"%s\",le=\"%g\"} %lld\n", name, path_labels[p],
                                  (double)bounds_us[i] / 1e6, cum);
            else
                err = wh_buf_addf(b, "%s_bucket{path=\"%s\",le=\"+Inf\"} %lld\n", name,
                                  path_labels[p], cum);
        }
        /* _count is the +Inf bucket as rendered: requests ending while this
         * runs must not leave the two disagreeing, as Prometheus requires. */
        if (!err)
            err = wh_buf_addf(b, "%s_sum{path=\"%s\"} %.6f\n%s_count{path=\"%s\"} %lld\n", name,
                              path_labels[p], (double)get(&h->sum_us) / 1e6, name, path_labels[p],
                              cum);
    }
    return err;
}

static enum wh_err render_admissions(const struct wh_metrics *m, struct wh_buf *b)
{
    enum wh_err err = head(b, "tpu_webhook_admissions_total", "counter",
                           "AdmissionReviews answered, by route and decision.");
    for (size_t p = WH_MPATH_MUTATE; !err && p <= WH_MPATH_VALIDATE_WORKLOAD; p++)
        for (int a = 1; !err && a >= 0; a--)
            err = wh_buf_addf(b, "tpu_webhook_admissions_total{path=\"%s\",decision=\"%s\"} %lld\n",
                              path_labels[p], a ? "allowed" : "denied", get(&m->admissions[p][a]));
    if (!err)
        err = head(b, "tpu_webhook_patch_operations_total", "counter",
                   "JSON patch operations returned by /mutate.");
    if (!err)
        err = wh_buf_addf(b, "tpu_webhook_patch_operations_total %lld\n", get(&m->patch_ops));
    return err;
}

static enum wh_err gauge(struct wh_buf *b, const char *name, const char *type, const char *help,
                         long long v)
{
    enum wh_err err = head(b, name, type, help);
    return err ? err : wh_buf_addf(b, "%s %lld\n", name, v);
}

static enum wh_err render_rest(const struct wh_metrics *m, const struct wh_admit_stats *st,
                               struct wh_buf *b)
{
    enum wh_err err = gauge(b, "tpu_webhook_http_requests_in_flight", "gauge",
                            "Requests being read, answered or sent.", get(&m->in_flight));
    if (!err)
        err = gauge(b, "tpu_webhook_http_connections_timed_out_total", "counter",
                    "Connections cut off for sending their request too slowly.", get(&m->timeouts));
    if (!err)
        err = gauge(b, "tpu_webhook_tls_cert_not_after_timestamp_seconds", "gauge",
                    "Expiry (Unix time) of the serving certificate.", get(&m->cert_not_after));
    if (!err)
        err = head(b, "tpu_webhook_tls_reloads_total", "counter",
                   "Certificate changes seen on disk, by result.");
    if (!err)
        err = wh_buf_addf(b, "tpu_webhook_tls_reloads_total{result=\"ok\"} %lld\n"
                             "tpu_webhook_tls_reloads_total{result=\"rejected\"} %lld\n",
                          get(&m->reloads[1]), get(&m->reloads[0]));
    if (err || !st)
        return err;
    err = gauge(b, "tpu_webhook_cache_synced", "gauge",
                "1 when the cluster-state caches are synced (always 1 standalone).", st->synced);
    if (!err)
        err = gauge(b, "tpu_webhook_cache_pods", "gauge", "KubeRay worker pods in the cache.",
                    (long long)st->pods_cached);
    if (!err)
        err = gauge(b, "tpu_webhook_cache_nodes", "gauge", "TPU nodes in the cache.",
                    (long long)st->nodes_cached);
    if (!err)
        err = gauge(b, "tpu_webhook_ledger_reservations", "gauge",
                    "Legacy-path assignments made but not yet seen in the pod cache.",
                    (long long)st->reservations);
    return err;
}

enum wh_err wh_metrics_render(const struct wh_metrics *m, const struct wh_admit_stats *st,
                              struct wh_buf *out)
{
    enum wh_err err = render_requests(m, out);
    if (!err)
        err = render_latency(m, out);
    if (!err)
        err = render_admissions(m, out);
    if (!err)
        err = render_rest(m, st, out);
    return err;
}
