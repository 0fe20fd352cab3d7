/* cmd_serve.c: `tpu-webhook serve`, the HTTPS admission webhook.
 *
 * Flags are the reference's (--bind-address, --tls-cert-file,
 * --tls-private-key-file, --server-cert, --server-key, --kube-config-path,
 * --v) plus limits of our own. Choosing the TLS source follows the
 * reference: the file pair when both are set, else the base64 pair when both
 * are set, else the default files; mixing the two kinds is fatal. Unlike the
 * reference, the default files are watched too (cert-manager renewals apply
 * without a restart).
 *
 * The main thread owns signals and housekeeping: it waits for SIGTERM or
 * SIGINT while ticking the server (slow-client cut-off); on a signal it
 * drains the server and exits 0. The certificate files are polled on a
 * thread of their own, so that a stalled filesystem under the Secret mount
 * holds up reloads only, never signals or deadlines.
 */
#include <pthread.h> /* pthread_create */
#include <signal.h>  /* sigtimedwait */
#include <stdio.h>   /* snprintf */
#include <stdlib.h>  /* free */
#include <string.h>  /* strcmp, memset */
#include <time.h>    /* struct timespec */
#include <unistd.h>  /* sysconf */

#include "wh/admit.h"     /* wh_admit_new, wh_admit_decide, wh_admit_ready, wh_admit_stats */
#include "wh/memtune.h"   /* wh_memtune_server */
#include "wh/reqmem.h"    /* wh_reqmem_install */
#include "wh/b64.h"       /* wh_b64_decode */
#include "wh/claims.h"    /* WH_CLAIMS_MIN_LIFETIME_S */
#include "wh/clock.h"     /* wh_clock_deadline, wh_clock_wait_flag */
#include "wh/commands.h"  /* wh_cmd_serve, struct wh_serve_pipeline */
#include "flags.h"        /* wh_flags_command, wh_flags_bad */
#include "wh/log.h"       /* wh_log */
#include "wh/metrics.h"   /* wh_metrics_new */
#include "wh/server.h"    /* wh_server_start */
#include "wh/slices.h"    /* wh_slices_debug, wh_slices_metrics, WH_SLICES_DEFAULT_INTERVAL_MS */
#include "wh/tls.h"       /* wh_tls_new, wh_tls_poll, wh_tls_refused, wh_tls_client_ca_on */
#include "version.h"      /* wh_version_print */
#include "wh/buildinfo.h" /* wh_build_* */

#define DEFAULT_CERT_FILE "/etc/kuberay-tpu-webhook/tls/tls.crt"
#define DEFAULT_KEY_FILE "/etc/kuberay-tpu-webhook/tls/tls.key"
#define TICK_MS 100
/* At exit, how long to wait for a certificate read in progress. */
#define WATCH_STOP_MS 2000

static const char usage_head[] =
    "usage: tpu-webhook serve [flags]\n"
    "\n"
    "Serves the admission webhook over HTTPS: POST /mutate (TPU worker pods),\n"
    "POST /validate (RayClusters), POST /mutate-workload (TPU pods of Jobs, JobSets,\n"
    "LeaderWorkerSets, single pods), POST /validate-workload (Jobs, JobSets,\n"
    "LeaderWorkerSets), GET / (200 kuberay-tpu-webhook), /healthz,\n"
    "/readyz, /metrics and (with --debug-slices) /debug/slices. Flags accept -flag, --flag, -flag=value and\n"
    "--flag value. TLS comes from --tls-cert-file/--tls-private-key-file (watched\n"
    "and reloaded), else --server-cert/--server-key (base64 PEM), else\n"
    "" DEFAULT_CERT_FILE " and tls.key beside it (watched); the two\n"
    "kinds of flags may not be combined. SIGTERM or SIGINT: /readyz turns 503,\n"
    "serving goes on for --shutdown-delay, then stop accepting, answer what is in\n"
    "flight, exit 0.\n"
    "\n"
    "flags:\n";

