/* server.c: HTTPS admission server on libmicrohttpd (see server.h). */
#include "wh/clock.h" /* wh_clock_us, wh_clock_ms */
#include "wh/server.h"

#include <arpa/inet.h>  /* inet_pton */
#include <errno.h>      /* errno */
#include <netdb.h>      /* getnameinfo */
#include <netinet/in.h> /* sockaddr_in6 */
#include <pthread.h>    /* pthread_mutex_t */
#include <stdarg.h>     /* va_list */
#include <stdatomic.h>  /* atomic_* */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* calloc, free, strtoull */
#include <string.h>     /* strcmp, strerror */
#include <time.h>       /* nanosleep */
#include <sys/socket.h> /* shutdown */
#include <unistd.h>     /* close */

#include <microhttpd.h>

#include "wh/buf.h"    /* wh_buf */
#include "wh/httpreq.h" /* wh_http_framing, wh_http_target_problem */
#include "wh/json.h"   /* wh_parse_long */
#include "wh/log.h"    /* wh_log */
#include "wh/mhderr.h" /* wh_mhderr_install */
#include "wh/reqmem.h" /* wh_reqmem, wh_arena */
#include "wh/tls.h"    /* wh_tls_retrieve, WH_TLS_PRIORITIES */
#include "wh/tlsrec.h" /* wh_tlsrec_hold, wh_tlsrec_flush */

#define ROOT_BODY "kuberay-tpu-webhook"
#define BUSY_MESSAGE "the webhook holds too many request bodies at once; retry"
#define ADDR_LEN 64
/* A request's budget covers its body twice (body and parsed tree) plus this. */
#define REQUEST_MEMORY_SLACK ((size_t)1024 * 1024)

/* One open connection, for the slow-client deadline. Linked into the
 * server's list from MHD's connection-started to connection-closed
 * notification; the fd stays valid in between. */
struct conn {
    struct conn *prev, *next;
    int fd;
    atomic_llong deadline_ms;
    bool cut;
    const char *target_problem; /* of the request being read; static text */
    char client[ADDR_LEN];
};

/* One request; lives on MHD's con_cls from the first handler call to the
 * request-completed callback. Everything it makes (body, parsed review,
 * result, answer) is in its arena, bound to the thread while a handler runs
 * for it and reset once the answer has been sent: one parse, no copies. */
struct request {
    enum wh_mpath path;
    long long start_us;
    struct wh_arena *arena; /* admissions only; NULL when the memory refused one */
    char *body;             /* in the arena, sized from Content-Length */
    size_t body_len, body_cap;
    struct wh_review *rv;   /* parsed body, kept until the answer is sent */
    struct wh_engine_result res;
    bool too_big;
    bool busy;        /* over the server's request memory: refused with 503 */
    size_t discarded; /* body bytes dropped after too_big or busy */
    unsigned status; /* answer queued, 0 until then */
    bool close;      /* the answer closes the connection */
    /* Corked for one TLS record (wh/tlsrec.h) until on_completed flushes
     * it; NULL otherwise. MHD's session, not ours. */
    gnutls_session_t corked;
    int corked_fd;
};

struct wh_server {
    struct MHD_Daemon *d;
    /* Ours before MHD starts; MHD's from then on (it closes it in
     * MHD_stop_daemon). */
    int listen_fd;
    /* Set when draining stops accepting: on_accept refuses every new
     * connection. Not MHD_quiesce_daemon: with epoll and a thread pool,
     * libmicrohttpd 0.9.75 aborts when a pool thread removes the listening
     * socket from its epoll set before quiesce does (a race that load
     * exposes; tests/server/slow_epoll_del.c forces it). */
    atomic_bool refuse_new;
    unsigned port;
    struct wh_server_opts o;
    struct wh_admit *ad;
    struct wh_metrics *m;
    atomic_bool unready;  /* /readyz answers 503, answers close their connection */
    atomic_llong active;   /* requests between first call and completion */
    atomic_llong accepted;
    atomic_llong answered;
    atomic_llong aborted;
    atomic_llong n_conns;
    struct wh_reqmem *rm; /* request arenas and their budgets */
    pthread_mutex_t lock; /* the conn list */
    struct conn *conns;
};


/* ---- listen address ---------------------------------------------------- */

