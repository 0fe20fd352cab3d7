/* server.h: the HTTPS admission server on libmicrohttpd (shell only).
 *
 * Routes: POST /mutate and POST /validate (AdmissionReview v1 through the
 * admission pipeline), GET / ("kuberay-tpu-webhook", what the reference's
 * probes expect), GET /healthz, GET /readyz, GET /metrics (Prometheus text).
 * Errors are Kubernetes Status objects in JSON: 400 not an AdmissionReview
 * (or the wrong kind for the route), 404 unknown path, 405 wrong method,
 * 413 body over max_body (refused from Content-Length before reading it),
 * 500/503 when the pipeline cannot answer, 500 when answering would take a
 * request over max_request_memory, 503 when the requests in flight (all
 * connections) would hold more than max_body_memory or one client's
 * bodies more than max_client_memory. Bodies are charged as they arrive,
 * not from their Content-Length.
 *
 * Threads: a fixed pool of libmicrohttpd threads, each with its own epoll
 * set; connections are kept alive and no thread is created per request.
 * Each request owns one struct on MHD's per-request pointer, freed in the
 * request-completed callback. A connection that does not deliver its
 * request headers within header_timeout_ms (or its whole request within
 * request_timeout_ms, or its body at min_body_rate) is cut off by
 * wh_server_tick(), so byte-by-byte slow clients cannot hold connections.
 *
 * The server knows the admission pipeline only through struct wh_pipeline
 * (below): the command that starts it wires the real pipeline in
 * (src/shell/cli/cmd_serve.c), the server tests a stub. The server borrows
 * the pipeline, the metrics and the TLS material (served through
 * wh_tls_retrieve); they must outlive it.
 */
#ifndef WH_SERVER_H
#define WH_SERVER_H

#include <stdbool.h>    /* bool */
#include <stddef.h>     /* size_t */
#include <sys/socket.h> /* struct sockaddr_storage, socklen_t */

#include "wh/engine.h"  /* struct wh_review, struct wh_engine_result, enum wh_route */
#include "wh/err.h"     /* enum wh_err */
#include "wh/metrics.h" /* struct wh_metrics, struct wh_mgauges */

#define WH_SERVER_MAX_BODY_DEFAULT ((size_t)3 * 1024 * 1024)

struct wh_server_opts {
    const char *bind;         /* Go syntax: ":443", "127.0.0.1:8443", "[::1]:8443", port 0 = any */
    unsigned threads;         /* request threads, >= 1 */
    unsigned max_connections; /* served at once; more wait in the listen queue */
    unsigned max_connections_per_client; /* from one IP address, more are closed at once; 0: no limit */
    long idle_timeout_ms;                /* keep-alive connection with no traffic */
    long header_timeout_ms;  /* connect (incl. TLS handshake) to complete request headers */
    long request_timeout_ms; /* request headers to complete answer (body upload included) */
    size_t max_body;         /* request body limit in bytes */
    /* Memory of the requests in flight, all connections: bodies, parsed
     * reviews, decisions and answers (request arenas, see reqmem.h). */
    size_t max_request_memory; /* one request (raised to 2 x max_body + 1 MiB) */
    size_t max_body_memory;    /* all requests at once (raised to max_body + 64 KiB) */
    /* Serve GET /debug/slices (the pipeline's slices call, debug true);
     * off: it answers 404 saying how to turn it on. */
    bool debug_slices;
    /* The bodies of one peer address's requests at once; 0: half of
     * max_body_memory. Raised to max_body + 64 KiB. */
    size_t max_client_memory;
    /* A body must arrive at this many bytes a second on average, after a
     * grace of WH_SERVER_BODY_GRACE_MS from its header block, and pause no
     * longer than that grace; slower ones are cut. 0: no minimum
     * (request_timeout_ms still holds). */
    long min_body_rate;
};

#define WH_SERVER_BODY_GRACE_MS 5000
#define WH_SERVER_MIN_BODY_RATE_DEFAULT 16384

/* The admission pipeline as the server sees it. Every call gets ctx back;
 * all three are called from many request threads at once (thread-safe) and
 * none may wait on the network. The server copies the struct; ctx is
 * borrowed and must outlive the server.
 * decide: decide a review the server parsed (wh_review_parse) and keeps
 *   until the answer is sent; the contract of wh_engine_decide(). It runs
 *   with the request's arena bound (reqmem.h).
 * ready: ready to serve admissions (/readyz); when false, why says why
 *   (why may be NULL).
 * stats: the pipeline's gauges right now (/metrics).
 * decide may wait only for reviews may_wait says so of. */
struct wh_pipeline {
    void *ctx;
    enum wh_err (*decide)(void *ctx, const struct wh_review *rv, enum wh_route route,
                          struct wh_engine_result *res, char *errbuf);
    bool (*ready)(void *ctx, char *why, size_t why_len);
    void (*stats)(void *ctx, struct wh_mgauges *st);
    /* Optional (NULL: never). True when deciding rv may wait on the
     * network (a legacy pod's worker-id claim on the API server): the
     * server then decides it on its worker pool, the connection suspended,
     * never on a thread that serves connections (docs/internals/threads.md).
     * Must not wait itself. */
    bool (*may_wait)(void *ctx, const struct wh_review *rv, enum wh_route route);
    /* Optional (NULL: no live slice check). Append the slice check's
     * metrics (debug false) or its /debug/slices document (debug true);
     * copies what a background thread computed, never waits on it.
     * WH_ERR_UNAVAILABLE: no slice check runs (standalone, turned off). */
    enum wh_err (*slices)(void *ctx, bool debug, struct wh_buf *out);
};

struct wh_server;

/* Parse a Go listen address into a socket address. ":port" is every
 * address (IPv6 dual stack, ss_family AF_INET6 with in6addr_any); host must
 * be an IP literal or "localhost" (start-up never waits on DNS). */
WH_NODISCARD enum wh_err wh_server_parse_bind(const char *bind, struct sockaddr_storage *ss,
                                              socklen_t *len, char *errbuf);

/* Bind, listen and start the threads, serving admissions through pl
 * (every call set). NULL with the reason in errbuf. */
struct wh_server *wh_server_start(const struct wh_server_opts *opts, const struct wh_pipeline *pl,
                                  struct wh_metrics *m, char *errbuf);

/* The bound port (useful with port 0). */
unsigned wh_server_port(const struct wh_server *s);

/* Housekeeping, every ~100 ms from one thread: cut off connections past
 * their deadline. */
void wh_server_tick(struct wh_server *s);

/* Shut down gracefully: /readyz answers 503 at once, and every answer from
 * now on carries "Connection: close"; requests and new connections are
 * served as usual for delay_ms; then stop accepting connections, answer
 * what is in flight and return when nothing is in flight or after
 * timeout_ms more. True when every accepted request was answered. */
bool wh_server_drain(struct wh_server *s, long delay_ms, long timeout_ms);

/* Stop the threads and close every connection; a request still unanswered
 * is counted as aborted. The counts are final after it. NULL-safe. */
void wh_server_stop(struct wh_server *s);

struct wh_server_counts {
    long long accepted; /* requests whose headers were read */
    long long answered; /* answers sent completely */
    long long aborted;  /* ended without a complete answer (client gone, shutdown) */
};
/* accepted = answered + aborted once the server is stopped. */
void wh_server_counts(const struct wh_server *s, struct wh_server_counts *c);

/* Stop the threads, close every connection, free. NULL-safe. */
void wh_server_free(struct wh_server *s);

#endif /* WH_SERVER_H */
