/* server_route.c: request handling and routes (see server_route.h). */
#include "server_route.h"

#include <errno.h>      /* errno */
#include <stdatomic.h>  /* atomic_* */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* calloc, free, strtoull */
#include <string.h>     /* memset */
#include <sys/socket.h> /* shutdown */

#include <microhttpd.h>

#include "wh/buf.h"     /* wh_buf */
#include "wh/clock.h"   /* wh_clock_us, wh_clock_ms */
#include "httpreq.h"    /* wh_http_framing, wh_http_target_problem */
#include "wh/routes.h"  /* wh_routes, wh_route_find, wh_route_allows, wh_routes_not_found */
#include "wh/log.h"     /* wh_log */
#include "wh/metrics.h" /* wh_metrics_render, wh_metrics_begin, wh_metrics_end */
#include "wh/tls.h"     /* wh_tls_client_verified */
#include "wh/reqmem.h" /* wh_reqmem_get, wh_reqmem_put, wh_reqmem_body_add, wh_reqmem_body_free, wh_arena_hold */
#include "server_admit.h"  /* wh_srv_admit */
#include "server_answer.h" /* wh_srv_reply, wh_srv_reply_error, wh_srv_reply_text */
#include "server_conn.h"   /* wh_srv_conn_of, wh_srv_conn_body, wh_srv_shed_slow_bodies */
#include "mhd/mhderr.h"    /* wh_mhderr_unmark */
#include "mhd/tlsrec.h"    /* wh_tlsrec_flush */

#define ROOT_BODY "kuberay-tpu-webhook"
#define BUSY_MESSAGE "the webhook holds too many request bodies at once; retry"

#define DEBUG_SLICES_OFF                                                                       \
    "/debug/slices is off: start tpu-webhook serve with --debug-slices (Kubernetes mode; the " \
    "chart's debugSlices value, docs/troubleshooting.md)"

#define NO_SLICE_CHECK                                                           \
    "no live slice check runs: it needs Kubernetes mode (not --standalone) and " \
    "--slice-check-interval above 0"

/* The live slice check's broken slices (wh/slices.h), when turned on. */
static enum MHD_Result serve_debug_slices(struct wh_server *s, struct MHD_Connection *c,
                                          struct request *rq)
{
    if (!s->o.debug_slices || !s->pl.slices)
        return wh_srv_reply_error(s, c, rq, 404, DEBUG_SLICES_OFF, NULL);
    struct wh_buf b;
    wh_buf_init(&b, 64u << 20);
    enum MHD_Result ret;
    enum wh_err err = s->pl.slices(s->pl.ctx, true, &b);
    if (err == WH_ERR_UNAVAILABLE)
        ret = wh_srv_reply_error(s, c, rq, 404, NO_SLICE_CHECK, NULL);
    else if (err)
        ret = wh_srv_reply_error(s, c, rq, 500, "the slice report does not fit in 64 MiB", NULL);
    else
        ret = wh_srv_reply(s, c, rq, 200, "application/json", wh_buf_ptr(&b), wh_buf_len(&b), NULL);
    wh_buf_free(&b);
    return ret;
}

