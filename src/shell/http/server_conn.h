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

/* MHD's connection notification (cls: the server): links a struct conn
 * into the server's list when a connection starts, unlinks and frees it
 * when it closes. */
void wh_srv_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code);

#endif /* WH_SERVER_CONN_H */
