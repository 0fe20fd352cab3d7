/* tls.h: the serving certificate, hot-reloaded (shell only).
 *
 * A struct wh_tls holds the key pair new TLS handshakes use. When it was
 * loaded from files it can re-read them (wh_tls_poll): a new pair replaces
 * the old one only if both PEMs parse, the key matches the certificate, the
 * certificate is valid now (give or take WH_TLS_CLOCK_SKEW_S) and names
 * every DNS name the webhook serves (wh_tls_opts.dns_names); otherwise the
 * old pair keeps serving, the reason is logged once per reason, and the
 * refused files are judged again at every poll (a certificate not valid
 * yet is taken once it is). Handshakes pick the pair through wh_tls_retrieve(), the GnuTLS
 * certificate callback handed to libmicrohttpd (MHD_OPTION_HTTPS_CERT_CALLBACK).
 * GnuTLS gives that callback no user pointer, so the most recently created
 * wh_tls is the one it serves: one wh_tls per process.
 *
 * The same wh_tls may hold the CAs of client certificates (below).
 *
 * Certificate inspection (match check, not-after, serial) uses OpenSSL.
 */
#ifndef WH_TLS_H
#define WH_TLS_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <time.h>    /* time_t */

#include <gnutls/abstract.h> /* gnutls_pcert_st, gnutls_privkey_t */

#include "wh/err.h" /* enum wh_err */

/* GnuTLS priorities: TLS 1.2 and 1.3 only, AEAD ciphers, ECDHE key exchange. */
#define WH_TLS_PRIORITIES                                                                  \
    "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:" \
    "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE"

/* A new certificate may start this much after now, or have ended this
 * much before, and still be taken: clocks of the issuer and of this node
 * differ by a few seconds. */
#define WH_TLS_CLOCK_SKEW_S 5
#define WH_TLS_MAX_NAMES 16

/* Warn when the certificate expires in fewer than this many days. */
#define WH_TLS_WARN_DAYS 15

struct wh_cert_info {
    time_t not_after;
    char serial[80]; /* upper-case hex */
    char subject[256];
};

/* Check that key_pem is the private key of the first certificate in
 * cert_pem (OpenSSL) and describe that certificate. WH_ERR_TLS with the
 * reason (bad PEM, no certificate, key mismatch, encrypted key) in errbuf. */
WH_NODISCARD enum wh_err wh_tls_check_pair(const char *cert_pem, size_t cert_len,
                                           const char *key_pem, size_t key_len,
                                           struct wh_cert_info *info, char *errbuf);

struct wh_tls_opts {
    /* Either both files (watched) ... */
    const char *cert_file;
    const char *key_file;
    /* ... or both PEMs in memory (static; copied). */
    const char *cert_pem;
    size_t cert_len;
    const char *key_pem;
    size_t key_len;
    /* Files only: comma-separated DNS names a reloaded certificate must
     * name (--tls-dns-names). NULL or empty: the "<service>.<namespace>.svc"
     * names of the certificate loaded first. Copied. */
    const char *dns_names;
    /* PEM CAs a client certificate must chain to (--client-ca-file), or
     * NULL: no client certificate asked for. Watched as the pair is: a
     * file that does not load (unreadable, no certificate, not a CA, not
     * valid now) keeps the CAs before and is judged again at every poll.
     * At start-up it must load. Copied. */
    const char *client_ca_file;
};

struct wh_tls;

/* Load the first pair. NULL with the reason in errbuf when it does not load.
 * Free with wh_tls_free() after the server using it has stopped. */
struct wh_tls *wh_tls_new(const struct wh_tls_opts *opts, char *errbuf);
void wh_tls_free(struct wh_tls *tls); /* NULL-safe */

/* Re-read the files (pair and client CA) if they changed or were refused. Returns 1 when
 * a new pair was installed, -1 when a refusal was logged (a change, or a
 * new reason for the same files), 0 otherwise. Call from one thread only.
 * An in-memory pair is not polled (its client CA file is). */
int wh_tls_poll(struct wh_tls *tls);

/* True while the files hold a pair or a client CA that was refused (the
 * one before serves); false for in-memory pairs. Same thread as
 * wh_tls_poll. */
bool wh_tls_refused(const struct wh_tls *tls);

/* Facts about the pair now serving. */
void wh_tls_current(struct wh_tls *tls, struct wh_cert_info *info);

/* The GnuTLS retrieve callback (gnutls_certificate_retrieve_function2). */
int wh_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey);

/* Client certificates (wh_tls_opts.client_ca_file). A handshake asks for
 * one without requiring it: the kubelet's probes have none. A certificate
 * sent is verified during the handshake against the CAs loaded then (and
 * for client authentication); one that does not verify ends the handshake
 * (logged at most once per 10 s, counted). */

/* Prepare a new session, before its handshake (libmicrohttpd's connection
 * notification). A no-op without a client CA. */
void wh_tls_session_start(gnutls_session_t session);

/* True when the session's client sent a certificate (verified at the
 * handshake), or when no client CA is configured. */
bool wh_tls_client_verified(gnutls_session_t session);

/* True when a client CA is configured. */
bool wh_tls_client_ca_on(void);

/* The earliest notAfter of the client CAs now verifying; 0 without a
 * client CA. Same thread as wh_tls_poll. */
time_t wh_tls_client_ca_not_after(const struct wh_tls *tls);

/* Handshakes refused for their client certificate since start. */
long long wh_tls_client_refusals(void);

#endif /* WH_TLS_H */
