/* certs.h: development certificates (OpenSSL): a CA and a server certificate.
 *
 * For the quick start, the tests and clusters without cert-manager. Keys are
 * ECDSA P-256; certificates are X.509 v3 signed with SHA-256.
 */
#ifndef WH_CERTS_H
#define WH_CERTS_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/buf.h" /* struct wh_buf */
#include "wh/err.h" /* enum wh_err */

#define WH_CERTS_MAX_SANS 16

/* Append a new self-signed CA certificate and its key (PEM) to the buffers. */
WH_NODISCARD enum wh_err wh_certs_make_ca(const char *common_name, int days, struct wh_buf *cert_pem,
                                          struct wh_buf *key_pem, char *errbuf);

/* Append a server certificate for the given SANs ("DNS:name" or "IP:addr")
 * signed by the CA, and its new key. The first DNS SAN is the subject CN. */
WH_NODISCARD enum wh_err wh_certs_make_server(const char *ca_cert_pem, size_t ca_cert_len,
                                              const char *ca_key_pem, size_t ca_key_len,
                                              const char *const *sans, size_t n_sans, int days,
                                              struct wh_buf *cert_pem, struct wh_buf *key_pem,
                                              char *errbuf);

struct wh_certs_opts {
    const char *dir;               /* created if missing (mode 0700) */
    const char *ns;                /* service namespace, e.g. ray-system */
    const char *service;           /* service name, e.g. kuberay-tpu-webhook */
    int days;                      /* server certificate lifetime */
    int ca_days;                   /* CA lifetime (new CA only) */
    bool new_ca;                   /* replace an existing ca.crt/ca.key */
    const char *const *extra_sans; /* more "DNS:x"/"IP:y" entries */
    size_t n_extra_sans;
};

/* Write <dir>/ca.crt, ca.key (kept when present unless new_ca), tls.crt and
 * tls.key. Each file is written to a temporary name and renamed, so a server
 * watching the directory never reads half a file; keys are mode 0600.
 * *ca_reused tells whether an existing CA signed the new certificate. */
WH_NODISCARD enum wh_err wh_certs_write(const struct wh_certs_opts *opts, bool *ca_reused,
                                        char *errbuf);

#endif /* WH_CERTS_H */
