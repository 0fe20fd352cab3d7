/* mhderr.h: libmicrohttpd's own error answers, sent as Status objects
 * (shell only).
 *
 * libmicrohttpd 0.9.75 answers some malformed requests itself, while it
 * parses the header block and before the webhook sees the request (a
 * Content-Length that is not a number, a header line without a colon, an
 * unknown HTTP version, a bad chunk size, an over-long request line or
 * header block), with a short HTML body and, for a bad Content-Length, its
 * header block written twice. It offers no hook there. Every answer it writes
 * goes through gnutls_record_send, so this module defines that function
 * (the dynamic linker binds libmicrohttpd's calls to the executable's
 * definition first) and passes everything through to GnuTLS's, except an
 * error header block ("HTTP/1.1 400 ...") written on a session where the
 * webhook has no answer queued. Whose bytes they are is known from state,
 * never from their content: the server marks a session when it queues an
 * answer (wh_mhderr_mark) and unmarks it once the answer is sent, and every
 * byte of a marked session passes through untouched, whatever it reads
 * like (a body resumed after a partial write may start with "HTTP/1.1 400 "
 * when a name in it says so). An unmarked session's error header block is
 * libmicrohttpd's own; it is replaced by a
 * complete answer with the same status code and a Kubernetes Status body,
 * and what libmicrohttpd writes after it on that session (its HTML, the
 * repeated header block) is dropped. libmicrohttpd closes such a connection
 * after its answer; gnutls_deinit, interposed too, forgets the session.
 *
 * gnutls_record_recv is interposed too: a raw NUL byte, which libmicrohttpd
 * would take as the end of the request line or header it is in, gets a 400
 * Status at once, and libmicrohttpd an end of stream, so that it closes the
 * connection.
 *
 * The send interposer also writes as many TLS records as the socket takes
 * per call (up to 256 KiB), where GnuTLS writes one: a large answer no longer
 * goes back through libmicrohttpd's event loop after every 16 KiB.
 *
 * Nothing here allocates; the interposers only read what they are given.
 */
#ifndef WH_MHDERR_H
#define WH_MHDERR_H

#include <stdbool.h> /* bool */

#include <gnutls/gnutls.h> /* gnutls_session_t */

/* Resolve GnuTLS's own functions and check that the dynamic linker binds
 * gnutls_record_send and gnutls_record_recv to this module (false:
 * libmicrohttpd's own answers go out as it writes them, and a raw NUL cuts
 * its strings; the server logs that). *reads_guarded: whether reads are
 * checked for a NUL; not when libcurl also reads through GnuTLS (a
 * libcurl-gnutls build), whose API-server traffic holds NUL bytes. Call
 * once before serving; it also links this module into the program.
 * Thread-safe. */
bool wh_mhderr_install(bool *reads_guarded);

/* The webhook has queued an answer on session (before libmicrohttpd writes
 * any of it): until wh_mhderr_unmark, every byte written on the session is
 * passed through as it is. Returns the mark to give back (never 0). With
 * more marks than the module holds (4096) it still returns one, and while
 * such a mark is out nothing is rewritten on any session. Lock-free,
 * allocates nothing. */
int wh_mhderr_mark(gnutls_session_t session);
/* The answer has been sent (or its request ended): give the mark back.
 * Once per mark; mark 0 (none) is ignored. */
void wh_mhderr_unmark(gnutls_session_t session, int mark);

#endif /* WH_MHDERR_H */
