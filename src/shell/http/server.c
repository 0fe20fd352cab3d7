/* server.c: HTTPS admission server on libmicrohttpd (see server.h): the
 * listen address and the life cycle. The rest of the server is in
 * server_answer.c (answers), server_admit.c (admission), server_route.c
 * (routing, hostile HTTP) and server_conn.c (connections, timeouts); their
 * shared state is in wh/server_impl.h. */
#include "wh/server.h"

#include <arpa/inet.h>  /* inet_pton */
#include <errno.h>      /* errno */
#include <netinet/in.h> /* sockaddr_in6 */
#include <pthread.h>    /* pthread_mutex_init */
#include <stdarg.h>     /* va_list */
#include <stdatomic.h>  /* atomic_* */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* calloc, free */
#include <string.h>     /* strcmp, strerror */
#include <time.h>       /* nanosleep */
#include <sys/socket.h> /* socket, bind, listen */
#include <unistd.h>     /* close */

#include <microhttpd.h>

#include "wh/clock.h"     /* wh_clock_ms */
#include "wh/json.h"      /* wh_parse_long */
#include "wh/log.h"       /* wh_log */
#include "mhd/mhderr.h"   /* wh_mhderr_install */
#include "wh/reqmem.h"    /* wh_reqmem_new, wh_reqmem_free */
#include "server_conn.h"  /* wh_srv_on_connection, wh_srv_idle_shed_above */
#include "server_impl.h"  /* struct wh_server */
#include "server_pool.h"  /* wh_srv_pool_start, wh_srv_pool_stop, wh_srv_pool_free */
#include "server_route.h" /* wh_srv_on_request, wh_srv_on_completed, wh_srv_on_uri */
#include "wh/tls.h"       /* wh_tls_retrieve, WH_TLS_PRIORITIES */

/* A request's budget covers its body twice (body and parsed tree) plus this. */
#define REQUEST_MEMORY_SLACK ((size_t)1024 * 1024)
/* libmicrohttpd's per-connection pool holds the request line, the headers
 * and the read buffer (bodies are handed over as they arrive and kept in the
 * request arena). It zeroes the pool after every request: its 32 KiB default
 * cost a 48 KB memset per request, more than parsing the review. 16 KiB
 * still takes a 10 KB bearer token (tests/server/hostile_http.py); a header
 * block over it is answered 431 by libmicrohttpd. */
#define MHD_POOL_BYTES ((size_t)16 * 1024)

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
    wh_log_msg(WH_LOG_DEBUG, "mhd", msg, (char *)NULL);
}

/* MHD's accept policy: once draining stops accepting, refuse. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)addr;
    (void)addrlen;
    const struct wh_server *s = cls;
    return atomic_load(&s->refuse_new) ? MHD_NO : MHD_YES;
}

/* libmicrohttpd's own error answers as Status objects, raw NUL bytes refused
 * (wh/mhderr.h); a log line when the platform does not allow it. */
static void install_http_guards(void)
{
    bool reads_guarded = false;
    if (!wh_mhderr_install(&reads_guarded))
        wh_log(WH_LOG_WARN, "http_errors_unwrapped", "reason", WH_F_STR,
               "gnutls_record_send/recv are not bound to the webhook's: libmicrohttpd's own "
               "answers to malformed requests keep their HTML bodies, and a raw NUL byte cuts "
               "the request line or header it is in",
               (char *)NULL);
    else if (!reads_guarded)
        wh_log(WH_LOG_WARN, "nul_guard_off", "reason", WH_F_STR,
               "libcurl uses GnuTLS too, so reads are not checked for a raw NUL byte (it "
               "would cut the request line or header it is in); build with libcurl's "
               "OpenSSL flavour (libcurl4-openssl-dev)",
               (char *)NULL);
}

static bool start_args_ok(const struct wh_server_opts *o, const struct wh_pipeline *pl,
                          struct sockaddr_storage *ss, socklen_t *sl, char *errbuf)
{
    if (!pl || !pl->decide || !pl->ready || !pl->stats) {
        wh_fail(errbuf, WH_ERR_INVALID,
                "the server needs an admission pipeline (decide, ready, stats)");
        return false;
    }
    if (wh_server_parse_bind(o->bind, ss, sl, errbuf))
        return false;
    if (o->threads < 1 || o->max_connections < 1 || o->max_body < 1 || o->idle_timeout_ms < 1000 ||
        o->header_timeout_ms < 1 || o->request_timeout_ms < 1) {
        wh_fail(errbuf, WH_ERR_INVALID, "server limits must be positive (idle timeout >= 1s)");
        return false;
    }
    return true;
}