struct config {
    const char *bind, *cert_file, *key_file, *cert_b64, *key_b64, *kubeconfig, *claims_ns;
    const char *dns_names; /* --tls-dns-names */
    const char *client_ca; /* --client-ca-file */
    const char *klog_str;  /* klog flags we accept and ignore */
    bool standalone, klog_bool, version, debug_slices;
    long v, max_body, max_body_memory, max_request_memory, threads, max_conns, max_conns_per_client;
    long max_client_memory, min_body_rate;
    long idle_ms, header_ms, request_ms, shutdown_ms, delay_ms, poll_ms, reservation_ttl_ms;
    long claim_lifetime_ms, slice_ms, events_window_ms;
    const char *changed; /* the flags set to other than their default, a JSON object */
};

/* Tests only (tests/kube/test_replicas.py): run without worker-id claims to
 * show the duplicates several replicas produce without them. */
#define CLAIMS_OFF_ENV "TPU_WEBHOOK_TEST_DISABLE_CLAIMS"

static long default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 2 ? 2 : n > 16 ? 16 : n;
}

/* Base64 as Go's StdEncoding reads it: line breaks (base64 without -w0) are
 * skipped. */
static enum wh_err decode_b64(const char *text, struct wh_buf *out)
{
    struct wh_buf flat;
    wh_buf_init(&flat, 4 << 20);
    enum wh_err err = WH_OK;
    for (const char *p = text; *p && !err; p++)
        if (*p != '\n' && *p != '\r')
            err = wh_buf_addc(&flat, *p);
    if (!err)
        err = wh_b64_decode(out, wh_buf_ptr(&flat), wh_buf_len(&flat));
    wh_buf_free(&flat);
    return err;
}

/* The TLS source, by the reference's rules. */
static int tls_options(const struct config *c, const struct wh_flag *flags, size_t n,
                       struct wh_tls_opts *t, struct wh_buf *cert, struct wh_buf *key)
{
    bool file_any = wh_flags_find(flags, n, "tls-cert-file")->set ||
                    wh_flags_find(flags, n, "tls-private-key-file")->set;
    bool b64_any = wh_flags_find(flags, n, "server-cert")->set ||
                   wh_flags_find(flags, n, "server-key")->set;
    if (file_any && b64_any) {
        /* The reference's words (exit 1 too). */
        (void)wh_flags_bad("serve",
                           "Configuration error: both TLS base64 and path flags defined at the "
                           "same time. Use either --tls-cert-file/--tls-private-key-file or "
                           "--server-cert/--server-key.");
        return -1;
    }
    memset(t, 0, sizeof(*t));
    if (c->cert_file && *c->cert_file && c->key_file && *c->key_file) {
        t->cert_file = c->cert_file;
        t->key_file = c->key_file;
    } else if (c->cert_b64 && *c->cert_b64 && c->key_b64 && *c->key_b64) {
        const char *which = "cert";
        if (decode_b64(c->cert_b64, cert) || (which = "key", decode_b64(c->key_b64, key))) {
            char why[160];
            snprintf(why, sizeof(why),
                     "failed to decode server %s: --server-%s is not valid base64; encode the "
                     "PEM file with base64 -w0",
                     which, which);
            (void)wh_flags_bad("serve", why);
            return -1;
        }
        t->cert_pem = wh_buf_ptr(cert);
        t->cert_len = wh_buf_len(cert);
        t->key_pem = wh_buf_ptr(key);
        t->key_len = wh_buf_len(key);
    } else {
        t->cert_file = DEFAULT_CERT_FILE;
        t->key_file = DEFAULT_KEY_FILE;
    }
    t->dns_names = c->dns_names;
    t->client_ca_file = c->client_ca;
    return 0;
}

static void update_cert_metric(struct wh_tls *tls, struct wh_metrics *m)
{
    struct wh_cert_info info;
    wh_tls_current(tls, &info);
    wh_metrics_cert(m, info.not_after);
    if (wh_tls_client_ca_on())
        wh_metrics_client_ca(m, wh_tls_client_ca_not_after(tls));
}

/* The certificate watcher: polls the files every poll_ms until stopped.
 * Heap-allocated: if a read never returns, the watcher is abandoned at exit
 * together with what it uses (tls, metrics). */
struct cert_watch {
    struct wh_tls *tls;
    struct wh_metrics *m;
    long poll_ms;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* stop asked, or the thread finished */
    bool stop, done;
    pthread_t th;
};

