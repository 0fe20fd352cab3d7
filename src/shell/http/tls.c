/* tls.c: serving certificate with hot reload (see tls.h). */
#include "wh/tls.h"

#include <stdatomic.h> /* _Atomic */
#include <stdlib.h>    /* calloc, free */
#include <string.h>    /* memcmp, strcmp, strdup, strtok_r */

#include <openssl/bio.h>    /* BIO_new_mem_buf */
#include <openssl/bn.h>     /* BN_bn2hex */
#include <openssl/err.h>    /* ERR_get_error */
#include <openssl/pem.h>    /* PEM_read_bio_X509 */
#include <openssl/x509.h>   /* X509_check_private_key */
#include <openssl/x509v3.h> /* X509_check_host, GENERAL_NAME */

#include "wh/buf.h"    /* wh_buf */
#include "wh/fileio.h" /* wh_read_regular_file */
#include "wh/log.h"    /* wh_log */
#include "clientca.h"  /* wh_clientca_* */
#include "retire.h"    /* wh_retire_* */

#define MAX_CHAIN 8
#define PEM_MAX ((size_t)1024 * 1024)
#define EXPIRY_CHECK_S 3600

struct pair {
    gnutls_pcert_st pcerts[MAX_CHAIN];
    unsigned n_pcerts;
    gnutls_privkey_t key;
    struct wh_cert_info info;
    struct wh_retire_node retire;
};

struct wh_tls {
    _Atomic(struct pair *) cur;
    /* The client CAs (--client-ca-file), or NULL: no client certificate
     * asked for. Set before the server starts, never changed. */
    struct wh_clientca *ca;
    char *cert_file; /* NULL for an in-memory pair */
    char *key_file;
    struct wh_buf seen_cert; /* file contents last tried */
    struct wh_buf seen_key;
    char last_problem[WH_ERRBUF_LEN]; /* last logged read failure */
    /* The seen files hold a pair that is not served; why (logged once per
     * reason). Judged again at every poll: a certificate not valid yet
     * becomes valid without a change on disk. */
    bool refused;
    char refusal[WH_ERRBUF_LEN];
    /* DNS names every new certificate must carry (wh_tls_opts.dns_names). */
    char *names[WH_TLS_MAX_NAMES];
    unsigned n_names;
    /* Replaced pairs a handshake may still hold (retire.h). */
    struct wh_retire_list retired;
    time_t next_expiry_check;
};

static _Atomic(struct wh_tls *) active;

/* Pending OpenSSL errors as text (this thread's queue), then cleared. */
static const char *ssl_reason(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    if (!e) {
        snprintf(buf, len, "no detail");
    } else {
        ERR_error_string_n(e, buf, len);
    }
    ERR_clear_error();
    return buf;
}

/* Never prompt for a passphrase: an encrypted key is an error. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

static enum wh_err describe(X509 *x, struct wh_cert_info *info, char *errbuf)
{
    memset(info, 0, sizeof(*info));
    struct tm tm;
    if (!ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm))
        return wh_fail(errbuf, WH_ERR_TLS, "certificate has an unreadable notAfter");
    info->not_after = timegm(&tm);
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    snprintf(info->serial, sizeof(info->serial), "%s", hex ? hex : "");
    OPENSSL_free(hex);
    BN_free(bn);
    X509_NAME_oneline(X509_get_subject_name(x), info->subject, (int)sizeof(info->subject));
    return WH_OK;
}

enum wh_err wh_tls_check_pair(const char *cert_pem, size_t cert_len, const char *key_pem,
                              size_t key_len, struct wh_cert_info *info, char *errbuf)
{
    enum wh_err err = WH_OK;
    char why[256];
    X509 *x = NULL;
    EVP_PKEY *k = NULL;
    ERR_clear_error();
    if (cert_len > PEM_MAX || key_len > PEM_MAX)
        return wh_fail(errbuf, WH_ERR_TLS, "certificate or key larger than %zu bytes", PEM_MAX);
    BIO *cb = BIO_new_mem_buf(cert_pem, (int)cert_len);
    BIO *kb = BIO_new_mem_buf(key_pem, (int)key_len);
    if (!cb || !kb) {
        err = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory reading PEM");
        goto out;
    }
    x = PEM_read_bio_X509(cb, NULL, no_password, NULL);
    if (!x) {
        err = wh_fail(errbuf, WH_ERR_TLS, "certificate: no PEM CERTIFICATE block could be read (%s)",
                      ssl_reason(why, sizeof(why)));
        goto out;
    }
    k = PEM_read_bio_PrivateKey(kb, NULL, no_password, NULL);
    if (!k) {
        err = wh_fail(errbuf, WH_ERR_TLS,
                      "private key: no unencrypted PEM private key could be read (%s)",
                      ssl_reason(why, sizeof(why)));
        goto out;
    }
    if (X509_check_private_key(x, k) != 1) {
        ERR_clear_error();
        err = wh_fail(errbuf, WH_ERR_TLS,
                      "private key does not match the certificate (public keys differ)");
        goto out;
    }
    err = describe(x, info, errbuf);
out:
    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(cb);
    BIO_free(kb);
    return err;
}

/* The certificate of cert_pem as OpenSSL reads it, or NULL. */
static X509 *read_x509(const char *pem, size_t len)
{
    BIO *b = len <= PEM_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
    X509 *x = b ? PEM_read_bio_X509(b, NULL, no_password, NULL) : NULL;
    BIO_free(b);
    ERR_clear_error();
    return x;
}

