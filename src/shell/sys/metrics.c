/* metrics.c: lock-free counters and their Prometheus text (see metrics.h). */
#include "wh/metrics.h"

#include <dirent.h>       /* opendir */
#include <errno.h>        /* errno */
#include <stdatomic.h>    /* atomic_* */
#include <stdio.h>        /* fopen, fread */
#include <stdlib.h>       /* calloc, free, strtoll */
#include <string.h>       /* strchr */
#include <sys/resource.h> /* getrusage, getrlimit */
#include <unistd.h>       /* sysconf */

#include "wh/buildinfo.h" /* wh_build_* */
#include "wh/kinds.h"     /* wh_kinds, wh_kind_find, wh_kind_row_of */

/* Status codes with their own label; the rest count as "other". Index 0 is
 * "no answer" (client went away). */
static const int codes[] = {0, 200, 400, 404, 405, 413, 500, 503};
#define N_CODES (sizeof(codes) / sizeof(codes[0]))
#define CODE_OTHER N_CODES

/* Upper bounds of the latency buckets, in microseconds. Up to 30 s, the
 * longest timeoutSeconds a webhook configuration may set, so that a p99 near
 * the configured timeout is measurable (see docs/troubleshooting.md). */
static const long long bounds_us[] = {100,     250,     500,     1000,     2500,    5000,
                                      10000,   25000,   50000,   100000,   250000,  500000,
                                      1000000, 2500000, 5000000, 10000000, 30000000};
#define N_BOUNDS (sizeof(bounds_us) / sizeof(bounds_us[0]))

const double wh_mclaim_bounds[WH_MCLAIM_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5};

/* The kind index of tpu_webhook_admissions_total: a row of wh_kinds
 * (kinds.h) with a metrics label, in the table's order, then "other" for
 * every other kind (bounded: see metrics.h). */
#define N_KINDS ((size_t)WH_ROW__COUNT + 1)
#define K_OTHER ((size_t)WH_ROW__COUNT)

/* The label of kind index k; NULL for a row without one (never counted). */
static const char *kind_label(size_t k)
{
    return k == K_OTHER ? "other" : wh_kinds[k].metrics_label;
}
enum reason { R_PATCHED, R_NO_PATCH, R_INVALID, R_STATE_UNAVAILABLE, N_REASONS };
static const char *const reason_labels[N_REASONS] = {"patched", "no_patch", "invalid",
                                                     "cluster_state_unavailable"};

struct hist {
    atomic_llong bucket[N_BOUNDS + 1]; /* last = +Inf */
    atomic_llong sum_us;
    atomic_llong count;
};

struct wh_metrics {
    atomic_llong requests[WH_MPATH__COUNT][N_CODES + 1];
    struct hist latency[WH_MPATH__COUNT];
    atomic_llong admissions[WH_MPATH__COUNT][N_KINDS][N_REASONS];
    atomic_llong patch_ops;
    atomic_llong in_flight;
    atomic_llong cert_not_after;
    atomic_llong client_ca_not_after;
    atomic_llong reloads[2];     /* [rejected, ok] */
    atomic_llong cert_refused;   /* 1 while the files hold a refused pair or CA */
    atomic_llong client_refused; /* handshakes refused for their client cert */
    atomic_bool client_ca;       /* --client-ca-file given: render the above */
    atomic_llong timeouts;
    atomic_llong shed[WH_SHED__COUNT];
    long long started; /* Unix time of wh_metrics_new() */
};

const char *wh_metrics_path_label(enum wh_mpath p)
{
    return wh_routes[(unsigned)p < WH_MPATH__COUNT ? p : WH_MPATH_OTHER].label;
}

