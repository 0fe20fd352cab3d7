/* server_answer.c: the server's answers (see server_answer.h). */
#include "server_answer.h"

#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy, strlen */

#include <microhttpd.h>

#include "wh/buf.h"     /* wh_buf */
#include "wh/reqmem.h"  /* wh_reqmem_bind, wh_arena */
#include "mhd/mhderr.h" /* wh_mhderr_mark */
#include "mhd/tlsrec.h" /* wh_tlsrec_hold */

/* The response reads body until the request completes: a body in the
 * request's arena is handed over as it is; anything else is copied there
 * first (small texts), or to the heap when the request has no arena. */
static struct MHD_Response *response_for(struct request *rq, const char *body, size_t len)
{
    if (rq->arena && wh_arena_owns(rq->arena, body))
        return MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);
    char *copy = rq->arena ? wh_arena_alloc(rq->arena, len + 1) : NULL;
    if (copy) {
        memcpy(copy, body, len);
        return MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_PERSISTENT);
    }
    copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, body, len);
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, copy, free);
    if (!r)
        free(copy);
    return r;
}

static gnutls_session_t session_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *tls = MHD_get_connection_info(c,
                                                                  MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return tls ? (gnutls_session_t)tls->tls_session : NULL;
}

/* Every byte libmicrohttpd writes on the session until the request
 * completes is this answer's: the send interposer passes it through
 * (wh/mhderr.h). Unmarked by wh_srv_on_completed. */
static void mark_session(struct MHD_Connection *c, struct request *rq)
{
    gnutls_session_t session = session_of(c);
    if (session && !rq->mark) {
        rq->marked = session;
        rq->mark = wh_mhderr_mark(session);
    }
}

/* Header and body in one TLS record (wh/tlsrec.h): corked now, flushed by
 * wh_srv_on_completed. */
static void hold_records(struct MHD_Connection *c, struct request *rq, size_t len)
{
    gnutls_session_t session = session_of(c);
    const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c,
                                                                 MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!session || !fd || rq->corked)
        return;
    if (wh_tlsrec_hold(session, fd->connect_fd, len)) {
        rq->corked = session;
        rq->corked_fd = fd->connect_fd;
    }
}

enum MHD_Result wh_srv_reply(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                             unsigned status, const char *ctype, const char *body, size_t len,
                             const char *allow)
{
    struct MHD_Response *r = response_for(rq, body, len);
    if (!r)
        return MHD_NO;
    enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (ok)
        ok = MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (ok && allow)
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    /* Shutting down (from SIGTERM on, the delay included: a kept-alive
     * client then reconnects through the Service, to another pod once the
     * endpoint is gone, instead of holding a connection that closes under
     * its next request), or a body we refused to read. */
    if (ok && (atomic_load(&s->unready) || rq->close || status == MHD_HTTP_CONTENT_TOO_LARGE))
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (ok) {
        mark_session(c, rq); /* before libmicrohttpd can write any of it */
        ok = MHD_queue_response(c, status, r);
    }
    MHD_destroy_response(r);
    if (ok) {
        rq->status = status;
        hold_records(c, rq, len);
    }
    return ok;
}

static const char *reason_of(unsigned status)
{
    switch (status) {
    case 400: return "BadRequest";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 413: return "RequestEntityTooLarge";
    case 503: return "ServiceUnavailable";
    default: return "InternalError";
    }
}

/* A Kubernetes Status object naming the problem. */
enum MHD_Result wh_srv_reply_error(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                                   unsigned status, const char *msg, const char *allow)
{
    /* An arena that ran out (a body the memory refused) refuses every later
     * allocation: that request's Status comes from the C library's heap. */
    struct wh_arena *spent = rq->arena && wh_arena_exhausted(rq->arena) ? wh_reqmem_bind(NULL)
                                                                        : NULL;
    struct wh_buf b;
    wh_buf_init(&b, 8192);
    enum wh_err err = wh_buf_add(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                                     "\"status\":\"Failure\",\"message\":\"");
    if (!err)
        err = wh_buf_add_json_escaped(&b, msg, strlen(msg));
    if (!err)
        err = wh_buf_addf(&b, "\",\"reason\":\"%s\",\"code\":%u}", reason_of(status), status);
    enum MHD_Result ret = err ? MHD_NO
                              : wh_srv_reply(s, c, rq, status, "application/json", wh_buf_ptr(&b),
                                             wh_buf_len(&b), allow);
    wh_buf_free(&b);
    if (spent)
        wh_reqmem_bind(spent);
    return ret;
}

enum MHD_Result wh_srv_reply_text(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                                  unsigned status, const char *text)
{
    return wh_srv_reply(s, c, rq, status, "text/plain; charset=utf-8", text, strlen(text), NULL);
}