static void *cert_watch_main(void *arg)
{
    struct cert_watch *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        struct timespec until;
        wh_clock_deadline(&until, w->poll_ms);
        if (wh_clock_wait_flag(&w->wake, &w->lock, &w->stop, &until))
            break;
        pthread_mutex_unlock(&w->lock);
        int r = wh_tls_poll(w->tls);
        if (r)
            wh_metrics_tls_reload(w->m, r > 0);
        if (r > 0)
            update_cert_metric(w->tls, w->m);
        wh_metrics_tls_refused(w->m, wh_tls_refused(w->tls));
        if (wh_tls_client_ca_on())
            wh_metrics_tls_client_refused(w->m, wh_tls_client_refusals());
        pthread_mutex_lock(&w->lock);
    }
    w->done = true;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static struct cert_watch *cert_watch_start(struct wh_tls *tls, struct wh_metrics *m, long poll_ms)
{
    struct cert_watch *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->tls = tls;
    w->m = m;
    w->poll_ms = poll_ms;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->lock, NULL);
    if (pthread_create(&w->th, NULL, cert_watch_main, w)) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

/* Stop the watcher, waiting at most wait_ms. True when it stopped (w is
 * freed); false when it is stuck in a read (w, its tls and metrics must be
 * left allocated; the process is about to exit). NULL-safe. */
static bool cert_watch_stop(struct cert_watch *w, long wait_ms)
{
    if (!w)
        return true;
    struct timespec until;
    wh_clock_deadline(&until, wait_ms);
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_broadcast(&w->wake);
    bool done = wh_clock_wait_flag(&w->wake, &w->lock, &w->done, &until);
    pthread_mutex_unlock(&w->lock);
    if (!done) {
        wh_log(WH_LOG_WARN, "tls_watch_stuck", "reason", WH_F_STR,
               "a certificate file read has not returned (stalled filesystem?); exiting anyway",
               (char *)NULL);
        pthread_detach(w->th);
        return false;
    }
    pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return true;
}

/* Logs readiness (/readyz) when it changes; *last: -1 before the first
 * call, then 0 or 1. */
static void log_readiness(const struct wh_pipeline *pl, int *last)
{
    char why[WH_ERRBUF_LEN] = "";
    int ready = pl->ready(pl->ctx, why, sizeof(why)) ? 1 : 0;
    if (ready == *last)
        return;
    char msg[WH_ERRBUF_LEN + 16];
    snprintf(msg, sizeof(msg), "%s%s", ready ? "ready" : "not ready: ", ready ? "" : why);
    wh_log_msg(WH_LOG_NOTICE, "readiness_changed", msg, "ready", WH_F_BOOL, ready, "reason",
               WH_F_STR, ready ? "" : why, (char *)NULL);
    *last = ready;
}

/* Wait for SIGTERM/SIGINT, doing housekeeping every tick. */
static int run_until_signal(const sigset_t *set, struct wh_server *srv, const struct wh_pipeline *pl)
{
    struct timespec tick = {0, TICK_MS * 1000000L};
    int ready = -1;
    for (;;) {
        log_readiness(pl, &ready);
        int sig = sigtimedwait(set, NULL, &tick);
        if (sig == SIGTERM || sig == SIGINT)
            return sig;
        wh_server_tick(srv);
    }
}

/* After signal sig: drain (c's delay and timeout), stop and free srv,
 * logging the start and the outcome with the server's counts. */
static void shut_down(struct wh_server *srv, const struct wh_metrics *m, const struct config *c,
                      int sig)
{
    wh_log(WH_LOG_NOTICE, "shutting_down", "signal", WH_F_STR, sig == SIGTERM ? "SIGTERM" : "SIGINT",
           "in_flight", WH_F_INT, wh_metrics_in_flight(m), "delay_ms", WH_F_INT,
           (long long)c->delay_ms, "timeout_ms", WH_F_INT, (long long)c->shutdown_ms, (char *)NULL);
    bool clean = wh_server_drain(srv, c->delay_ms, c->shutdown_ms);
    /* Counted after the stop: requests it cuts off are aborted ones. */
    wh_server_stop(srv);
    struct wh_server_counts counts;
    wh_server_counts(srv, &counts);
    wh_server_free(srv);
    wh_log(clean ? WH_LOG_NOTICE : WH_LOG_WARN, "shutdown", "clean", WH_F_BOOL, (int)clean,
           "accepted", WH_F_INT, counts.accepted, "answered", WH_F_INT, counts.answered, "aborted",
           WH_F_INT, counts.aborted, (char *)NULL);
}