static enum MHD_Result serve_get(struct wh_server *s, struct MHD_Connection *c, struct request *rq)
{
    char why[256] = "";
    struct wh_mlive live;
    switch (rq->path) {
    case WH_MPATH_ROOT: return wh_srv_reply_text(s, c, rq, 200, ROOT_BODY);
    case WH_MPATH_HEALTHZ: return wh_srv_reply_text(s, c, rq, 200, "ok\n");
    case WH_MPATH_READYZ:
        if (atomic_load(&s->unready))
            return wh_srv_reply_text(s, c, rq, 503, "shutting down\n");
        if (!s->pl.ready(s->pl.ctx, why, sizeof(why))) {
            char msg[300];
            snprintf(msg, sizeof(msg), "not ready: %s\n", why);
            return wh_srv_reply_text(s, c, rq, 503, msg);
        }
        return wh_srv_reply_text(s, c, rq, 200, "ok\n");
    case WH_MPATH_DEBUG_SLICES: return serve_debug_slices(s, c, rq);
    default: break;
    }
    struct wh_mgauges st;
    memset(&st, 0, sizeof(st));
    s->pl.stats(s->pl.ctx, &st);
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    enum MHD_Result ret;
    live.ready = !atomic_load(&s->unready) && s->pl.ready(s->pl.ctx, NULL, 0);
    live.connections = atomic_load(&s->n_conns);
    enum wh_err err = wh_metrics_render(s->m, &st, &live, &b);
    if (!err && s->pl.slices && (err = s->pl.slices(s->pl.ctx, false, &b)) == WH_ERR_UNAVAILABLE)
        err = WH_OK; /* no slice check, no slice metrics */
    if (err)
        ret = wh_srv_reply_error(s, c, rq, 500, "metrics do not fit in 1 MiB", NULL);
    else
        ret = wh_srv_reply(s, c, rq, 200, "text/plain; version=0.0.4; charset=utf-8",
                           wh_buf_ptr(&b), wh_buf_len(&b), NULL);
    wh_buf_free(&b);
    return ret;
}

static struct request *request_new(struct wh_server *s, struct MHD_Connection *c, const char *url)
{
    struct request *rq = calloc(1, sizeof(*rq));
    if (!rq)
        return NULL;
    rq->path = wh_route_find(url);
    rq->start_us = wh_clock_us();
    rq->deadline_ms = wh_clock_ms() + s->o.request_timeout_ms;
    struct conn *cn = wh_srv_conn_of(c);
    if (cn) {
        atomic_store(&cn->deadline_ms, rq->deadline_ms);
        atomic_store(&cn->idle_since_ms, -1); /* busy: never shed as idle */
    }
    atomic_fetch_add(&s->active, 1);
    atomic_fetch_add(&s->accepted, 1);
    wh_metrics_begin(s->m);
    return rq;
}

/* ---- hostile HTTP: what libmicrohttpd would let through (httpreq.h) ----- */

/* MHD's URI log callback sees the request target before it is unescaped
 * (the handler only gets the path cut at its first NUL). The verdict waits
 * on the connection for the handler's first call; NULL keeps MHD's
 * per-request pointer ours to allocate. */
void *wh_srv_on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    struct conn *cn = wh_srv_conn_of(c);
    if (cn)
        cn->target_problem = wh_http_target_problem(uri, strlen(uri));
    return NULL;
}

static enum MHD_Result add_framing_line(void *cls, enum MHD_ValueKind kind, const char *key,
                                        const char *value)
{
    (void)kind;
    wh_http_framing_add(cls, key, strlen(key), value ? value : "", value ? strlen(value) : 0);
    return MHD_YES;
}

/* Why the request cannot be served safely, or NULL. Such a request is
 * answered 400 and its connection closed: where its body ends (and the
 * next request starts) is not known. */
static const char *hostile_request(struct MHD_Connection *c)
{
    struct conn *cn = wh_srv_conn_of(c);
    if (cn && cn->target_problem)
        return cn->target_problem;
    struct wh_http_framing f;
    wh_http_framing_init(&f);
    MHD_get_connection_values(c, MHD_HEADER_KIND, add_framing_line, &f);
    return wh_http_framing_problem(&f);
}

/* The connection's deadline while a body arrives: the request's, or sooner
 * for a body slower than --min-body-rate (WH_SERVER_BODY_GRACE_MS to start,
 * then each byte buys 1/rate s) or one that pauses for longer than the
 * grace, so that a header block followed by a trickle, or by most of its
 * body and then nothing, is cut long before --request-timeout. Bytes that
 * are discarded (a refused body) count as arriving. */
