/* server_conn.h: the server's open connections and their deadlines
 * (shell-internal, see server_impl.h). wh_server_tick (server.h) is here
 * too: it cuts off the connections past their deadline.
 */
#ifndef WH_SERVER_CONN_H
#define WH_SERVER_CONN_H

#include <stddef.h> /* size_t */

#include "server_impl.h" /* struct conn */

/* The connection's record (made by wh_srv_on_connection), or NULL when it
 * has none; borrowed, valid until the connection closes. */
struct conn *wh_srv_conn_of(struct MHD_Connection *c);

/* The client's numeric address into out (len bytes), "" when unknown. */
void wh_srv_client_of(struct MHD_Connection *c, char *out, size_t len);

/* The body the connection is receiving now (NULL: none, or it is in),
 * under the server's lock, so that wh_srv_shed_slow_bodies never reads one
 * that is being freed; last_ms: when its bytes last arrived. cn may be
 * NULL (no record: nothing to do). */
void wh_srv_conn_body(struct wh_server *s, struct conn *cn, struct wh_reqmem_body *body,
                      long long last_ms);

/* Room an admission needs beyond twice its body (parsed review, answer). */
#define WH_SRV_ANSWER_ROOM ((size_t)256 * 1024)

/* Request memory is short by need bytes: cut the connections whose bodies
 * arrive slowest, below --min-body-rate over their last whole second (a
 * body that has received nothing for WH_SRV_SHED_QUIET_MS counts as 0),
 * never self's (share non-NULL: only bodies charged to that client share,
 * the one that ran short), until their charges cover need; their memory
 * counts as free at once (wh_reqmem_body_shed). Shedding by behaviour, not by address: on GKE
 * every real review comes from one to three API-server addresses, and an
 * ordinary review arrives whole in one go. Returns the bytes freed (0: no
 * body is stalled). Counted (wh_metrics_shed) and logged. */
size_t wh_srv_shed_slow_bodies(struct wh_server *s, const struct conn *self, size_t need,
                               const struct wh_reqmem_share *share);
#define WH_SRV_SHED_QUIET_MS 1000
#define WH_SRV_RATE_WINDOW_MS 1000

/* Connection slots run short when fewer than this share of
 * --max-connections (1/WH_SRV_IDLE_HEADROOM_DIV, at least one a thread, at
 * most half of them, at least one) is free: an accept, or the tick, then
 * cuts connections with no request in progress, once idle
 * WH_SRV_IDLE_GRACE_MS: first those that never completed a request,
 * oldest first (what silent clients hold); those that did (the API
 * server's pooled keep-alive connections) only by the tick, once no
 * unserved connection is open, longest idle first. By behaviour, never by
 * address (on GKE every real review comes from one to three API-server
 * addresses). Counted (wh_metrics_shed, WH_SHED_IDLE), logged by the tick
 * at most once a second. The headroom keeps room for the connections
 * that arrive between cuts. The grace is what a new connection has to
 * finish its TLS handshake and header block before it can be cut, so an
 * attacker's reconnects cannot turn the table over faster than that. */
#define WH_SRV_IDLE_HEADROOM_DIV 16
#define WH_SRV_IDLE_GRACE_MS 1000

/* How many live connections the server keeps before it sheds idle ones,
 * for max_connections slots served by threads threads (at most
 * max_connections of them). */
unsigned wh_srv_idle_shed_above(unsigned max_connections, unsigned threads);

/* MHD's connection notification (cls: the server): links a struct conn
 * into the server's list when a connection starts, unlinks and frees it
 * when it closes. */
void wh_srv_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code);

#endif /* WH_SERVER_CONN_H */
