/* server_impl.h: the server's shared state (shell-internal: only the
 * server's own modules, src/shell/server*.c, include it; callers use
 * wh/server.h, where struct wh_server is opaque).
 *
 * Ownership: struct wh_server is made by wh_server_start and freed by
 * wh_server_free (server.c); struct conn by wh_srv_on_connection
 * (server_conn.c) from connection start to close; struct request by
 * wh_srv_on_request (server_route.c), freed by wh_srv_on_completed.
 */
#ifndef WH_SERVER_IMPL_H
#define WH_SERVER_IMPL_H

#include <pthread.h>   /* pthread_mutex_t */
#include <stdatomic.h> /* atomic_* */
#include <stdbool.h>   /* bool */
#include <stddef.h>    /* size_t */

#include <microhttpd.h>

#include "wh/reqmem.h"  /* struct wh_reqmem, struct wh_arena */
#include "wh/server.h"  /* struct wh_server_opts */
#include "mhd/tlsrec.h" /* gnutls_session_t */

struct wh_srv_pool;

#define ADDR_LEN 64
/* Buckets of the clients table (a power of two). */
#define CLIENT_BUCKETS 256

/* One peer address with connections open: what its request bodies hold, for
 * --max-client-memory. IPv4 addresses as IPv4-mapped IPv6 ones, so that a
 * client counts once on the dual-stack socket. Made when its first
 * connection opens, freed when its last one closes (under the server's
 * lock); libmicrohttpd reports every request of a connection completed
 * before the connection closed, so no body outlives its client. */
struct client {
    struct client *next;
    unsigned char addr[16];
    unsigned conns;
    struct wh_reqmem_share share;
};

/* One open connection, for the slow-client deadline. Linked into the
 * server's list from MHD's connection-started to connection-closed
 * notification; the fd stays valid in between. */
struct conn {
    struct conn *prev, *next;
    int fd;
    atomic_llong deadline_ms;
    /* The deadline is the body's (--min-body-rate), not the request's: what
     * the cut is logged as. */
    atomic_bool body_rate;
    bool cut; /* shut down for its thread to close; under the server's lock */
    /* Since when it has had no request in progress (accepted, or its last
     * request completed); -1 from a request's first handler call to its
     * completion. What the idle shedding (server_conn.h) ranks by. */
    atomic_llong idle_since_ms;
    /* A request on it has been answered (wh_srv_on_completed, stored before
     * idle_since_ms): it sheds after every connection that has not. */
    atomic_bool served;
    struct client *cl; /* NULL when the address could not be read */
    /* The request body being received (wh_srv_conn_body), under the
     * server's lock; when its bytes last arrived. */
    struct wh_reqmem_body *body;
    atomic_llong body_last_ms;
    /* Bytes per second over its last whole window (WH_SRV_RATE_WINDOW_MS),
     * -1 before one has passed. */
    atomic_llong body_rate_bps;
    const char *target_problem; /* of the request being read; static text */
    char client[ADDR_LEN];
};

/* One request; lives on MHD's con_cls from the first handler call to the
 * request-completed callback. Its body grows as it arrives (wh/reqmem.h);
 * everything else it makes (parsed review, result, answer) is in its arena,
 * taken once the body is in, bound to the thread while a handler runs for
 * it and reset once the answer has been sent: one parse, no copies. */
struct request {
    enum wh_mpath path; /* its row of wh_routes (wh/routes.h) */
    long long start_us;
    struct wh_arena *arena; /* admissions only; NULL when the memory refused one */
    /* Grown as its bytes arrive (wh/reqmem.h), charged to the server, the
     * client and, once the arena is taken, the arena's budget. */
    struct wh_reqmem_body body;
    size_t body_limit;      /* Content-Length, or max_body */
    size_t received;        /* body bytes arrived, stored or discarded */
    long long body_t0_ms;   /* the first call: when the body may start */
    long long body_last_ms; /* when body bytes last arrived (body_t0_ms before) */
    long long rate_t0_ms;   /* the rate window (server_conn.h): since when */
    size_t rate_bytes;      /* ... and the bytes in it */
    long long deadline_ms;  /* the request's: start + request_timeout_ms */
    struct wh_review *rv;   /* parsed body, kept until the answer is sent */
    struct wh_engine_result res;
    bool too_big;
    /* no verified client certificate (--client-ca-file): the body is
     * discarded as it arrives, then 403 */
    bool refused;
    /* over the server's request memory (or, share, the client's): refused
     * with 503 */
    bool busy;
    bool busy_share;
    size_t discarded; /* body bytes dropped after too_big, refused or busy */
    unsigned status;  /* answer queued, 0 until then */
    bool close;       /* the answer closes the connection */
    /* Corked for one TLS record (wh/tlsrec.h) until wh_srv_on_completed flushes
     * it; NULL otherwise. MHD's session, not ours. */
    gnutls_session_t corked;
    int corked_fd;
    /* The session marked as carrying the webhook's answer (wh/mhderr.h)
     * from just before it is queued until wh_srv_on_completed; mark 0:
     * none. */
    gnutls_session_t marked;
    int mark;
    /* A review decided on the worker pool (server_pool.h): route is set and
     * the connection suspended by the serving thread; job_err, job_errbuf
     * and res written by the worker before decided turns true and the
     * connection is resumed. */
    bool waiting;
    enum wh_route route;
    atomic_bool decided;
    enum wh_err job_err;
    char job_errbuf[WH_ERRBUF_LEN];
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
    struct wh_pipeline pl; /* the admission pipeline, wired by the caller */
    struct wh_metrics *m;
    atomic_bool unready; /* /readyz answers 503, answers close their connection */
    atomic_llong active; /* requests between first call and completion */
    atomic_llong accepted;
    atomic_llong answered;
    atomic_llong aborted;
    atomic_llong n_conns;
    struct wh_reqmem *rm;     /* request arenas and their budgets */
    struct wh_srv_pool *pool; /* decides the reviews that may wait (server_pool.h) */
    pthread_mutex_t lock;     /* the conn list and the clients table */
    struct conn *conns;
    /* Under lock: the connections linked and not cut; over idle_shed_above,
     * connection slots run short and the longest idle are cut
     * (server_conn.h, WH_SRV_IDLE_HEADROOM_DIV). */
    unsigned live;
    unsigned idle_shed_above;
    /* Under lock: idle connections cut since the tick last logged them, and
     * the first one's client; the tick logs them at most once a second
     * (idle_logged_ms, the tick's own). */
    long long idle_unlogged;
    char idle_first[ADDR_LEN];
    long long idle_logged_ms;
    struct client *clients[CLIENT_BUCKETS];
};

#endif /* WH_SERVER_IMPL_H */