/* The server's view of the legacy-id pipeline (wh/admit.h): the wiring
 * between the http and admit rooms, which do not know each other. */
static enum wh_err admit_decide(void *ctx, const struct wh_review *rv, enum wh_route route,
                                struct wh_engine_result *res, char *errbuf)
{
    return wh_admit_decide(ctx, rv, route, res, errbuf);
}

static bool admit_ready(void *ctx, char *why, size_t why_len)
{
    return wh_admit_ready(ctx, why, why_len);
}

static void admit_stats(void *ctx, struct wh_mgauges *st)
{
    wh_admit_stats(ctx, st);
}

static bool admit_may_wait(void *ctx, const struct wh_review *rv, enum wh_route route)
{
    return wh_admit_may_wait(ctx, rv, route);
}

static enum wh_err admit_slices(void *ctx, bool debug, struct wh_buf *out)
{
    struct wh_slices *s = wh_admit_slices(ctx);
    if (!s)
        return WH_ERR_UNAVAILABLE;
    return debug ? wh_slices_debug(s, out) : wh_slices_metrics(s, out);
}

static bool admit_start(const struct wh_admit_opts *o, struct wh_pipeline *pl, char *errbuf)
{
    struct wh_admit *ad = wh_admit_new(o, errbuf);
    *pl = (struct wh_pipeline){.ctx = ad,
                               .decide = admit_decide,
                               .ready = admit_ready,
                               .stats = admit_stats,
                               .may_wait = admit_may_wait,
                               .slices = admit_slices};
    return ad != NULL;
}

static void admit_stop(struct wh_pipeline *pl)
{
    wh_admit_free(pl->ctx);
    pl->ctx = NULL;
}

const struct wh_serve_pipeline wh_serve_admit = {.start = admit_start, .stop = admit_stop};

static void startup_failed(const char *what, const char *detail)
{
    char msg[2 * WH_ERRBUF_LEN];
    snprintf(msg, sizeof(msg), "failed to start server: %s%s%s", what, *detail ? ": " : "", detail);
    wh_log_msg(WH_LOG_CRITICAL, "startup_failed", msg, "reason", WH_F_STR, what, "detail", WH_F_STR,
               detail, (char *)NULL);
}

/* The first line: what runs, and how it was configured. */
static void log_start(const struct config *c)
{
    const char *ns = c->claims_ns && *c->claims_ns ? c->claims_ns : getenv("POD_NAMESPACE");
    char msg[128];
    snprintf(msg, sizeof(msg), "tpu-webhook %s (%s) starting", wh_build_version(),
             wh_build_commit());
    wh_log_msg(WH_LOG_NOTICE, "starting", msg, "version", WH_F_STR, wh_build_version(), "commit",
               WH_F_STR, wh_build_commit(), "build_date", WH_F_STR, wh_build_date(), "mode",
               WH_F_STR, c->standalone ? "standalone" : "kubernetes", "bind_address", WH_F_STR,
               c->bind, "claims_namespace", WH_F_STR,
               c->standalone ? ""
               : ns && *ns   ? ns
                             : "(the service account's)",
               "verbosity", WH_F_INT, (long long)c->v, "flags", WH_F_JSON, c->changed, (char *)NULL);
}

/* The server's limits, from the flags. */
static struct wh_server_opts server_opts(const struct config *c)
{
    return (struct wh_server_opts){.bind = c->bind,
                                   .threads = (unsigned)c->threads,
                                   .max_connections = (unsigned)c->max_conns,
                                   .max_connections_per_client = (unsigned)c->max_conns_per_client,
                                   .idle_timeout_ms = c->idle_ms,
                                   .header_timeout_ms = c->header_ms,
                                   .request_timeout_ms = c->request_ms,
                                   .max_body = (size_t)c->max_body,
                                   .max_request_memory = (size_t)c->max_request_memory,
                                   .max_body_memory = (size_t)c->max_body_memory,
                                   .debug_slices = c->debug_slices,
                                   .max_client_memory = (size_t)c->max_client_memory,
                                   .min_body_rate = c->min_body_rate};
}