enum wh_err wh_server_parse_bind(const char *bind, struct sockaddr_storage *ss, socklen_t *len,
                                 char *errbuf)
{
    memset(ss, 0, sizeof(*ss));
    const char *colon = bind ? strrchr(bind, ':') : NULL;
    if (!colon)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "--bind-address \"%s\": expected [host]:port, e.g. :443 or 127.0.0.1:8443",
                       bind ? bind : "");
    long port;
    if (!wh_parse_long(colon + 1, &port) || port < 0 || port > 65535)
        return wh_fail(errbuf, WH_ERR_INVALID, "--bind-address \"%s\": port must be 0 to 65535",
                       bind);
    char host[128];
    size_t hlen = (size_t)(colon - bind);
    if (hlen >= sizeof(host))
        return wh_fail(errbuf, WH_ERR_INVALID, "--bind-address \"%s\": host too long", bind);
    memcpy(host, bind, hlen);
    host[hlen] = '\0';
    if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
        memmove(host, host + 1, hlen - 2);
        host[hlen - 2] = '\0';
    }
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (!strcmp(host, "localhost"))
        snprintf(host, sizeof(host), "127.0.0.1");
    if (!host[0] || !strcmp(host, "::") || !strcmp(host, "0.0.0.0")) {
        v6->sin6_family = AF_INET6;
        v6->sin6_addr = in6addr_any;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*v6);
        if (!strcmp(host, "0.0.0.0")) {
            v4->sin_family = AF_INET;
            v4->sin_addr.s_addr = htonl(INADDR_ANY);
            v4->sin_port = htons((uint16_t)port);
            *len = sizeof(*v4);
        }
    } else if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof(*v4);
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*v6);
    } else {
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "--bind-address \"%s\": host must be an IP address or localhost "
                       "(names are not resolved)",
                       bind);
    }
    return WH_OK;
}

static enum wh_err open_listener(const struct sockaddr_storage *ss, socklen_t len,
                                 const char *where, int *out, char *errbuf)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_storage any4;
    if (fd < 0 && ss->ss_family == AF_INET6 &&
        IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr)) {
        /* No IPv6 on this host: every IPv4 address instead. */
        struct sockaddr_in *v4 = (struct sockaddr_in *)&any4;
        memset(&any4, 0, sizeof(any4));
        v4->sin_family = AF_INET;
        v4->sin_port = ((const struct sockaddr_in6 *)ss)->sin6_port;
        ss = &any4;
        len = sizeof(*v4);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    }
    if (fd < 0)
        return wh_fail(errbuf, WH_ERR_IO, "socket for %s: %s", where, strerror(errno));
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, (const struct sockaddr *)ss, len) || listen(fd, 1024)) {
        int e = errno;
        close(fd);
        return wh_fail(errbuf, WH_ERR_IO, "cannot listen on %s: %s%s", where, strerror(e),
                       e == EACCES ? " (ports below 1024 need CAP_NET_BIND_SERVICE)" : "");
    }
    *out = fd;
    return WH_OK;
}

/* ---- answers ----------------------------------------------------------- */

/* The response reads body until the request completes: a body in the
 * request's arena is handed over as it is; anything else is copied there
 * first (small texts), or to the heap when the request has no arena. */
static struct MHD_Response *response_for(struct request *rq, const char *body, size_t len)
{
    if (rq->arena && wh_arena_owns(rq->arena, body))
        return MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);
    char *copy = rq->arena ? wh_arena_alloc(rq->arena, len + 1) : NULL;
    if (copy) {
        memcpy(copy, body, len);
        return MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_PERSISTENT);
    }
    copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, body, len);
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, copy, free);
    if (!r)
        free(copy);
    return r;
}

/* Header and body in one TLS record (wh/tlsrec.h): corked now, flushed by
 * on_completed. */
static void hold_records(struct MHD_Connection *c, struct request *rq, size_t len)
{
    const union MHD_ConnectionInfo *tls = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!tls || !fd || rq->corked)
        return;
    gnutls_session_t session = (gnutls_session_t)tls->tls_session;
    if (wh_tlsrec_hold(session, fd->connect_fd, len)) {
        rq->corked = session;
        rq->corked_fd = fd->connect_fd;
    }
}

