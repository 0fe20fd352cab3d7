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
 * error header block that the webhook did not make (the webhook's own
 * answers all carry X-Content-Type-Options): that one is replaced by a
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

/* Resolve GnuTLS's own functions and check that the dynamic linker binds
 * gnutls_record_send and gnutls_record_recv to this module (false:
 * libmicrohttpd's own answers go out as it writes them, and a raw NUL cuts
 * its strings; the server logs that). *reads_guarded: whether reads are
 * checked for a NUL; not when libcurl also reads through GnuTLS (a
 * libcurl-gnutls build), whose API-server traffic holds NUL bytes. Call
 * once before serving; it also links this module into the program.
 * Thread-safe. */
bool wh_mhderr_install(bool *reads_guarded);

#endif /* WH_MHDERR_H */