/* One body of the limit always fits, with room to parse and answer it. */
static void raise_budgets(struct wh_server_opts *o)
{
    if (o->max_request_memory < 2 * o->max_body + REQUEST_MEMORY_SLACK)
        o->max_request_memory = 2 * o->max_body + REQUEST_MEMORY_SLACK;
    if (o->max_body_memory < o->max_body + 64 * 1024)
        o->max_body_memory = o->max_body + 64 * 1024;
    /* One client may hold half the bodies' memory (the API server, one
     * address, still has the other half when a pod floods the webhook). */
    if (!o->max_client_memory)
        o->max_client_memory = o->max_body_memory / 2;
    if (o->max_client_memory < o->max_body + 64 * 1024)
        o->max_client_memory = o->max_body + 64 * 1024;
}

struct wh_server *wh_server_start(const struct wh_server_opts *o, const struct wh_pipeline *pl,
                                  struct wh_metrics *m, char *errbuf)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    if (!start_args_ok(o, pl, &ss, &sl, errbuf))
        return NULL;
    struct wh_server *s = calloc(1, sizeof(*s));
    if (!s) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->o = *o;
    raise_budgets(&s->o);
    wh_reqmem_install();
    install_http_guards();
    struct wh_reqmem_opts ro = {.request_budget = s->o.max_request_memory,
                                .total_budget = s->o.max_body_memory};
    s->rm = wh_reqmem_new(&ro);
    if (!s->rm) {
        free(s);
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->pl = *pl;
    s->m = m;
    s->listen_fd = -1;
    /* libmicrohttpd splits the slots among its threads; a thread whose
     * share is 0 never accepts, so there are never more threads than slots. */
    unsigned threads = o->threads < o->max_connections ? o->threads : o->max_connections;
    s->idle_shed_above = wh_srv_idle_shed_above(o->max_connections, threads);
    pthread_mutex_init(&s->lock, NULL);
    if (open_listener(&ss, sl, o->bind, &s->listen_fd, errbuf))
        goto fail;
    struct sockaddr_storage bound;
    socklen_t bl = sizeof(bound);
    if (!getsockname(s->listen_fd, (struct sockaddr *)&bound, &bl))
        s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    /* The workers decide the reviews that may wait, their connections
     * suspended meanwhile (server_pool.h). */
    if (!(s->pool = wh_srv_pool_start(s, WH_SRV_POOL_WORKERS, WH_SRV_POOL_QUEUE)))
        goto no_workers;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TLS | MHD_USE_ITC | MHD_USE_ERROR_LOG |
                     MHD_ALLOW_SUSPEND_RESUME;
    unsigned idle_s = (unsigned)((o->idle_timeout_ms + 999) / 1000);
    s->d = MHD_start_daemon(flags, 0, on_accept, s, wh_srv_on_request, s,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET,
                            s->listen_fd, MHD_OPTION_THREAD_POOL_SIZE, threads > 1 ? threads : 0,
                            MHD_OPTION_CONNECTION_LIMIT, o->max_connections,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, MHD_POOL_BYTES,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->max_connections_per_client,
                            MHD_OPTION_CONNECTION_TIMEOUT, idle_s, MHD_OPTION_NOTIFY_COMPLETED,
                            wh_srv_on_completed, s, MHD_OPTION_URI_LOG_CALLBACK, wh_srv_on_uri, s,
                            MHD_OPTION_NOTIFY_CONNECTION, wh_srv_on_connection, s,
                            MHD_OPTION_HTTPS_PRIORITIES, WH_TLS_PRIORITIES,
                            MHD_OPTION_HTTPS_CERT_CALLBACK, wh_tls_retrieve, MHD_OPTION_END);
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
no_workers:
    wh_fail(errbuf, WH_ERR_NOMEM, "cannot start the admission worker threads");
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
    if (!s)
        return;
    /* First: no connection may stay suspended into MHD_stop_daemon. */
    wh_srv_pool_stop(s->pool);
    if (!s->d)
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
    wh_srv_pool_free(s->pool);
    pthread_mutex_destroy(&s->lock);
    wh_reqmem_free(s->rm);
    free(s);
}