static enum MHD_Result reply(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                             unsigned status, const char *ctype, const char *body, size_t len,
                             const char *allow)
{
    struct MHD_Response *r = response_for(rq, body, len);
    if (!r)
        return MHD_NO;
    enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (ok)
        ok = MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (ok && allow)
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    /* Shutting down (from SIGTERM on, the delay included: a kept-alive
     * client then reconnects through the Service, to another pod once the
     * endpoint is gone, instead of holding a connection that closes under
     * its next request), or a body we refused to read. */
    if (ok && (atomic_load(&s->unready) || rq->close || status == MHD_HTTP_CONTENT_TOO_LARGE))
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (ok)
        ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    if (ok) {
        rq->status = status;
        hold_records(c, rq, len);
    }
    return ok;
}

static const char *reason_of(unsigned status)
{
    switch (status) {
    case 400: return "BadRequest";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 413: return "RequestEntityTooLarge";
    case 503: return "ServiceUnavailable";
    default: return "InternalError";
    }
}

/* A Kubernetes Status object naming the problem. */
static enum MHD_Result reply_error(struct wh_server *s, struct MHD_Connection *c,
                                   struct request *rq, unsigned status, const char *msg,
                                   const char *allow)
{
    /* An arena that ran out (a body the memory refused) refuses every later
     * allocation: that request's Status comes from the C library's heap. */
    struct wh_arena *spent =
        rq->arena && wh_arena_exhausted(rq->arena) ? wh_reqmem_bind(NULL) : NULL;
    struct wh_buf b;
    wh_buf_init(&b, 8192);
    enum wh_err err = wh_buf_add(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                                     "\"status\":\"Failure\",\"message\":\"");
    if (!err)
        err = wh_buf_add_json_escaped(&b, msg, strlen(msg));
    if (!err)
        err = wh_buf_addf(&b, "\",\"reason\":\"%s\",\"code\":%u}", reason_of(status), status);
    enum MHD_Result ret =
        err ? MHD_NO
            : reply(s, c, rq, status, "application/json", wh_buf_ptr(&b), wh_buf_len(&b), allow);
    wh_buf_free(&b);
    if (spent)
        wh_reqmem_bind(spent);
    return ret;
}

static enum MHD_Result reply_text(struct wh_server *s, struct MHD_Connection *c,
                                  struct request *rq, unsigned status, const char *text)
{
    return reply(s, c, rq, status, "text/plain; charset=utf-8", text, strlen(text), NULL);
}

/* ---- admission ---------------------------------------------------------- */

static void client_of(struct MHD_Connection *c, char *out, size_t len)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    out[0] = '\0';
    if (!ci || !ci->client_addr)
        return;
    socklen_t sl = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                          : sizeof(struct sockaddr_in);
    if (getnameinfo(ci->client_addr, sl, out, (socklen_t)len, NULL, 0, NI_NUMERICHOST))
        out[0] = '\0';
}

static unsigned status_of(enum wh_err err)
{
    switch (err) {
    case WH_ERR_INVALID:
    case WH_ERR_TOOBIG:
    case WH_ERR_KIND: return 400;
    case WH_ERR_UNAVAILABLE: return 503;
    default: return 500;
    }
}

/* Who a review is about, from its one parse; "" for a body that did not
 * parse (a hostile client buys no second parse for its 400). */
static const struct wh_review_info *who(const struct request *rq)
{
    static const struct wh_review_info none = {
        .uid = "", .operation = "", .kind_name = "", .ns = "", .name = "", .cluster = "", .group = ""};
    return rq->rv ? wh_review_info(rq->rv) : &none;
}

/* The engine's notes (skipped pods, ...), one line each. */
static void log_notes(const struct request *rq, const char *notes)
{
    if (!notes || !wh_log_enabled(WH_LOG_INFO))
        return;
    const struct wh_review_info *d = who(rq);
    while (*notes) {
        const char *nl = strchr(notes, '\n');
        size_t n = nl ? (size_t)(nl - notes) : strlen(notes);
        char line[WH_ERRBUF_LEN];
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), notes);
        if (n)
            wh_log(WH_LOG_INFO, "admission_note", "uid", WH_F_STR, d->uid, "namespace", WH_F_STR,
                   d->ns, "cluster", WH_F_STR, d->cluster, "group", WH_F_STR, d->group, "note",
                   WH_F_STR, line, (char *)NULL);
        notes += n + (nl != NULL);
    }
}

static struct conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? (struct conn *)ci->socket_context : NULL;
}