struct wh_metrics *wh_metrics_new(void)
{
    struct wh_metrics *m = calloc(1, sizeof(struct wh_metrics));
    if (m)
        m->started = (long long)time(NULL);
    return m;
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

void wh_metrics_admission(struct wh_metrics *m, enum wh_mpath path, const struct wh_madmission *a)
{
    if ((unsigned)path >= WH_MPATH__COUNT)
        path = WH_MPATH_OTHER;
    const struct wh_kind_def *def = wh_kind_find(a->kind);
    size_t k = def && def->metrics_label ? (size_t)wh_kind_row_of(def) : K_OTHER;
    enum reason r = a->allowed             ? (a->n_ops ? R_PATCHED : R_NO_PATCH)
                    : a->state_unavailable ? R_STATE_UNAVAILABLE
                                           : R_INVALID;
    inc(&m->admissions[path][k][r], 1);
    inc(&m->patch_ops, (long long)a->n_ops);
}

void wh_metrics_cert(struct wh_metrics *m, time_t not_after)
{
    atomic_store(&m->cert_not_after, (long long)not_after);
}

void wh_metrics_client_ca(struct wh_metrics *m, time_t not_after)
{
    atomic_store(&m->client_ca_not_after, (long long)not_after);
    atomic_store(&m->client_ca, true);
}

void wh_metrics_tls_reload(struct wh_metrics *m, bool ok)
{
    inc(&m->reloads[ok ? 1 : 0], 1);
}

void wh_metrics_tls_refused(struct wh_metrics *m, bool refused)
{
    atomic_store(&m->cert_refused, refused ? 1 : 0);
}

void wh_metrics_tls_client_refused(struct wh_metrics *m, long long total)
{
    atomic_store(&m->client_ca, true);
    atomic_store(&m->client_refused, total);
}

void wh_metrics_timeout(struct wh_metrics *m)
{
    inc(&m->timeouts, 1);
}

void wh_metrics_shed(struct wh_metrics *m, enum wh_mshed why, long long n)
{
    if ((unsigned)why < WH_SHED__COUNT)
        inc(&m->shed[why], n);
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
                err = wh_buf_addf(b,
                                  "tpu_webhook_http_requests_total{path=\"%s\",code=\"other\"} %lld\n",
                                  wh_routes[p].label, v);
            else
                err = wh_buf_addf(b,
                                  "tpu_webhook_http_requests_total{path=\"%s\",code=\"%d\"} %lld\n",
                                  wh_routes[p].label, codes[c], v);
        }
    return err;
}

static enum wh_err render_latency(const struct wh_metrics *m, struct wh_buf *b)
{
    const char *name = "tpu_webhook_http_request_duration_seconds";
    enum wh_err err = head(b, name, "histogram",
                           "Time from request headers to the last byte of the answer.");
    for (size_t p = 0; !err && p < WH_MPATH__COUNT; p++) {
        const struct hist *h = &m->latency[p];
        if (!get(&h->count) && !wh_routes[p].admission) /* admissions: always */
            continue;
        long long cum = 0;
        for (size_t i = 0; !err && i <= N_BOUNDS; i++) {
            cum += get(&h->bucket[i]);
            if (i < N_BOUNDS)
                err = wh_buf_addf(b, "%s_bucket{path=\"%s\",le=\"%g\"} %lld\n", name,
                                  wh_routes[p].label, (double)bounds_us[i] / 1e6, cum);
            else
                err = wh_buf_addf(b, "%s_bucket{path=\"%s\",le=\"+Inf\"} %lld\n", name,
                                  wh_routes[p].label, cum);
        }
        /* _count is the +Inf bucket as rendered: requests ending while this
         * runs must not leave the two disagreeing, as Prometheus requires. */
        if (!err)
            err = wh_buf_addf(b, "%s_sum{path=\"%s\"} %.6f\n%s_count{path=\"%s\"} %lld\n", name,
                              wh_routes[p].label, (double)get(&h->sum_us) / 1e6, name,
                              wh_routes[p].label, cum);
    }
    return err;
}

/* The webhook's main traffic (KubeRay pods on /mutate, RayClusters on
 * /validate) shows every reason from the start, zero or not, so that alerts
 * and dashboards have their series before the first denial; any other
 * (path, kind) appears once it has counted something. */
static bool always_shown(size_t path, size_t kind)
{
    enum wh_kind class = kind == K_OTHER ? WH_KIND_OTHER : wh_kinds[kind].review;
    return (path == WH_MPATH_MUTATE && class == WH_KIND_POD) ||
           (path == WH_MPATH_VALIDATE && class == WH_KIND_RAYCLUSTER);
}

