/* server_admit.h: one admission over HTTP (shell-internal, see
 * server_impl.h): the request's body through the admission pipeline
 * (struct wh_pipeline, wh/server.h), the answer, its metrics and its log lines.
 */
#ifndef WH_SERVER_ADMIT_H
#define WH_SERVER_ADMIT_H

#include "server_impl.h" /* struct wh_server, struct request */

/* Parse rq's body, decide, answer. The parsed review and the result stay
 * in rq (in its arena) until the answer has been sent. */
enum MHD_Result wh_srv_admit(struct wh_server *s, struct MHD_Connection *c, struct request *rq);

#endif /* WH_SERVER_ADMIT_H */