static void pace_body(struct wh_server *s, struct MHD_Connection *c, const struct request *rq)
{
    struct conn *cn = wh_srv_conn_of(c);
    if (!cn || s->o.min_body_rate <= 0)
        return;
    long long due = rq->body_t0_ms + WH_SERVER_BODY_GRACE_MS +
                    (long long)(rq->received * 1000 / (unsigned long long)s->o.min_body_rate);
    if (due > rq->body_last_ms + WH_SERVER_BODY_GRACE_MS)
        due = rq->body_last_ms + WH_SERVER_BODY_GRACE_MS;
    bool sooner = due < rq->deadline_ms;
    atomic_store(&cn->body_rate, sooner);
    atomic_store(&cn->deadline_ms, sooner ? due : rq->deadline_ms);
}

/* The body is in: the request's own deadline again. */
static void body_done(struct wh_server *s, struct MHD_Connection *c, const struct request *rq)
{
    struct conn *cn = wh_srv_conn_of(c);
    if (!cn)
        return;
    wh_srv_conn_body(s, cn, NULL, 0); /* in: never shed as a stalled body */
    atomic_store(&cn->body_rate, false);
    atomic_store(&cn->deadline_ms, rq->deadline_ms);
}

/* First call for a request: answer what needs no body, vet what does. No
 * memory is taken for the body yet: it is charged as it arrives. */
#define NO_CLIENT_CERT                                                                         \
    "this webhook requires a client certificate signed by its --client-ca-file for admission " \
    "routes: give the API server one (docs/deploy.md, client certificates)"

/* The client sent a certificate the handshake verified (or none is asked
 * for): the admission routes are the API server's alone. */