static void log_admission(struct MHD_Connection *c, const struct request *rq, unsigned status,
                          const struct wh_engine_result *res, const char *problem,
                          long long latency_us)
{
    enum wh_log_level level = status >= 500 ? WH_LOG_ERROR : status >= 400 ? WH_LOG_WARN : WH_LOG_INFO;
    if (!wh_log_enabled(level))
        return;
    const struct wh_review_info *d = who(rq);
    /* The connection's address, looked up once when it opened. */
    const struct conn *cn = conn_of(c);
    char client[ADDR_LEN];
    if (cn)
        memcpy(client, cn->client, sizeof(client));
    else
        client_of(c, client, sizeof(client));
    const char *decision = status != 200 ? "error" : res->allowed ? "allowed" : "denied";
    wh_log(level, "admission", "path", WH_F_STR, wh_metrics_path_label(rq->path), "uid", WH_F_STR,
           d->uid, "kind", WH_F_STR, d->kind_name, "namespace", WH_F_STR, d->ns, "name", WH_F_STR,
           d->name, "cluster", WH_F_STR, d->cluster, "group", WH_F_STR, d->group, "decision", WH_F_STR,
           decision, "status", WH_F_INT, (long long)status, "patch_ops", WH_F_INT,
           (long long)(status == 200 ? res->n_ops : 0), "replica", WH_F_INT,
           (long long)(status == 200 && res->assigned ? res->replica : -1), "host", WH_F_INT,
           (long long)(status == 200 && res->assigned ? res->host : -1), "latency_us", WH_F_INT,
           latency_us, "message", WH_F_STR,
           problem ? problem : (res->message ? res->message : ""), "client", WH_F_STR, client,
           (char *)NULL);
}

/* A request whose arena ran out fails as a whole, whatever the engine made
 * of the failed allocation (a parse error, a denial): never half an answer. */
static enum wh_err out_of_memory(const struct wh_server *s, const struct request *rq,
                                 char *errbuf)
{
    switch (wh_arena_exhausted(rq->arena)) {
    case WH_ARENA_BUDGET:
        return wh_fail(errbuf, WH_ERR_INTERNAL,
                       "answering this review needs more than the %zu-byte memory budget of a "
                       "request (--max-request-memory)",
                       wh_arena_budget(rq->arena));
    case WH_ARENA_REFUSED:
        return wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                       "the webhook is answering too many large reviews at once (%zu bytes of "
                       "request memory, --max-body-memory); retry",
                       s->o.max_body_memory);
    default: return WH_OK;
    }
}

static enum MHD_Result admit(struct wh_server *s, struct MHD_Connection *c, struct request *rq)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_route route = rq->path == WH_MPATH_MUTATE            ? WH_ROUTE_MUTATE
                          : rq->path == WH_MPATH_MUTATE_WORKLOAD ? WH_ROUTE_MUTATE_WORKLOAD
                          : rq->path == WH_MPATH_VALIDATE_WORKLOAD ? WH_ROUTE_VALIDATE_WORKLOAD
                                                                   : WH_ROUTE_VALIDATE;
    enum wh_err err = wh_review_parse(rq->body ? rq->body : "", rq->body_len, &rq->rv, errbuf);
    if (!err)
        err = wh_admit_decide(s->ad, rq->rv, route, &rq->res, errbuf);
    enum wh_err oom = out_of_memory(s, rq, errbuf);
    if (oom) {
        /* An allocation failed on the way: nothing of it may be used, and
         * the Status and the log line come from the C library's heap. */
        memset(&rq->res, 0, sizeof(rq->res));
        wh_reqmem_bind(NULL); /* on_request restores its binding after us */
        err = oom;
    }
    enum MHD_Result ret;
    unsigned status = 200;
    if (err) {
        status = status_of(err);
        char msg[WH_ERRBUF_LEN + 64];
        const char *what = err == WH_ERR_KIND ? "wrong kind of object for this path"
                           : status == 400    ? "not an AdmissionReview"
                                              : "cannot answer the review";
        snprintf(msg, sizeof(msg), "%s: %s: %s", wh_metrics_path_label(rq->path), what,
                 errbuf[0] ? errbuf : wh_strerror(err));
        ret = reply_error(s, c, rq, status, msg, NULL);
        log_admission(c, rq, status, &rq->res, msg, wh_clock_us() - rq->start_us);
    } else {
        ret = reply(s, c, rq, 200, "application/json", rq->res.body, rq->res.body_len, NULL);
        struct wh_madmission ma = {.kind = who(rq)->kind_name,
                                   .allowed = rq->res.allowed,
                                   .state_unavailable = rq->res.state_unavailable,
                                   .n_ops = rq->res.n_ops};
        wh_metrics_admission(s->m, rq->path, &ma);
        log_admission(c, rq, 200, &rq->res, NULL, wh_clock_us() - rq->start_us);
        log_notes(rq, rq->res.notes);
    }
    return ret;
}

