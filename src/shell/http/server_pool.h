/* server_pool.h: the workers that decide admissions which may wait (a
 * legacy pod's worker-id claim on the API server), off the libmicrohttpd
 * threads (docs/internals/threads.md).
 *
 * The serving thread suspends the connection and hands the request over;
 * a worker decides it (the request's arena bound), records the outcome on
 * the request and resumes the connection, whose thread then answers. The
 * queue is bounded: a request that finds it full is refused at once and
 * answered by its own thread, never queued behind a wait.
 *
 * The pool belongs to the server (server.c starts and stops it); requests
 * stay the server's: a worker only writes the fields the request's comment
 * gives it between submit and resume.
 */
#ifndef WH_SERVER_POOL_H
#define WH_SERVER_POOL_H

#include <stdbool.h> /* bool */

#include "server_impl.h" /* struct wh_server, struct request */

#define WH_SRV_POOL_WORKERS 8
/* Twice the workers: a review queued behind two rounds of claims (3 s
 * budget each) still answers near the API server's 5 s webhook timeout;
 * more would be answered after the API server gave up on it. */
#define WH_SRV_POOL_QUEUE 16

struct wh_srv_pool;

/* Start workers threads with a queue of queue requests; NULL when a thread
 * cannot be started or memory is short. */
struct wh_srv_pool *wh_srv_pool_start(struct wh_server *s, unsigned workers, unsigned queue);

/* Suspend c and queue rq for a worker (route in rq->route); false, with c
 * left as it was, when the queue is full or the pool is stopping. Called
 * on c's serving thread, inside its request callback. */
bool wh_srv_pool_submit(struct wh_srv_pool *p, struct MHD_Connection *c, struct request *rq);

/* Let the running decisions finish, refuse the queued ones ("shutting
 * down", resumed and answered by their threads) and join the workers; a
 * submit from now on is refused. Before MHD_stop_daemon: no connection
 * stays suspended. Idempotent, NULL-safe. */
void wh_srv_pool_stop(struct wh_srv_pool *p);
/* Stop (if not yet) and free; after MHD_stop_daemon. NULL-safe. */
void wh_srv_pool_free(struct wh_srv_pool *p);

/* Requests queued or being decided (for /metrics and the log). */
unsigned wh_srv_pool_pending(struct wh_srv_pool *p);

#endif