static bool client_verified(struct MHD_Connection *c)
{
    if (!wh_tls_client_ca_on())
        return true;
    const union MHD_ConnectionInfo *si = MHD_get_connection_info(c,
                                                                 MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return si && wh_tls_client_verified(si->tls_session);
}

/* A body that will be refused: whether to answer before it. A client
 * waiting for "100 Continue" never sends it, and one declared unreadable or
 * over twice the limit is not worth reading (nor would the discarding in
 * handle() read it whole). Any other client is already sending. */
static bool early_answer(const struct wh_server *s, struct MHD_Connection *c, const char *cl)
{
    const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    if (expect && strcasestr(expect, "100-continue"))
        return true;
    if (!cl)
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(cl, &end, 10);
    return errno || end == cl || n > 2 * (unsigned long long)s->o.max_body;
}

static enum MHD_Result first_call(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                                  const char *method)
{
    const struct wh_route_def *route = &wh_routes[rq->path];
    const char *hostile = hostile_request(c);
    if (hostile) {
        rq->close = true;
        return wh_srv_reply_error(s, c, rq, 400, hostile, NULL);
    }
    if (!route->path)
        return wh_srv_reply_error(s, c, rq, 404, wh_routes_not_found(), NULL);
    if (!wh_route_allows(rq->path, method))
        return wh_srv_reply_error(s, c, rq, 405, route->method_hint, route->allow);
    if (!route->admission)
        return serve_get(s, c, rq); /* probes and metrics take no request memory */
    if (!client_verified(c)) {
        /* The body is never stored nor charged, but read and discarded
         * like a too-big one (below): closing on a client still sending
         * loses the 403 in a TCP reset. */
        rq->close = true;
        rq->refused = true;
    }
    struct conn *cn = wh_srv_conn_of(c);
    rq->body.share = cn && cn->cl ? &cn->cl->share : NULL;
    rq->body_limit = s->o.max_body;
    rq->body_t0_ms = rq->body_last_ms = rq->rate_t0_ms = wh_clock_ms();
    wh_srv_conn_body(s, cn, &rq->body, rq->body_last_ms);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (rq->refused) {
        if (early_answer(s, c, cl))
            return wh_srv_reply_error(s, c, rq, 403, NO_CLIENT_CERT, NULL);
    } else if (cl) {
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        bool unreadable = errno || end == cl;
        if (unreadable || n > s->o.max_body) {
            /* A client waiting for "100 Continue" never sends the body, and a
             * grossly oversized one is not worth reading: answer now. Any
             * other client is already sending; closing on it would lose the
             * answer in a TCP reset, so that body is discarded as it comes
             * (never stored) and the 413 follows. */
            if (early_answer(s, c, cl)) {
                char msg[160];
                snprintf(msg, sizeof(msg), "request body of %s bytes is over the %zu-byte limit",
                         cl, s->o.max_body);
                return wh_srv_reply_error(s, c, rq, 413, msg, NULL);
            }
            rq->too_big = true;
        } else {
            rq->body_limit = (size_t)n; /* what the steps of the body stop at */
        }
    }
    pace_body(s, c, rq);
    return MHD_YES;
}

/* Append n body bytes to the body, which grows in steps as they arrive
 * (wh/reqmem.h). false when the body is over its limit or the memory
 * refuses; a refused body gives back what it held at once. */
static bool add_body(struct wh_server *s, struct conn *cn, struct request *rq, const char *p,
                     size_t n)
{
    if (n > rq->body_limit - rq->body.len) {
        rq->too_big = true;
        return false;
    }
    enum wh_reqmem_refusal r = wh_reqmem_body_add(s->rm, &rq->body, p, n, rq->body_limit);
    /* Short of memory: the stalled bodies go first (server_conn.h). */
    if ((r == WH_REQMEM_OVER_TOTAL || r == WH_REQMEM_OVER_SHARE) &&
        wh_srv_shed_slow_bodies(s, cn, n + 1, r == WH_REQMEM_OVER_SHARE ? rq->body.share : NULL))
        r = wh_reqmem_body_add(s->rm, &rq->body, p, n, rq->body_limit);
    if (r == WH_REQMEM_TAKEN)
        return true;
    rq->busy = true;
    rq->busy_share = r == WH_REQMEM_OVER_SHARE;
    wh_reqmem_body_free(s->rm, &rq->body);
    return false;
}

static enum MHD_Result refuse_busy_body(struct wh_server *s, struct MHD_Connection *c,
                                        struct request *rq)
{
    if (!rq->busy_share)
        return wh_srv_reply_error(s, c, rq, 503, BUSY_MESSAGE, NULL);
    char msg[256];
    snprintf(msg, sizeof(msg),
             "the webhook holds too many request bodies at once from this client (more than "
             "%zu bytes, --max-client-memory); retry",
             s->o.max_client_memory);
    return wh_srv_reply_error(s, c, rq, 503, msg, NULL);
}

/* The whole body is in: the request's arena, charged for the body too. */
static enum MHD_Result body_in(struct wh_server *s, struct MHD_Connection *c, struct request *rq)
{
    body_done(s, c, rq);
    if (rq->refused)
        return wh_srv_reply_error(s, c, rq, 403, NO_CLIENT_CERT, NULL);
    if (rq->too_big) {
        char msg[160];
        snprintf(msg, sizeof(msg), "request body is over the %zu-byte limit", s->o.max_body);
        return wh_srv_reply_error(s, c, rq, 413, msg, NULL);
    }
    if (rq->busy)
        return refuse_busy_body(s, c, rq);
    if (!rq->arena) {
        /* Room to parse and answer it, made by shedding stalled bodies. */
        size_t want = 2 * rq->body.len + WH_SRV_ANSWER_ROOM;
        size_t room = wh_reqmem_room(s->rm);
        if (room < want)
            (void)wh_srv_shed_slow_bodies(s, wh_srv_conn_of(c), want - room, NULL);
        rq->arena = wh_reqmem_get(s->rm);
        if (!rq->arena)
            return wh_srv_reply_error(s, c, rq, 503, BUSY_MESSAGE, NULL);
        /* Over the request's budget: the arena is exhausted, and the
         * review fails whole with the budget named (server_admit.c). */
        (void)wh_arena_hold(rq->arena, rq->body.cap);
        wh_reqmem_bind(rq->arena); /* wh_srv_on_request restores the binding */
    }
    return wh_srv_admit(s, c, rq);
}

static enum MHD_Result handle(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                              const char *method, const char *upload, size_t *upload_size,
                              bool first)
{
    if (first)
        return first_call(s, c, rq, method);
    if (rq->status) { /* answered already; drop whatever still arrives */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        /* A body that outgrows the limit: MHD cannot answer mid-upload, so
         * the rest is discarded (never stored) up to twice the limit, then
         * the connection is closed without an answer. */
        rq->received += *upload_size;
        rq->body_last_ms = wh_clock_ms();
        struct conn *cn = wh_srv_conn_of(c);
        rq->rate_bytes += *upload_size;
        if (rq->body_last_ms - rq->rate_t0_ms >= WH_SRV_RATE_WINDOW_MS) {
            long long bps = (long long)rq->rate_bytes * 1000 / (rq->body_last_ms - rq->rate_t0_ms);
            if (cn)
                atomic_store(&cn->body_rate_bps, bps);
            rq->rate_t0_ms = rq->body_last_ms;
            rq->rate_bytes = 0;
        }
        if (cn)
            atomic_store(&cn->body_last_ms, rq->body_last_ms);
        if (rq->refused || rq->too_big || rq->busy || !add_body(s, cn, rq, upload, *upload_size))
            rq->discarded += *upload_size;
        *upload_size = 0;
        pace_body(s, c, rq);
        return rq->discarded > 2 * s->o.max_body ? MHD_NO : MHD_YES;
    }
    return body_in(s, c, rq);
}

enum MHD_Result wh_srv_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    struct wh_server *s = cls;
    struct request *rq = *con_cls;
    bool first = !rq;
    if (first) {
        rq = request_new(s, c, url);
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
    }
    /* The thread serves other connections between calls: bind per call. */
    struct wh_arena *before = wh_reqmem_bind(rq->arena);
    enum MHD_Result ret = handle(s, c, rq, method, upload, upload_size, first);
    wh_reqmem_bind(before);
    return ret;
}