/* ---- routing ------------------------------------------------------------ */

static bool is_get(const char *method)
{
    return !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
}

static enum MHD_Result serve_get(struct wh_server *s, struct MHD_Connection *c, struct request *rq)
{
    char why[256] = "";
    struct wh_mlive live;
    switch (rq->path) {
    case WH_MPATH_ROOT: return reply_text(s, c, rq, 200, ROOT_BODY);
    case WH_MPATH_HEALTHZ: return reply_text(s, c, rq, 200, "ok\n");
    case WH_MPATH_READYZ:
        if (atomic_load(&s->unready))
            return reply_text(s, c, rq, 503, "shutting down\n");
        if (!wh_admit_ready(s->ad, why, sizeof(why))) {
            char msg[300];
            snprintf(msg, sizeof(msg), "not ready: %s\n", why);
            return reply_text(s, c, rq, 503, msg);
        }
        return reply_text(s, c, rq, 200, "ok\n");
    default: break;
    }
    struct wh_mgauges st;
    memset(&st, 0, sizeof(st));
    wh_admit_stats(s->ad, &st);
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    enum MHD_Result ret;
    live.ready = !atomic_load(&s->unready) && wh_admit_ready(s->ad, NULL, 0);
    live.connections = atomic_load(&s->n_conns);
    if (wh_metrics_render(s->m, &st, &live, &b))
        ret = reply_error(s, c, rq, 500, "metrics do not fit in 1 MiB", NULL);
    else
        ret = reply(s, c, rq, 200, "text/plain; version=0.0.4; charset=utf-8", wh_buf_ptr(&b),
                    wh_buf_len(&b), NULL);
    wh_buf_free(&b);
    return ret;
}

static struct request *request_new(struct wh_server *s, struct MHD_Connection *c, const char *url)
{
    struct request *rq = calloc(1, sizeof(*rq));
    if (!rq)
        return NULL;
    rq->path = wh_http_route(url);
    rq->start_us = wh_clock_us();
    struct conn *cn = conn_of(c);
    if (cn)
        atomic_store(&cn->deadline_ms, wh_clock_ms() + s->o.request_timeout_ms);
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
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    struct conn *cn = conn_of(c);
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
    struct conn *cn = conn_of(c);
    if (cn && cn->target_problem)
        return cn->target_problem;
    struct wh_http_framing f;
    wh_http_framing_init(&f);
    MHD_get_connection_values(c, MHD_HEADER_KIND, add_framing_line, &f);
    return wh_http_framing_problem(&f);
}

/* First call for a request: answer what needs no body, vet what does. */
static enum MHD_Result first_call(struct wh_server *s, struct MHD_Connection *c,
                                  struct request *rq, const char *method)
{
    bool admission = rq->path <= WH_MPATH_VALIDATE_WORKLOAD; /* the admission paths come first */
    const char *hostile = hostile_request(c);
    if (hostile) {
        rq->close = true;
        return reply_error(s, c, rq, 400, hostile, NULL);
    }
    if (rq->path == WH_MPATH_OTHER)
        return reply_error(s, c, rq, 404,
                           "no such path; the webhook serves POST /mutate, /validate, "
                           "/mutate-workload and /validate-workload, GET /, /healthz, /readyz "
                           "and /metrics",
                           NULL);
    if (admission && strcmp(method, MHD_HTTP_METHOD_POST))
        return reply_error(s, c, rq, 405, "use POST with an AdmissionReview body", "POST");
    if (!admission && !is_get(method))
        return reply_error(s, c, rq, 405, "use GET", "GET, HEAD");
    if (!admission)
        return serve_get(s, c, rq); /* probes and metrics take no request memory */
    rq->arena = wh_reqmem_get(s->rm);
    if (!rq->arena)
        return reply_error(s, c, rq, 503, BUSY_MESSAGE, NULL);
    wh_reqmem_bind(rq->arena); /* on_request restores the binding */
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
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
            const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
            if ((expect && strcasestr(expect, "100-continue")) || unreadable ||
                n > 2 * (unsigned long long)s->o.max_body) {
                char msg[160];
                snprintf(msg, sizeof(msg), "request body of %s bytes is over the %zu-byte limit",
                         cl, s->o.max_body);
                return reply_error(s, c, rq, 413, msg, NULL);
            }
            rq->too_big = true;
        } else if (n) {
            /* The whole body in one block, allocated once. */
            rq->body = wh_arena_alloc(rq->arena, (size_t)n + 1);
            rq->body_cap = rq->body ? (size_t)n + 1 : 0;
            rq->busy = !rq->body;
        }
    }
    return MHD_YES;
}

