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
/* The header block of a corked answer, at most. */
#define WH_TLSREC_HEAD_ROOM 1024

/* Cork `session` for an answer of `body_len` bytes on socket `fd` when it is
 * worth it and safe: the body is small, the socket has nothing queued and
 * its send buffer has room for the whole record (so the uncorked write
 * goes into the socket at once, never waits on a client that stopped
 * reading; an answer that is not corked is sent by libmicrohttpd, whose
 * event loop waits for the socket). Returns true when the session was
 * corked: the caller must then call wh_tlsrec_flush() once the answer has
 * been handed over. */
bool wh_tlsrec_hold(gnutls_session_t session, int fd, size_t body_len);

/* Send what the session buffered since wh_tlsrec_hold and uncork it, in
 * one try: it never waits (it runs on a serving thread). false when the
 * socket did not take it all, against what wh_tlsrec_hold saw, or the send
 * failed: the answer is lost and the caller must close the connection. */
bool wh_tlsrec_flush(gnutls_session_t session, int fd);

#endif /* WH_TLSREC_H */