void wh_srv_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct wh_server *s = cls;
    struct request *rq = *con_cls;
    if (!rq)
        return;
    *con_cls = NULL;
    bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && rq->status;
    /* Counted before a corked answer leaves: a client that reads the answer
     * and then asks /metrics finds it counted. */
    wh_metrics_end(s->m, rq->path, ok ? (int)rq->status : 0, wh_clock_us() - rq->start_us);
    atomic_fetch_add(ok ? &s->answered : &s->aborted, 1);
    /* Flushed whatever the outcome: an answer queued before the request
     * ended early (a refused body, then the connection closes) must still
     * leave. */
    if (rq->corked && !wh_tlsrec_flush(rq->corked, rq->corked_fd)) {
        /* The socket did not take a record it had room for when it was
         * corked (a dead peer, a full socket): waiting would stall every
         * connection of this thread, so the answer is lost, and the
         * connection with it (MHD sees the shutdown on its next read). */
        shutdown(rq->corked_fd, SHUT_RDWR);
        wh_log(WH_LOG_WARN, "answer_unsent", "path", WH_F_STR, wh_metrics_path_label(rq->path),
               "reason", WH_F_STR, "the client's socket did not take the answer", (char *)NULL);
    }
    /* Sent (flushed included) or given up: what libmicrohttpd writes on the
     * session from now on is its own again. */
    if (rq->mark)
        wh_mhderr_unmark(rq->marked, rq->mark);
    struct conn *cn = wh_srv_conn_of(c);
    wh_srv_conn_body(s, cn, NULL, 0); /* before the body goes */
    if (cn) {
        long long now = wh_clock_ms();
        atomic_store(&cn->deadline_ms, now + s->o.idle_timeout_ms + s->o.header_timeout_ms);
        if (ok)
            atomic_store(&cn->served, true);
        atomic_store(&cn->idle_since_ms, now);
    }
    /* The review and the result are blocks of the arena (the hooks that
     * wh_server_start installed put everything allocated while it is bound
     * there): the reset releases them without walking the tree. */
    wh_reqmem_put(s->rm, rq->arena);
    wh_reqmem_body_free(s->rm, &rq->body);
    free(rq);
    atomic_fetch_sub(&s->active, 1);
}