/* Append n body bytes: into the block sized from Content-Length, or (no
 * Content-Length) a block that doubles, in place while it is the arena's
 * newest. false when the body is over max_body or the memory refuses. */
static bool add_body(struct wh_server *s, struct request *rq, const char *p, size_t n)
{
    if (n > s->o.max_body - rq->body_len) {
        rq->too_big = true;
        return false;
    }
    if (rq->body_len + n + 1 > rq->body_cap) {
        size_t cap = rq->body_cap ? rq->body_cap : 4096;
        while (cap < rq->body_len + n + 1)
            cap *= 2;
        if (cap > s->o.max_body + 1)
            cap = s->o.max_body + 1;
        char *b = wh_arena_realloc(rq->arena, rq->body, cap);
        if (!b) {
            rq->busy = true;
            return false;
        }
        rq->body = b;
        rq->body_cap = cap;
    }
    memcpy(rq->body + rq->body_len, p, n);
    rq->body_len += n;
    rq->body[rq->body_len] = '\0';
    return true;
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
        if (rq->too_big || rq->busy || !add_body(s, rq, upload, *upload_size))
            rq->discarded += *upload_size;
        *upload_size = 0;
        return rq->discarded > 2 * s->o.max_body ? MHD_NO : MHD_YES;
    }
    if (rq->too_big) {
        char msg[160];
        snprintf(msg, sizeof(msg), "request body is over the %zu-byte limit", s->o.max_body);
        return reply_error(s, c, rq, 413, msg, NULL);
    }
    if (rq->busy)
        return reply_error(s, c, rq, 503, BUSY_MESSAGE, NULL);
    return admit(s, c, rq);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
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

/* How long on_completed waits for a client to take a corked answer: the
 * queue was empty when it was corked, so only a client that stopped reading
 * (or a dead peer) waits at all. */
#define FLUSH_TIMEOUT_MS 1000

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct wh_server *s = cls;
    struct request *rq = *con_cls;
    if (!rq)
        return;
    *con_cls = NULL;
    bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && rq->status;
    /* Flushed whatever the outcome: an answer queued before the request
     * ended early (a refused body, then the connection closes) must still
     * leave. */
    if (rq->corked && !wh_tlsrec_flush(rq->corked, rq->corked_fd, FLUSH_TIMEOUT_MS)) {
        /* The client took nothing for that long: the answer is lost, and
         * the connection with it (MHD sees the shutdown on its next read). */
        ok = false;
        shutdown(rq->corked_fd, SHUT_RDWR);
        wh_log(WH_LOG_WARN, "answer_unsent", "path", WH_F_STR, wh_metrics_path_label(rq->path),
               "reason", WH_F_STR, "the client did not take the answer in time", (char *)NULL);
    }
    wh_metrics_end(s->m, rq->path, ok ? (int)rq->status : 0, wh_clock_us() - rq->start_us);
    atomic_fetch_add(ok ? &s->answered : &s->aborted, 1);
    struct conn *cn = conn_of(c);
    if (cn)
        atomic_store(&cn->deadline_ms,
                     wh_clock_ms() + s->o.idle_timeout_ms + s->o.header_timeout_ms);
    /* The review and the result are blocks of the arena (the hooks that
     * wh_server_start installed put everything allocated while it is bound
     * there): the reset releases them without walking the tree. */
    wh_reqmem_put(s->rm, rq->arena);
    free(rq);
    atomic_fetch_sub(&s->active, 1);
}

