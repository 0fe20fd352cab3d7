/* server_route.h: the server's request handling (shell-internal, see
 * server_impl.h): libmicrohttpd's request callbacks, the hostile-HTTP
 * checks in front of them (wh/httpreq.h), the routes, the body.
 *
 * A struct request is made on a request's first call to wh_srv_on_request
 * and kept on MHD's per-request pointer; wh_srv_on_completed flushes its
 * answer, returns its arena and frees it. All three take the server as cls.
 */
#ifndef WH_SERVER_ROUTE_H
#define WH_SERVER_ROUTE_H

#include <stddef.h> /* size_t */

#include "server_impl.h" /* enum MHD_Result (microhttpd.h) */

/* MHD's URI log callback: vets the raw request target. */
void *wh_srv_on_uri(void *cls, const char *uri, struct MHD_Connection *c);

/* MHD's access handler. */
enum MHD_Result wh_srv_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls);

/* MHD's request-completed notification. */
void wh_srv_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe);

#endif /* WH_SERVER_ROUTE_H */