static int serve(const struct config *c, const struct wh_tls_opts *topts,
                 const struct wh_serve_pipeline *sp)
{
    int rc = 1;
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_tls *tls = NULL;
    struct wh_pipeline pl;
    bool pl_started = false;
    struct wh_server *srv = NULL;
    struct cert_watch *watch = NULL;
    struct wh_metrics *m = wh_metrics_new();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    /* Before any thread exists, so that only sigtimedwait sees them. */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    log_start(c);
    if (!m) {
        startup_failed("out of memory", "");
        goto out;
    }
    tls = wh_tls_new(topts, errbuf);
    if (!tls) {
        startup_failed("failed to build TLS config", errbuf);
        goto out;
    }
    update_cert_metric(tls, m);
    if (wh_tls_client_ca_on())
        wh_metrics_tls_client_refused(m, 0);
    struct wh_admit_opts aopts = {.standalone = c->standalone,
                                  .kubeconfig_path = c->kubeconfig,
                                  .reservation_ttl_ms = c->reservation_ttl_ms,
                                  .claims_namespace = c->claims_ns,
                                  .claim_lifetime_s = (c->claim_lifetime_ms + 999) / 1000,
                                  .slice_check_interval_ms = c->slice_ms > 0 ? c->slice_ms : -1,
                                  .events_window_ms = c->events_window_ms,
                                  .claims_off = getenv(CLAIMS_OFF_ENV) &&
                                                !strcmp(getenv(CLAIMS_OFF_ENV), "1")};
    wh_memtune_server();
    wh_reqmem_install(); /* before the caches start their threads */
    pl_started = sp->start(&aopts, &pl, errbuf);
    if (!pl_started) {
        startup_failed("admission pipeline", errbuf);
        goto out;
    }
    struct wh_server_opts sopts = server_opts(c);
    srv = wh_server_start(&sopts, &pl, m, errbuf);
    if (!srv) {
        startup_failed("server", errbuf);
        goto out;
    }
    wh_log(WH_LOG_NOTICE, "listening", "bind_address", WH_F_STR, c->bind, "port", WH_F_INT,
           (long long)wh_server_port(srv), "standalone", WH_F_BOOL, (int)c->standalone, "threads",
           WH_F_INT, (long long)c->threads, (char *)NULL);
    watch = cert_watch_start(tls, m, c->poll_ms);
    if (!watch) {
        startup_failed("no thread to watch the certificate files", "");
        goto out;
    }
    shut_down(srv, m, c, run_until_signal(&set, srv, &pl));
    srv = NULL;
    rc = 0;
out:
    wh_server_free(srv);
    if (pl_started)
        sp->stop(&pl);
    if (cert_watch_stop(watch, WATCH_STOP_MS)) {
        wh_tls_free(tls);
        wh_metrics_free(m);
    }
    return rc;
}

/* --claim-lifetime, in whole seconds as the Lease stores it, is at least
 * WH_CLAIMS_MIN_LIFETIME_S; says why on stderr when not. */
static bool claim_lifetime_ok(const struct config *c)
{
    if (!c->claim_lifetime_ms || (c->claim_lifetime_ms + 999) / 1000 >= WH_CLAIMS_MIN_LIFETIME_S)
        return true;
    char why[512];
    snprintf(why, sizeof(why),
             "invalid value %ldms for flag -claim-lifetime: the minimum "
             "is %lds, twice the %lds a replica may spend making one worker-id claim (a "
             "claim must outlive every claim of the same id still being made, see "
             "docs/legacy-indices.md)",
             c->claim_lifetime_ms, (long)WH_CLAIMS_MIN_LIFETIME_S,
             (long)(WH_CLAIMS_DEFAULT_BUDGET_MS / 1000));
    (void)wh_flags_bad("serve", why);
    return false;
}