static void fmt_time(time_t t, char *out, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Why x cannot serve at now (NULL: it can): outside its validity (give or
 * take WH_TLS_CLOCK_SKEW_S), or without one of the names. */
static enum wh_err vet_x509(const struct wh_tls *tls, X509 *x, time_t now, char *errbuf)
{
    struct tm nb, na;
    if (!ASN1_TIME_to_tm(X509_get0_notBefore(x), &nb) ||
        !ASN1_TIME_to_tm(X509_get0_notAfter(x), &na))
        return wh_fail(errbuf, WH_ERR_TLS, "certificate has an unreadable validity period");
    time_t not_before = timegm(&nb), not_after = timegm(&na);
    char when[32];
    if (not_before > now + WH_TLS_CLOCK_SKEW_S) {
        fmt_time(not_before, when, sizeof(when));
        return wh_fail(errbuf, WH_ERR_TLS,
                       "certificate is not valid yet (notBefore %s): it is taken at the first "
                       "poll after that time",
                       when);
    }
    if (not_after < now - WH_TLS_CLOCK_SKEW_S) {
        fmt_time(not_after, when, sizeof(when));
        return wh_fail(errbuf, WH_ERR_TLS,
                       "certificate has expired (notAfter %s): renew it (cert-manager, or "
                       "certs/install-without-cert-manager.sh)",
                       when);
    }
    for (unsigned i = 0; i < tls->n_names; i++)
        if (X509_check_host(x, tls->names[i], 0, 0, NULL) != 1) {
            ERR_clear_error();
            return wh_fail(errbuf, WH_ERR_TLS,
                           "certificate does not name %s, which the API server verifies "
                           "(--tls-dns-names): issue it for the webhook's Service",
                           tls->names[i]);
        }
    return WH_OK;
}

static enum wh_err vet_pem(const struct wh_tls *tls, const char *pem, size_t len, char *errbuf)
{
    X509 *x = read_x509(pem, len);
    if (!x)
        return wh_fail(errbuf, WH_ERR_TLS, "certificate: no PEM CERTIFICATE block could be read");
    enum wh_err err = vet_x509(tls, x, time(NULL), errbuf);
    X509_free(x);
    return err;
}

/* names: the comma-separated list given, else the Service names
 * ("<service>.<namespace>.svc") of the certificate loaded first: what the
 * API server has verified so far. */
static enum wh_err set_names(struct wh_tls *tls, const char *list, const char *pem, size_t len,
                             char *errbuf)
{
    if (list && *list) {
        char *copy = strdup(list), *save = NULL;
        if (!copy)
            return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            while (*t == ' ')
                t++;
            if (!*t)
                continue;
            if (tls->n_names == WH_TLS_MAX_NAMES) {
                free(copy);
                return wh_fail(errbuf, WH_ERR_INVALID, "--tls-dns-names: more than %d names",
                               WH_TLS_MAX_NAMES);
            }
            if (!(tls->names[tls->n_names++] = strdup(t))) {
                free(copy);
                return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
            }
        }
        free(copy);
        return WH_OK;
    }
    X509 *x = read_x509(pem, len);
    GENERAL_NAMES *gens = x ? X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL) : NULL;
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type != GEN_DNS || tls->n_names == WH_TLS_MAX_NAMES)
            continue;
        const char *v = (const char *)ASN1_STRING_get0_data(g->d.dNSName);
        size_t n = (size_t)ASN1_STRING_length(g->d.dNSName);
        if (n > 4 && strlen(v) == n && !strcmp(v + n - 4, ".svc"))
            tls->names[tls->n_names++] = strdup(v);
    }
    GENERAL_NAMES_free(gens);
    X509_free(x);
    for (unsigned i = 0; i < tls->n_names; i++)
        if (!tls->names[i])
            return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    return WH_OK;
}