/* ---- connections -------------------------------------------------------- */

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct wh_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn *cn = calloc(1, sizeof(*cn));
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!cn || !ci) {
            free(cn); /* without a record the connection only has MHD's idle timeout */
            *socket_context = NULL;
            return;
        }
        cn->fd = ci->connect_fd;
        atomic_store(&cn->deadline_ms, wh_clock_ms() + s->o.header_timeout_ms);
        client_of(c, cn->client, sizeof(cn->client));
        pthread_mutex_lock(&s->lock);
        cn->next = s->conns;
        if (s->conns)
            s->conns->prev = cn;
        s->conns = cn;
        pthread_mutex_unlock(&s->lock);
        atomic_fetch_add(&s->n_conns, 1);
        *socket_context = cn;
        return;
    }
    struct conn *cn = *socket_context;
    if (!cn)
        return;
    pthread_mutex_lock(&s->lock);
    if (cn->prev)
        cn->prev->next = cn->next;
    else
        s->conns = cn->next;
    if (cn->next)
        cn->next->prev = cn->prev;
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_sub(&s->n_conns, 1);
    *socket_context = NULL;
    free(cn);
}

/* Connections cut per tick that get a log line of their own. */
#define TICK_LOG_MAX 16

/* After this long without an admission, pooled arenas give their kept
 * chunks back (the memory of a burst returns to the system). */
#define ARENA_IDLE_MS 1000

void wh_server_tick(struct wh_server *s)
{
    wh_reqmem_trim_idle(s->rm, ARENA_IDLE_MS);
    long long now = wh_clock_ms();
    char clients[TICK_LOG_MAX][ADDR_LEN];
    size_t n_cut = 0;
    pthread_mutex_lock(&s->lock);
    for (struct conn *cn = s->conns; cn; cn = cn->next) {
        if (cn->cut || atomic_load(&cn->deadline_ms) > now)
            continue;
        /* The MHD thread sees end-of-stream and closes the connection itself;
         * the fd is not closed here, so it cannot be reused under MHD. */
        shutdown(cn->fd, SHUT_RDWR);
        cn->cut = true;
        if (n_cut < TICK_LOG_MAX)
            memcpy(clients[n_cut], cn->client, ADDR_LEN);
        n_cut++;
    }
    pthread_mutex_unlock(&s->lock);
    /* Logged outside the lock: MHD threads take it for every connection
     * opened or closed, and a write to a slow stderr must not stall them. */
    for (size_t i = 0; i < n_cut; i++) {
        wh_metrics_timeout(s->m);
        if (i < TICK_LOG_MAX)
            wh_log(WH_LOG_WARN, "connection_timeout", "client", WH_F_STR, clients[i], "reason",
                   WH_F_STR, "request not received in time (slow or stalled client)",
                   (char *)NULL);
    }
    if (n_cut > TICK_LOG_MAX)
        wh_log(WH_LOG_WARN, "connection_timeout", "more_connections", WH_F_INT,
               (long long)(n_cut - TICK_LOG_MAX), "reason", WH_F_STR,
               "request not received in time (slow or stalled clients)", (char *)NULL);
}

/* ---- life cycle --------------------------------------------------------- */

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    /* Mostly per-connection noise (failed handshakes, resets): --v=2. */
    wh_log(WH_LOG_DEBUG, "mhd", "message", WH_F_STR, msg, (char *)NULL);
}

