/* clientca.h: the CAs a client certificate must chain to (--client-ca-file;
 * private to the http room: tls.c holds one per struct wh_tls).
 *
 * The file is watched as the serving pair is (wh/tls.h): a new file is
 * taken only if every certificate in it is a CA valid now (give or take
 * WH_TLS_CLOCK_SKEW_S); otherwise the CAs before keep verifying, the reason
 * is logged once per reason, and the file is judged again at every poll.
 * A replaced set stays alive for the grace of a handshake that picked it.
 */
#ifndef WH_CLIENTCA_H
#define WH_CLIENTCA_H

#include <stdbool.h> /* bool */
#include <time.h>    /* time_t */

#include <gnutls/gnutls.h> /* gnutls_session_t */

struct wh_clientca;

/* Load the file (it must load). NULL with the reason in errbuf. Free with
 * wh_clientca_free() after the server using it has stopped. */
struct wh_clientca *wh_clientca_new(const char *file, char *errbuf);
void wh_clientca_free(struct wh_clientca *ca); /* NULL-safe */

/* Re-read the file if it changed or was refused: 1 when new CAs were
 * installed, -1 when a refusal was logged, 0 otherwise. One thread only
 * (the certificate watcher's), as wh_clientca_refused. */
int wh_clientca_poll(struct wh_clientca *ca);
bool wh_clientca_refused(const struct wh_clientca *ca);

/* The earliest notAfter of the CAs now verifying; once it passes, every
 * client certificate it signed is refused. Same thread as the poll. */
time_t wh_clientca_not_after(const struct wh_clientca *ca);
/* Log tls_client_ca_expiring when that is under WH_TLS_WARN_DAYS away
 * (at each load, and at the serving pair's expiry checks). */
void wh_clientca_warn_if_expiring(const struct wh_clientca *ca);

/* The body of GnuTLS's verify callback for a session: 0 when the client
 * sent no certificate or one that chains to the CAs and is for client
 * authentication; -1 (the handshake fails) otherwise, counted
 * (wh_tls_client_refusals) and logged at most once per 10 s. Any thread. */
int wh_clientca_verify(struct wh_clientca *ca, gnutls_session_t session);

#endif /* WH_CLIENTCA_H */