/* serve, once the flags are read. */
static int run(struct config *c, const struct wh_flag *flags, size_t n,
               const struct wh_serve_pipeline *sp)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    if (!claim_lifetime_ok(c))
        return 2;
    struct sockaddr_storage ss;
    socklen_t sl;
    if (wh_server_parse_bind(c->bind, &ss, &sl, errbuf))
        return wh_flags_bad("serve", errbuf);
    /* One body of the limit must fit, with room to parse and answer it (the
     * server's floor, wh/server.h): below it, say so rather than raise it. */
    long req_min = 2 * c->max_body + 1024 * 1024, all_min = c->max_body + 64 * 1024;
    bool client_set = wh_flags_find(flags, n, "max-client-memory")->set;
    if ((wh_flags_find(flags, n, "max-request-memory")->set && c->max_request_memory < req_min) ||
        (wh_flags_find(flags, n, "max-body-memory")->set && c->max_body_memory < all_min) ||
        (client_set && c->max_client_memory < all_min)) {
        bool req = c->max_request_memory < req_min;
        bool client = !req && client_set && c->max_client_memory < all_min;
        char why[256];
        snprintf(why, sizeof(why),
                 "invalid value %ld for flag -%s: the minimum is %ld (%s with --max-body-bytes=%ld)",
                 req      ? c->max_request_memory
                 : client ? c->max_client_memory
                          : c->max_body_memory,
                 req      ? "max-request-memory"
                 : client ? "max-client-memory"
                          : "max-body-memory",
                 req ? req_min : all_min,
                 req ? "2 x --max-body-bytes + 1 MiB" : "--max-body-bytes + 64 KiB", c->max_body);
        return wh_flags_bad("serve", why);
    }
    /* The API server opens a connection per concurrent webhook call: up to
     * its --max-requests-inflight + --max-mutating-requests-inflight (600 by
     * default), often from one address. Three quarters of the 1024 default
     * stays above that and leaves a quarter to everyone else. */
    if (!wh_flags_find(flags, n, "max-connections-per-client")->set)
        c->max_conns_per_client = c->max_conns * 3 / 4 > 0 ? c->max_conns * 3 / 4 : 1;
    struct wh_buf cert, key;
    wh_buf_init(&cert, 1 << 20);
    wh_buf_init(&key, 1 << 20);
    struct wh_tls_opts topts;
    int rc = 1;
    if (!tls_options(c, flags, n, &topts, &cert, &key))
        rc = serve(c, &topts, sp);
    wh_buf_free(&cert);
    wh_buf_free(&key);
    return rc;
}

/* Whether flag f's value in c differs from the same field in d (a copy of
 * c with the defaults). */
static bool differs(const struct wh_flag *f, const struct config *c, const struct config *d)
{
    const void *dv = (const char *)d + ((const char *)f->dst - (const char *)c);
    switch (f->type) {
    case WH_FLAG_STR: {
        const char *a = *(const char *const *)f->dst, *b = *(const char *const *)dv;
        return strcmp(a ? a : "", b ? b : "") != 0;
    }
    case WH_FLAG_BOOL: return *(const bool *)f->dst != *(const bool *)dv;
    default: return *(const long *)f->dst != *(const long *)dv;
    }
}

/* out: {"flag":"value",...} for every flag whose value is not its default
 * (the base64 certificate and key as their length only: the key is a
 * secret). */
static enum wh_err changed_flags(const struct wh_flag *flags, size_t n, const struct config *c,
                                 const struct config *d, struct wh_buf *out)
{
    enum wh_err err = wh_buf_addc(out, '{');
    bool first = true;
    for (size_t i = 0; i < n && !err; i++) {
        const struct wh_flag *f = &flags[i];
        if (!f->set || !differs(f, c, d))
            continue;
        char val[64];
        const char *v = val;
        if (f->type == WH_FLAG_STR)
            v = *(const char *const *)f->dst;
        if (f->type == WH_FLAG_STR && !strncmp(f->name, "server-", 7))
            snprintf(val, sizeof(val), "(%zu bytes)", strlen(v)), v = val;
        else if (f->type == WH_FLAG_BOOL)
            v = *(const bool *)f->dst ? "true" : "false";
        else if (f->type != WH_FLAG_STR)
            snprintf(val, sizeof(val), "%ld%s", *(const long *)f->dst,
                     f->type == WH_FLAG_DURATION ? "ms" : "");
        err = wh_buf_addf(out, "%s\"%s\":", first ? "" : ",", f->name);
        if (!err)
            err = wh_buf_add_json_string(out, v ? v : "", strlen(v ? v : ""));
        first = false;
    }
    if (!err)
        err = wh_buf_addc(out, '}');
    return err;
}