static void log_names(const struct wh_tls *tls)
{
    char list[512] = "";
    size_t n = 0;
    for (unsigned i = 0; i < tls->n_names && n < sizeof(list); i++) {
        int w = snprintf(list + n, sizeof(list) - n, "%s%s", i ? "," : "", tls->names[i]);
        n += w > 0 ? (size_t)w : 0;
    }
    if (tls->n_names)
        wh_log(WH_LOG_NOTICE, "tls_names", "names", WH_F_STR, list, (char *)NULL);
    else
        wh_log(WH_LOG_WARN, "tls_names_unchecked", "reason", WH_F_STR,
               "the certificate names no <service>.<namespace>.svc and --tls-dns-names is "
               "empty: a renewed certificate is not checked for the names the API server "
               "verifies",
               (char *)NULL);
}

static void pair_free(struct pair *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n_pcerts; i++)
        gnutls_pcert_deinit(&p->pcerts[i]);
    gnutls_privkey_deinit(p->key);
    free(p);
}

static void pair_retired_free(struct wh_retire_node *node)
{
    pair_free(WH_RETIRED_OBJ(node, struct pair, retire));
}

static enum wh_err pair_load(const char *cert_pem, size_t cert_len, const char *key_pem,
                             size_t key_len, struct pair **out, char *errbuf)
{
    *out = NULL;
    struct wh_cert_info info;
    enum wh_err err = wh_tls_check_pair(cert_pem, cert_len, key_pem, key_len, &info, errbuf);
    if (err)
        return err;
    struct pair *p = calloc(1, sizeof(*p));
    if (!p)
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory loading the certificate");
    p->info = info;
    gnutls_datum_t cd = {(unsigned char *)cert_pem, (unsigned)cert_len};
    gnutls_datum_t kd = {(unsigned char *)key_pem, (unsigned)key_len};
    unsigned n = MAX_CHAIN;
    /* Without FAIL_IF_EXCEED GnuTLS keeps the first MAX_CHAIN certificates
     * and drops the rest without a word. */
    int rc = gnutls_pcert_list_import_x509_raw(p->pcerts, &n, &cd, GNUTLS_X509_FMT_PEM,
                                               GNUTLS_X509_CRT_LIST_IMPORT_FAIL_IF_EXCEED);
    if (rc < 0) {
        free(p);
        if (rc == GNUTLS_E_SHORT_MEMORY_BUFFER)
            return wh_fail(errbuf, WH_ERR_TLS,
                           "certificate chain of more than %d certificates (serve the leaf and "
                           "its intermediates only)",
                           MAX_CHAIN);
        return wh_fail(errbuf, WH_ERR_TLS, "certificate chain: %s", gnutls_strerror(rc));
    }
    p->n_pcerts = n;
    rc = gnutls_privkey_init(&p->key);
    if (rc >= 0)
        rc = gnutls_privkey_import_x509_raw(p->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (rc < 0) {
        pair_free(p);
        return wh_fail(errbuf, WH_ERR_TLS, "private key: %s", gnutls_strerror(rc));
    }
    *out = p;
    return WH_OK;
}

static void warn_if_expiring(const struct wh_cert_info *info)
{
    double days = difftime(info->not_after, time(NULL)) / 86400.0;
    if (days < WH_TLS_WARN_DAYS)
        wh_log(WH_LOG_WARN, "tls_cert_expiring", "serial", WH_F_STR, info->serial, "subject",
               WH_F_STR, info->subject, "not_after", WH_F_INT, (long long)info->not_after,
               "days_left", WH_F_DBL, days, "fix", WH_F_STR,
               "renew the certificate; the server picks up new files without a restart",
               (char *)NULL);
}

static void log_pair(const char *event, const struct wh_cert_info *info, const char *source)
{
    wh_log(WH_LOG_NOTICE, event, "source", WH_F_STR, source, "serial", WH_F_STR, info->serial,
           "subject", WH_F_STR, info->subject, "not_after", WH_F_INT, (long long)info->not_after,
           (char *)NULL);
}

/* Read both files into the two buffers; errbuf names the file on failure. */
static enum wh_err read_pair(const struct wh_tls *tls, struct wh_buf *cert, struct wh_buf *key,
                             char *errbuf)
{
    char why[WH_ERRBUF_LEN] = "";
    enum wh_err err = wh_read_regular_file(tls->cert_file, cert, why);
    if (err)
        return wh_fail(errbuf, err, "failed to read server cert file %s: %s", tls->cert_file,
                       why[0] ? why : wh_strerror(err));
    err = wh_read_regular_file(tls->key_file, key, why);
    if (err)
        return wh_fail(errbuf, err, "failed to read server key file %s: %s", tls->key_file,
                       why[0] ? why : wh_strerror(err));
    return WH_OK;
}

struct wh_tls *wh_tls_new(const struct wh_tls_opts *opts, char *errbuf)
{
    struct wh_tls *tls = calloc(1, sizeof(*tls));
    struct pair *p = NULL;
    if (!tls) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    wh_buf_init(&tls->seen_cert, PEM_MAX);
    wh_buf_init(&tls->seen_key, PEM_MAX);
    enum wh_err err;
    if (opts->cert_file && opts->key_file) {
        tls->cert_file = strdup(opts->cert_file);
        tls->key_file = strdup(opts->key_file);
        if (!tls->cert_file || !tls->key_file) {
            wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
            goto fail;
        }
        err = read_pair(tls, &tls->seen_cert, &tls->seen_key, errbuf);
        if (!err)
            err = pair_load(wh_buf_ptr(&tls->seen_cert), wh_buf_len(&tls->seen_cert),
                            wh_buf_ptr(&tls->seen_key), wh_buf_len(&tls->seen_key), &p, errbuf);
    } else if (opts->cert_pem && opts->key_pem) {
        err = pair_load(opts->cert_pem, opts->cert_len, opts->key_pem, opts->key_len, &p, errbuf);
    } else {
        err = wh_fail(errbuf, WH_ERR_INVALID, "no certificate and key given");
    }
    if (!err && tls->cert_file)
        err = set_names(tls, opts->dns_names, wh_buf_ptr(&tls->seen_cert),
                        wh_buf_len(&tls->seen_cert), errbuf);
    if (!err && opts->client_ca_file && *opts->client_ca_file)
        err = (tls->ca = wh_clientca_new(opts->client_ca_file, errbuf)) ? WH_OK : WH_ERR_TLS;
    if (err)
        goto fail;
    atomic_store(&tls->cur, p);
    atomic_store(&active, tls);
    log_pair("tls_loaded", &p->info, tls->cert_file ? tls->cert_file : "flags");
    warn_if_expiring(&p->info);
    if (tls->cert_file) {
        log_names(tls);
        /* Nothing else to serve at start-up: said, and served. */
        char why[WH_ERRBUF_LEN];
        if (vet_pem(tls, wh_buf_ptr(&tls->seen_cert), wh_buf_len(&tls->seen_cert), why))
            wh_log(WH_LOG_ERROR, "tls_cert_invalid", "reason", WH_F_STR, why, "action", WH_F_STR,
                   "serving it (no other certificate); clients will refuse the handshake",
                   (char *)NULL);
    }
    tls->next_expiry_check = time(NULL) + EXPIRY_CHECK_S;
    return tls;
fail:
    pair_free(p);
    wh_tls_free(tls);
    return NULL;
}

void wh_tls_free(struct wh_tls *tls)
{
    if (!tls)
        return;
    struct wh_tls *expected = tls;
    atomic_compare_exchange_strong(&active, &expected, NULL);
    pair_free(atomic_load(&tls->cur));
    wh_retire_drain(&tls->retired);
    wh_clientca_free(tls->ca);
    wh_buf_free(&tls->seen_cert);
    wh_buf_free(&tls->seen_key);
    for (unsigned i = 0; i < tls->n_names; i++)
        free(tls->names[i]);
    free(tls->cert_file);
    free(tls->key_file);
    free(tls);
}

static bool same(const struct wh_buf *a, const struct wh_buf *b)
{
    return wh_buf_len(a) == wh_buf_len(b) && !memcmp(wh_buf_ptr(a), wh_buf_ptr(b), wh_buf_len(a));
}

/* Move the contents of src into dst (both bounded by PEM_MAX). */
static void take_buf(struct wh_buf *dst, struct wh_buf *src)
{
    wh_buf_free(dst);
    *dst = *src;
    wh_buf_init(src, PEM_MAX);
}

static void check_expiry(struct wh_tls *tls)
{
    time_t now = time(NULL);
    if (now < tls->next_expiry_check)
        return;
    tls->next_expiry_check = now + EXPIRY_CHECK_S;
    warn_if_expiring(&atomic_load(&tls->cur)->info);
    if (tls->ca)
        wh_clientca_warn_if_expiring(tls->ca);
}

static int poll_pair(struct wh_tls *tls)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_buf cert, key;
    wh_buf_init(&cert, PEM_MAX);
    wh_buf_init(&key, PEM_MAX);
    int rc = 0;
    struct pair *p = NULL;
    enum wh_err err = read_pair(tls, &cert, &key, errbuf);
    if (err) {
        /* Mid-rotation (a file briefly missing) is normal; say it once. */
        if (strcmp(errbuf, tls->last_problem)) {
            snprintf(tls->last_problem, sizeof(tls->last_problem), "%s", errbuf);
            wh_log(WH_LOG_WARN, "tls_reload_rejected", "reason", WH_F_STR, errbuf, "action",
                   WH_F_STR, "keeping the certificate already loaded", (char *)NULL);
            rc = -1;
        }
        goto out;
    }
    tls->last_problem[0] = '\0';
    bool changed = !same(&cert, &tls->seen_cert) || !same(&key, &tls->seen_key);
    if (!changed && !tls->refused)
        goto out;
    err = vet_pem(tls, wh_buf_ptr(&cert), wh_buf_len(&cert), errbuf);
    if (!err)
        err = pair_load(wh_buf_ptr(&cert), wh_buf_len(&cert), wh_buf_ptr(&key), wh_buf_len(&key),
                        &p, errbuf);
    take_buf(&tls->seen_cert, &cert);
    take_buf(&tls->seen_key, &key);
    if (err) {
        /* Judged again at every poll, logged once per reason. */
        tls->refused = true;
        if (changed || strcmp(errbuf, tls->refusal)) {
            snprintf(tls->refusal, sizeof(tls->refusal), "%s", errbuf);
            wh_log(WH_LOG_ERROR, "tls_reload_rejected", "cert_file", WH_F_STR, tls->cert_file,
                   "key_file", WH_F_STR, tls->key_file, "reason", WH_F_STR, errbuf, "action",
                   WH_F_STR, "keeping the certificate already loaded", (char *)NULL);
            rc = -1;
        }
        goto out;
    }
    tls->refused = false;
    tls->refusal[0] = '\0';
    struct pair *old = atomic_exchange(&tls->cur, p);
    wh_retire_push(&tls->retired, &old->retire, pair_retired_free, time(NULL));
    log_pair("tls_reloaded", &p->info, tls->cert_file);
    warn_if_expiring(&p->info);
    rc = 1;
out:
    wh_buf_free(&cert);
    wh_buf_free(&key);
    return rc;
}