static enum wh_err render_admissions(const struct wh_metrics *m, struct wh_buf *b)
{
    enum wh_err err = head(b, "tpu_webhook_admissions_total", "counter",
                           "AdmissionReviews answered, by route, object kind, decision and reason.");
    for (size_t p = 0; !err && p < WH_MPATH__COUNT; p++)
        for (size_t k = 0; !err && k < N_KINDS; k++)
            for (size_t r = 0; !err && kind_label(k) && r < N_REASONS; r++) {
                long long v = get(&m->admissions[p][k][r]);
                if (!v && !always_shown(p, k))
                    continue;
                err = wh_buf_addf(b,
                                  "tpu_webhook_admissions_total{path=\"%s\",kind=\"%s\","
                                  "decision=\"%s\",reason=\"%s\"} %lld\n",
                                  wh_routes[p].label, kind_label(k),
                                  r <= R_NO_PATCH ? "allowed" : "denied", reason_labels[r], v);
            }
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

/* Worker-id claims through the API server. */
static enum wh_err render_claims(const struct wh_mclaims *c, struct wh_buf *b)
{
    enum wh_err err = gauge(b, "tpu_webhook_claims_in_flight", "gauge",
                            "Worker-id claim Leases in the API server (all replicas), as of the "
                            "last sweep.",
                            (long long)c->objects);
    if (!err)
        err = head(b, "tpu_webhook_claims_total", "counter",
                   "Worker-id claims asked of the API server, by outcome (taken; held by "
                   "another claim; failed: the pod was denied).");
    if (!err)
        err = wh_buf_addf(b,
                          "tpu_webhook_claims_total{result=\"taken\"} %llu\n"
                          "tpu_webhook_claims_total{result=\"held\"} %llu\n"
                          "tpu_webhook_claims_total{result=\"failed\"} %llu\n",
                          (unsigned long long)c->taken, (unsigned long long)c->held,
                          (unsigned long long)c->failed);
    if (!err)
        err = gauge(b, "tpu_webhook_claim_api_errors_total", "counter",
                    "Claim and sweep calls the API server failed or did not answer (retries "
                    "included).",
                    (long long)c->api_errors);
    if (!err)
        err = head(b, "tpu_webhook_claims_superseded_total", "counter",
                   "Worker-id claims superseded, by reason (cluster_recreated: a claim of a "
                   "deleted instance of the RayCluster, deleted for the new instance's pod; "
                   "pod_holds_id: a claim this replica took and gave up, a live pod held the "
                   "id).");
    if (!err)
        err = wh_buf_addf(b,
                          "tpu_webhook_claims_superseded_total{reason=\"cluster_recreated\"} %llu\n"
                          "tpu_webhook_claims_superseded_total{reason=\"pod_holds_id\"} %llu\n",
                          (unsigned long long)c->superseded_recreated,
                          (unsigned long long)c->superseded_pod);
    if (!err)
        err = gauge(b, "tpu_webhook_claims_released_total", "counter",
                    "Worker-id claims this replica gave back before they expired: the pod "
                    "carrying their nonce was being deleted.",
                    (long long)c->released);
    if (!err)
        err = gauge(b, "tpu_webhook_claims_expired_deleted_total", "counter",
                    "Expired worker-id claims this replica's sweeper deleted.", (long long)c->swept);
    if (!err)
        err = gauge(b, "tpu_webhook_claim_sweeps_failed_total", "counter",
                    "Sweeps whose LIST of claims failed.", (long long)c->sweeps_failed);
    if (!err)
        err = head(b, "tpu_webhook_claim_duration_seconds", "histogram",
                   "Time to claim one worker id, retries included.");
    for (size_t i = 0; i < WH_MCLAIM_BUCKETS && !err; i++)
        err = wh_buf_addf(b, "tpu_webhook_claim_duration_seconds_bucket{le=\"%g\"} %llu\n",
                          wh_mclaim_bounds[i], (unsigned long long)c->dur_buckets[i]);
    if (!err)
        err = wh_buf_addf(b,
                          "tpu_webhook_claim_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                          "tpu_webhook_claim_duration_seconds_sum %.6f\n"
                          "tpu_webhook_claim_duration_seconds_count %llu\n",
                          (unsigned long long)c->dur_count, c->dur_sum_s,
                          (unsigned long long)c->dur_count);
    return err;
}

/* "name{resource="pods"} v\nname{resource="nodes"} v\n" after its header. */
static enum wh_err per_resource(struct wh_buf *b, const char *name, const char *help, double pods,
                                double nodes)
{
    enum wh_err err = head(b, name, "gauge", help);
    if (!err)
        err = wh_buf_addf(b, "%s{resource=\"pods\"} %g\n%s{resource=\"nodes\"} %g\n", name, pods,
                          name, nodes);
    return err;
}

static enum wh_err render_server(const struct wh_metrics *m, const struct wh_mlive *live,
                                 struct wh_buf *b)
{
    enum wh_err err = gauge(b, "tpu_webhook_http_requests_in_flight", "gauge",
                            "Requests being read, answered or sent.", get(&m->in_flight));
    if (!err && live)
        err = gauge(b, "tpu_webhook_http_open_connections", "gauge",
                    "Client connections open (TLS handshakes and idle keep-alives included).",
                    live->connections);
    /* Not the request memory held: against a known budget it would tell a
     * client how much more to send to fill it. What was shed says that the
     * budget ran short, and why (docs/deploy.md, Memory). */
    if (!err)
        err = head(b, "tpu_webhook_http_shed_total", "counter",
                   "Connections cut to make room: reason slow_body when request memory ran "
                   "short (the slowest bodies go first), idle when connection slots ran short "
                   "(the longest idle go first).");
    if (!err)
        err = wh_buf_addf(b,
                          "tpu_webhook_http_shed_total{reason=\"slow_body\"} %lld\n"
                          "tpu_webhook_http_shed_total{reason=\"idle\"} %lld\n",
                          get(&m->shed[WH_SHED_SLOW_BODY]), get(&m->shed[WH_SHED_IDLE]));
    if (!err)
        err = gauge(b, "tpu_webhook_http_connections_timed_out_total", "counter",
                    "Connections cut off for sending their request too slowly.", get(&m->timeouts));
    if (!err && live)
        err = gauge(b, "tpu_webhook_ready", "gauge",
                    "1 when /readyz answers 200 (caches synced, not shutting down).", live->ready);
    if (!err)
        err = gauge(b, "tpu_webhook_tls_cert_not_after_timestamp_seconds", "gauge",
                    "Expiry (Unix time) of the serving certificate.", get(&m->cert_not_after));
    if (!err && atomic_load(&m->client_ca))
        err = gauge(b, "tpu_webhook_tls_client_ca_not_after_timestamp_seconds", "gauge",
                    "Earliest expiry (Unix time) of the --client-ca-file CAs: after it, the API "
                    "server's client certificate is refused and every admission fails.",
                    get(&m->client_ca_not_after));
    if (!err)
        err = head(b, "tpu_webhook_tls_reloads_total", "counter",
                   "Certificate changes seen on disk, by result.");
    if (!err)
        err = wh_buf_addf(b,
                          "tpu_webhook_tls_reloads_total{result=\"ok\"} %lld\n"
                          "tpu_webhook_tls_reloads_total{result=\"rejected\"} %lld\n",
                          get(&m->reloads[1]), get(&m->reloads[0]));
    if (!err)
        err = gauge(b, "tpu_webhook_tls_cert_refused", "gauge",
                    "1 while the certificate files hold a pair that is not served (expired, not "
                    "valid yet, another name, key mismatch, unreadable), or a client CA file "
                    "that is not used; the one before serves.",
                    get(&m->cert_refused));
    if (!err && atomic_load(&m->client_ca))
        err = gauge(b, "tpu_webhook_tls_client_certs_refused_total", "counter",
                    "TLS handshakes refused because the client's certificate is not signed by "
                    "--client-ca-file (or not for client authentication).",
                    get(&m->client_refused));
    return err;
}

static enum wh_err render_pipeline(const struct wh_mgauges *st, struct wh_buf *b)
{
    enum wh_err err = per_resource(
        b, "tpu_webhook_cache_synced",
        "1 once the cache has listed its resource from the API server (always 1 standalone).",
        st->pods_synced, st->nodes_synced);
    if (!err)
        err = per_resource(b, "tpu_webhook_cache_watch_down_seconds",
                           "How long the cache's watch has been down (0 while it is current).",
                           (double)st->pods_down_ms / 1e3, (double)st->nodes_down_ms / 1e3);
    if (!err)
        err = gauge(b, "tpu_webhook_cache_pods_trusted", "gauge",
                    "1 when the pod cache may be used to assign legacy-path worker ids.",
                    st->pods_trusted);
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
    if (!err)
        err = gauge(b, "tpu_webhook_legacy_reviews_total", "counter",
                    "Legacy-path pod reviews (worker ids assigned from cluster state).",
                    (long long)st->legacy_reviews);
    if (!err)
        err = head(b, "tpu_webhook_legacy_lock_wait_seconds_total", "counter",
                   "Time legacy-path reviews waited for their worker group's ledger entry.");
    if (!err)
        err = wh_buf_addf(b, "tpu_webhook_legacy_lock_wait_seconds_total %.6f\n",
                          (double)st->legacy_wait_us / 1e6);
    if (!err && st->claims)
        err = render_claims(&st->claim, b);
    if (!err && st->events)
        err = head(b, "tpu_webhook_events_total", "counter",
                   "Kubernetes Events about warned pods' workloads, by result (sent; failed: "
                   "the API server refused or did not answer; dropped: the queue was full; "
                   "deduplicated: within the window of one for the same object and reason; "
                   "limited: over the Events of its namespace in one window; unverified: "
                   "the API server has no workload of the uid the pod names).");
    if (!err && st->events)
        err = wh_buf_addf(b,
                          "tpu_webhook_events_total{result=\"sent\"} %llu\n"
                          "tpu_webhook_events_total{result=\"failed\"} %llu\n"
                          "tpu_webhook_events_total{result=\"dropped\"} %llu\n"
                          "tpu_webhook_events_total{result=\"deduplicated\"} %llu\n"
                          "tpu_webhook_events_total{result=\"limited\"} %llu\n"
                          "tpu_webhook_events_total{result=\"unverified\"} %llu\n",
                          (unsigned long long)st->event.sent, (unsigned long long)st->event.failed,
                          (unsigned long long)st->event.dropped,
                          (unsigned long long)st->event.deduplicated,
                          (unsigned long long)st->event.limited,
                          (unsigned long long)st->event.unverified);
    return err;
}

/* The decimal number at *p followed by one of the bytes in stop; advances
 * *p past that byte. False when there is none, or it does not fit. */
static bool statm_field(const char **p, const char *stop, long long *out)
{
    if (**p < '0' || **p > '9')
        return false; /* strtoll would also take spaces and a sign */
    char *end;
    errno = 0;
    *out = strtoll(*p, &end, 10);
    if (errno || !*end || !strchr(stop, *end))
        return false;
    *p = end + 1;
    return true;
}

/* Virtual and resident size in pages: the first two fields of
 * /proc/self/statm. False when it cannot be read. */
static bool statm_pages(long long *vm, long long *rss)
{
    char text[256];
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return false;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = text;
    /* Each at most 2^63 / 2^16 pages, so that pages * page size fits. */
    return statm_field(&p, " ", vm) && statm_field(&p, " \n", rss) && *vm < (1LL << 47) &&
           *rss < (1LL << 47);
}

/* The standard process metrics of Prometheus client libraries, from /proc
 * (left out where it cannot be read). */
static enum wh_err render_process(const struct wh_metrics *m, struct wh_buf *b)
{
    struct rusage ru;
    enum wh_err err = WH_OK;
    if (!getrusage(RUSAGE_SELF, &ru)) {
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
        err = head(b, "process_cpu_seconds_total", "counter", "User and system CPU time.");
        if (!err)
            err = wh_buf_addf(b, "process_cpu_seconds_total %.6f\n", cpu);
    }
    long page = sysconf(_SC_PAGESIZE);
    long long vm_pages, rss_pages;
    if (page > 0 && statm_pages(&vm_pages, &rss_pages)) {
        if (!err)
            err = gauge(b, "process_resident_memory_bytes", "gauge", "Resident memory size.",
                        rss_pages * page);
        if (!err)
            err = gauge(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size.",
                        vm_pages * page);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        long long entries = 0;
        while (readdir(d))
            entries++;
        closedir(d);
        /* Not ".", ".." and the descriptor reading the directory. */
        if (!err && entries >= 3)
            err = gauge(b, "process_open_fds", "gauge", "Open file descriptors.", entries - 3);
    }
    struct rlimit rl;
    if (!err && !getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
        err = gauge(b, "process_max_fds", "gauge", "Limit of open file descriptors.",
                    (long long)rl.rlim_cur);
    if (!err)
        err = gauge(b, "process_start_time_seconds", "gauge", "Start time (Unix time).", m->started);
    return err;
}

/* The build, as Prometheus exporters' *_build_info: the value is 1, the
 * labels say which build answers (wh/buildinfo.h). */
static enum wh_err render_build_info(struct wh_buf *b)
{
    enum wh_err err = head(b, "tpu_webhook_build_info", "gauge",
                           "1, labelled with the version and git commit of this build.");
    if (!err)
        err = wh_buf_addf(b, "tpu_webhook_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                          wh_build_version(), wh_build_commit());
    return err;
}

enum wh_err wh_metrics_render(const struct wh_metrics *m, const struct wh_mgauges *g,
                              const struct wh_mlive *live, struct wh_buf *out)
{
    enum wh_err err = render_build_info(out);
    if (!err)
        err = render_requests(m, out);
    if (!err)
        err = render_latency(m, out);
    if (!err)
        err = render_admissions(m, out);
    if (!err)
        err = render_server(m, live, out);
    if (!err && g)
        err = render_pipeline(g, out);
    if (!err)
        err = render_process(m, out);
    return err;
}