/* MHD's accept policy: once draining stops accepting, refuse. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)addr;
    (void)addrlen;
    const struct wh_server *s = cls;
    return atomic_load(&s->refuse_new) ? MHD_NO : MHD_YES;
}

struct wh_server *wh_server_start(const struct wh_server_opts *o, struct wh_admit *ad,
                                  struct wh_metrics *m, char *errbuf)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    if (wh_server_parse_bind(o->bind, &ss, &sl, errbuf))
        return NULL;
    if (o->threads < 1 || o->max_connections < 1 || o->max_body < 1 || o->idle_timeout_ms < 1000 ||
        o->header_timeout_ms < 1 || o->request_timeout_ms < 1) {
        wh_fail(errbuf, WH_ERR_INVALID, "server limits must be positive (idle timeout >= 1s)");
        return NULL;
    }
    struct wh_server *s = calloc(1, sizeof(*s));
    if (!s) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->o = *o;
    /* One body of the limit always fits, with room to parse and answer it. */
    if (s->o.max_request_memory < 2 * s->o.max_body + REQUEST_MEMORY_SLACK)
        s->o.max_request_memory = 2 * s->o.max_body + REQUEST_MEMORY_SLACK;
    if (s->o.max_body_memory < s->o.max_body + 64 * 1024)
        s->o.max_body_memory = s->o.max_body + 64 * 1024;
    wh_reqmem_install();
    if (!wh_mhderr_install())
        wh_log(WH_LOG_WARN, "http_errors_unwrapped", "reason", WH_F_STR,
               "gnutls_record_send is not bound to the webhook's: libmicrohttpd's own answers "
               "to malformed requests keep their HTML bodies",
               (char *)NULL);
    struct wh_reqmem_opts ro = {.request_budget = s->o.max_request_memory,
                                .total_budget = s->o.max_body_memory};
    s->rm = wh_reqmem_new(&ro);
    if (!s->rm) {
        free(s);
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->ad = ad;
    s->m = m;
    s->listen_fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    if (open_listener(&ss, sl, o->bind, &s->listen_fd, errbuf))
        goto fail;
    struct sockaddr_storage bound;
    socklen_t bl = sizeof(bound);
    if (!getsockname(s->listen_fd, (struct sockaddr *)&bound, &bl))
        s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TLS | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    unsigned idle_s = (unsigned)((o->idle_timeout_ms + 999) / 1000);
    s->d = MHD_start_daemon(
        flags, 0, on_accept, s, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(o->threads > 1 ? o->threads : 0),
        MHD_OPTION_CONNECTION_LIMIT, o->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        o->max_connections_per_client, MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_HTTPS_PRIORITIES,
        WH_TLS_PRIORITIES, MHD_OPTION_HTTPS_CERT_CALLBACK, wh_tls_retrieve, MHD_OPTION_END);
    if (!s->d) {
        /* The socket was handed over: libmicrohttpd closes it on most of its
         * failure paths (not on a rejected option). Closing it again could
         * close a descriptor another thread (the Kubernetes client) has just
         * been given the same number, so at worst it leaks on this fatal path. */
        s->listen_fd = -1;
        wh_fail(errbuf, WH_ERR_TLS,
                "libmicrohttpd did not start on %s (TLS priorities or thread limits; run with "
                "--v=2 for its log)",
                o->bind);
        goto fail;
    }
    return s;
fail:
    wh_server_free(s);
    return NULL;
}

unsigned wh_server_port(const struct wh_server *s)
{
    return s->port;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

bool wh_server_drain(struct wh_server *s, long delay_ms, long timeout_ms)
{
    /* Endpoints controllers and load balancers need a moment to see the
     * 503 from /readyz; until then new connections are still welcome. */
    atomic_store(&s->unready, true);
    long long serve_until = wh_clock_ms() + delay_ms;
    while (wh_clock_ms() < serve_until) {
        wh_server_tick(s);
        sleep_ms(20);
    }
    /* From here on a new connection is closed as soon as it is accepted;
     * the listening socket stays MHD's until MHD_stop_daemon. */
    atomic_store(&s->refuse_new, true);
    long long deadline = wh_clock_ms() + timeout_ms, quiet_since = 0;
    /* A request may still be on the wire to a kept-alive connection: after
     * the last answer, wait a little before closing the idle connections. */
    const long settle_ms = 300;
    while (wh_clock_ms() < deadline) {
        wh_server_tick(s);
        if (atomic_load(&s->active) > 0) {
            quiet_since = 0;
        } else if (atomic_load(&s->n_conns) == 0) {
            break;
        } else if (!quiet_since) {
            quiet_since = wh_clock_ms();
        } else if (wh_clock_ms() - quiet_since >= settle_ms) {
            break;
        }
        sleep_ms(10);
    }
    return atomic_load(&s->active) == 0;
}

void wh_server_counts(const struct wh_server *s, struct wh_server_counts *c)
{
    c->accepted = atomic_load(&((struct wh_server *)s)->accepted);
    c->answered = atomic_load(&((struct wh_server *)s)->answered);
    c->aborted = atomic_load(&((struct wh_server *)s)->aborted);
}

void wh_server_stop(struct wh_server *s)
{
    if (!s || !s->d)
        return;
    MHD_stop_daemon(s->d);
    s->d = NULL;
    s->listen_fd = -1; /* MHD closed it */
}

void wh_server_free(struct wh_server *s)
{
    if (!s)
        return;
    wh_server_stop(s);
    if (s->listen_fd >= 0) /* never handed to MHD */
        close(s->listen_fd);
    /* MHD closed every connection and notified us; nothing is left linked. */
    pthread_mutex_destroy(&s->lock);
    wh_reqmem_free(s->rm);
    free(s);
}
