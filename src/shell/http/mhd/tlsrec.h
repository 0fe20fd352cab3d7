/* tlsrec.h: one TLS record for a small answer (shell only).
 *
 * libmicrohttpd 0.9.75 hands the response header and the body to
 * gnutls_record_send separately, so every answer costs two TLS records, two
 * sendmsg calls and, at the client (the API server), two record reads. For an
 * answer that fits one record we cork the session when the answer is queued
 * (GnuTLS then only buffers what libmicrohttpd sends) and uncork it when
 * libmicrohttpd reports the request completed: header and body leave as one
 * record in one write. Both calls run on the connection's thread, between
 * which libmicrohttpd neither reads nor writes anything else on the session.
 *
 * The session and the socket belong to libmicrohttpd; nothing here frees
 * anything.
 */
#ifndef WH_TLSREC_H
#define WH_TLSREC_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <gnutls/gnutls.h> /* gnutls_session_t */

/* Largest body that is corked: header and body stay within one TLS record
 * (16 KiB of plaintext). Larger answers go as libmicrohttpd sends them. */
#define WH_TLSREC_MAX_BODY (16384 - 1024)

/* Cork `session` for an answer of `body_len` bytes on socket `fd` when it is
 * worth it and safe: the body is small and the socket has nothing queued
 * (so the uncorked write will not wait on a client that stopped reading).
 * Returns true when the session was corked: the caller must then call
 * wh_tlsrec_flush() once the answer has been handed over. */
bool wh_tlsrec_hold(gnutls_session_t session, int fd, size_t body_len);

/* Send what the session buffered since wh_tlsrec_hold and uncork it. A
 * socket that cannot take it waits for writability at most timeout_ms in
 * total; returns false (the data are lost, the caller must close the
 * connection) when the send failed or timed out. */
bool wh_tlsrec_flush(gnutls_session_t session, int fd, int timeout_ms);

#endif /* WH_TLSREC_H */
