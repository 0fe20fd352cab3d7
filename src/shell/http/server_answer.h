/* server_answer.h: the server's answers (shell-internal, see server_impl.h).
 *
 * Each queues one answer on the connection and records its status in the
 * request. The body is borrowed for the call only: a body in the request's
 * arena is handed to libmicrohttpd as it is, anything else is copied (into
 * the arena, or to the heap that libmicrohttpd frees with the response).
 * MHD_NO when the answer could not be queued.
 */
#ifndef WH_SERVER_ANSWER_H
#define WH_SERVER_ANSWER_H

#include <stddef.h> /* size_t */

#include "server_impl.h" /* struct wh_server, struct request */

/* body of len bytes as ctype; allow, when not NULL, is the Allow header. */
enum MHD_Result wh_srv_reply(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                             unsigned status, const char *ctype, const char *body, size_t len,
                             const char *allow);

/* A Kubernetes Status object naming the problem. */
enum MHD_Result wh_srv_reply_error(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                                   unsigned status, const char *msg, const char *allow);

/* text/plain. */
enum MHD_Result wh_srv_reply_text(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                                  unsigned status, const char *text);

#endif /* WH_SERVER_ANSWER_H */