int wh_tls_poll(struct wh_tls *tls)
{
    if (!tls)
        return 0;
    check_expiry(tls);
    wh_retire_reap(&tls->retired, time(NULL));
    int a = tls->cert_file ? poll_pair(tls) : 0;
    int b = tls->ca ? wh_clientca_poll(tls->ca) : 0;
    return a < 0 || b < 0 ? -1 : a > 0 || b > 0 ? 1 : 0;
}

time_t wh_tls_client_ca_not_after(const struct wh_tls *tls)
{
    return tls && tls->ca ? wh_clientca_not_after(tls->ca) : 0;
}

bool wh_tls_refused(const struct wh_tls *tls)
{
    return tls && (tls->refused || (tls->ca && wh_clientca_refused(tls->ca)));
}

void wh_tls_current(struct wh_tls *tls, struct wh_cert_info *info)
{
    *info = atomic_load(&tls->cur)->info;
}

int wh_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    (void)session, (void)req_ca_dn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
    struct wh_tls *tls = atomic_load(&active);
    struct pair *p = tls ? atomic_load(&tls->cur) : NULL;
    if (!p)
        return -1;
    *pcert = p->pcerts;
    *pcert_length = p->n_pcerts;
    *pkey = p->key;
    return 0;
}

/* GnuTLS's verify callback (no user pointer: the active wh_tls). */
static int verify_client(gnutls_session_t session)
{
    struct wh_tls *tls = atomic_load(&active);
    return tls && tls->ca ? wh_clientca_verify(tls->ca, session) : 0;
}

void wh_tls_session_start(gnutls_session_t session)
{
    struct wh_tls *tls = atomic_load(&active);
    if (!tls || !tls->ca)
        return;
    gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUEST);
    gnutls_session_set_verify_function(session, verify_client);
}

bool wh_tls_client_verified(gnutls_session_t session)
{
    struct wh_tls *tls = atomic_load(&active);
    if (!tls || !tls->ca)
        return true;
    unsigned n = 0;
    return session && gnutls_certificate_get_peers(session, &n) && n > 0;
}

bool wh_tls_client_ca_on(void)
{
    struct wh_tls *tls = atomic_load(&active);
    return tls && tls->ca;
}
