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
    enum wh_mpath path; /* its row of wh_routes (wh/routes.h) */
    long long start_us;
    struct wh_arena *arena; /* admissions only; NULL when the memory refused one */
    char *body;             /* in the arena, sized from Content-Length */
    size_t body_len, body_cap;
    struct wh_review *rv; /* parsed body, kept until the answer is sent */
    struct wh_engine_result res;
    bool too_big;
    bool busy;        /* over the server's request memory: refused with 503 */
    size_t discarded; /* body bytes dropped after too_big or busy */
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
    pthread_mutex_t lock;     /* the conn list */
    struct conn *conns;
};

#endif /* WH_SERVER_IMPL_H */