int wh_cmd_serve(int argc, char **argv)
{
    return wh_cmd_serve_with(argc, argv, &wh_serve_admit);
}

int wh_cmd_serve_with(int argc, char **argv, const struct wh_serve_pipeline *sp)
{
    struct config c = {.bind = ":443",
                       .max_body = (long)WH_SERVER_MAX_BODY_DEFAULT,
                       .max_body_memory = (long)WH_REQMEM_TOTAL_DEFAULT,
                       .max_request_memory = (long)WH_REQMEM_REQUEST_DEFAULT,
                       .threads = default_threads(),
                       .max_conns = 1024,
                       .idle_ms = 90000,
                       .header_ms = 10000,
                       .request_ms = 30000,
                       .min_body_rate = WH_SERVER_MIN_BODY_RATE_DEFAULT,
                       .shutdown_ms = 20000,
                       .poll_ms = 1000,
                       .slice_ms = WH_SLICES_DEFAULT_INTERVAL_MS};
    /* One flag a line: a table, read down its columns. */
    /* clang-format off */
    struct wh_flag flags[] = {
        {"bind-address", WH_FLAG_STR, &c.bind, 0, 0, "listen address [host]:port (default :443)", false},
        {"tls-cert-file", WH_FLAG_STR, &c.cert_file, 0, 0, "PEM certificate file, watched and reloaded", false},
        {"tls-private-key-file", WH_FLAG_STR, &c.key_file, 0, 0, "PEM private key file, watched and reloaded", false},
        {"client-ca-file", WH_FLAG_STR, &c.client_ca, 0, 0, "PEM CA(s) that must sign a client certificate for the admission routes (the API server's; docs/deploy.md); probes and /metrics need none; watched and reloaded", false},
        {"tls-dns-names", WH_FLAG_STR, &c.dns_names, 0, 0, "comma-separated DNS names a reloaded certificate must name, e.g. kuberay-tpu-webhook.ray-system.svc; otherwise the old one keeps serving (default: the <service>.<namespace>.svc names of the certificate loaded at start)", false},
        {"server-cert", WH_FLAG_STR, &c.cert_b64, 0, 0, "base64 of a PEM certificate (static)", false},
        {"server-key", WH_FLAG_STR, &c.key_b64, 0, 0, "base64 of a PEM private key (static)", false},
        {"kubeconfig", WH_FLAG_STR, &c.kubeconfig, 0, 0, "kubeconfig file; empty: in-cluster config", false},
        {"kube-config-path", WH_FLAG_STR, &c.kubeconfig, 0, 0, "alias of --kubeconfig (the reference's name)", false},
        {"v", WH_FLAG_INT, &c.v, 0, 10, "log verbosity: 0 start-up, TLS loads, readiness, shutdown, warnings and errors; 1 also one line per admission; 2 debug", false},
        {"standalone", WH_FLAG_BOOL, &c.standalone, 0, 0, "no Kubernetes API: legacy indices come from this process's own admissions", false},
        {"max-body-bytes", WH_FLAG_INT, &c.max_body, 1024, (long)WH_REVIEW_MAX_BYTES, "request body limit (default 3145728, the API server's)", false},
        {"max-body-memory", WH_FLAG_INT, &c.max_body_memory, 1024, 1L << 40, "memory of the requests in flight, all connections (bodies, parsed reviews, answers); more get 503 (default 134217728)", false},
        {"max-request-memory", WH_FLAG_INT, &c.max_request_memory, 1024, 1L << 40, "memory one request may use (body, parsed review, answer); more gets 500 (default 33554432, at least 2 x --max-body-bytes + 1 MiB)", false},
        {"max-client-memory", WH_FLAG_INT, &c.max_client_memory, 1024, 1L << 40, "memory the request bodies of one client IP may hold at once; more get 503 (default: half of --max-body-memory)", false},
        {"min-body-rate", WH_FLAG_INT, &c.min_body_rate, 0, 1L << 30, "bytes per second a request body must average after its first 5s, or the connection is cut; 0: no minimum (default 16384)", false},
        {"threads", WH_FLAG_INT, &c.threads, 1, 256, "request threads (default: CPUs, 2 to 16)", false},
        {"max-connections", WH_FLAG_INT, &c.max_conns, 1, 100000, "connections served at once; more wait in the listen queue (default 1024)", false},
        {"max-connections-per-client", WH_FLAG_INT, &c.max_conns_per_client, 1, 100000, "connections one client IP may hold; more are closed at once (default: 3/4 of --max-connections)", false},
        {"idle-timeout", WH_FLAG_DURATION, &c.idle_ms, 1000, 3600000, "close kept-alive connections idle this long (default 90s)", false},
        {"header-timeout", WH_FLAG_DURATION, &c.header_ms, 100, 600000, "connect to complete request headers, TLS handshake included (default 10s)", false},
        {"request-timeout", WH_FLAG_DURATION, &c.request_ms, 100, 600000, "request headers to complete answer (default 30s)", false},
        {"shutdown-timeout", WH_FLAG_DURATION, &c.shutdown_ms, 0, 600000, "longest wait for in-flight requests on SIGTERM (default 20s)", false},
        {"shutdown-delay", WH_FLAG_DURATION, &c.delay_ms, 0, 600000, "after SIGTERM, keep serving this long while /readyz says 503 (default 0s)", false},
        {"cert-poll-interval", WH_FLAG_DURATION, &c.poll_ms, 100, 3600000, "how often certificate files are checked (default 1s)", false},
        {"reservation-ttl", WH_FLAG_DURATION, &c.reservation_ttl_ms, 0, 3600000, "legacy-index reservations not seen in the pod cache expire (default: pipeline's)", false},
        {"claims-namespace", WH_FLAG_STR, &c.claims_ns, 0, 0, "namespace of the worker-id claim Leases (default: $POD_NAMESPACE, else the service account's)", false},
        {"claim-lifetime", WH_FLAG_DURATION, &c.claim_lifetime_ms, 1000, 3600000, "a legacy worker-id claim holds its id this long, whole seconds, at least 6s (default 60s)", false},
        {"slice-check-interval", WH_FLAG_DURATION, &c.slice_ms, 0, 3600000, "Kubernetes mode: how often the live slice check (doctor's rules on the caches) looks for changes; 0 turns it off (default 5s)", false},
        {"events-window", WH_FLAG_DURATION, &c.events_window_ms, 1, 3600000, "Kubernetes mode: one Event per workload and warning reason in this window, later warnings counted into the next (default 1m)", false},
        {"debug-slices", WH_FLAG_BOOL, &c.debug_slices, 0, 0, "serve GET /debug/slices (the broken slices the live check found, JSON) on the HTTPS port, as /metrics is", false},
        {"version", WH_FLAG_BOOL, &c.version, 0, 0, "print the version, commit and library versions, and exit", false},
        /* klog flags the reference's manifests might pass: accepted, ignored. */
        {"logtostderr", WH_FLAG_BOOL, &c.klog_bool, 0, 0, "", false},
        {"alsologtostderr", WH_FLAG_BOOL, &c.klog_bool, 0, 0, "", false},
        {"stderrthreshold", WH_FLAG_STR, &c.klog_str, 0, 0, "", false},
        {"vmodule", WH_FLAG_STR, &c.klog_str, 0, 0, "", false},
        {"log_dir", WH_FLAG_STR, &c.klog_str, 0, 0, "", false},
    };
    /* clang-format on */
    size_t n = sizeof(flags) / sizeof(flags[0]);
    const struct config defaults = c;
    int exit_now = wh_flags_command(flags, n, argc, argv, "serve", usage_head);
    if (exit_now >= 0)
        return exit_now;
    if (c.version) {
        wh_version_print(stdout, NULL);
        return fflush(stdout) ? 2 : 0;
    }
    wh_log_set_verbosity((int)c.v);
    struct wh_buf changed;
    wh_buf_init(&changed, 1 << 16);
    c.changed = changed_flags(flags, n, &c, &defaults, &changed) ? "{}" : wh_buf_ptr(&changed);
    int rc = run(&c, flags, n, sp);
    wh_buf_free(&changed);
    return rc;
}
