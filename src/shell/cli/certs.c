/* certs.c: development CA and server certificates (see certs.h). */
#include "certs.h"

#include <errno.h>    /* errno */
#include <fcntl.h>    /* open */
#include <stdio.h>    /* snprintf, rename */
#include <string.h>   /* strerror, strncmp */
#include <sys/stat.h> /* mkdir */
#include <unistd.h>   /* write, close, fsync */

#include <openssl/bio.h>    /* BIO_new */
#include <openssl/bn.h>     /* BN_rand */
#include <openssl/err.h>    /* ERR_get_error */
#include <openssl/evp.h>    /* EVP_PKEY */
#include <openssl/pem.h>    /* PEM_write_bio_X509 */
#include <openssl/x509v3.h> /* X509V3_EXT_conf_nid */

#include "wh/fileio.h" /* wh_read_file */

#define DNS_NAME_MAX 253

static enum wh_err ssl_fail(char *errbuf, const char *what)
{
    char why[256] = "no detail";
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, why, sizeof(why));
    ERR_clear_error();
    return wh_fail(errbuf, WH_ERR_TLS, "%s: %s", what, why);
}

/* Never prompt for a passphrase: OpenSSL's default asks on the terminal,
 * or reads stdin when there is none, and blocks. An encrypted key fails. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

static enum wh_err bio_to_buf(BIO *bio, struct wh_buf *out, char *errbuf)
{
    char *data = NULL;
    long n = BIO_get_mem_data(bio, &data);
    if (n <= 0 || wh_buf_addn(out, data, (size_t)n))
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory writing PEM");
    return WH_OK;
}

static enum wh_err pem_out(X509 *x, EVP_PKEY *k, struct wh_buf *cert_pem, struct wh_buf *key_pem,
                           char *errbuf)
{
    enum wh_err err = WH_OK;
    BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
    if (!cb || !kb || !PEM_write_bio_X509(cb, x) ||
        !PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL)) {
        err = ssl_fail(errbuf, "writing PEM");
        goto out;
    }
    err = bio_to_buf(cb, cert_pem, errbuf);
    if (!err)
        err = bio_to_buf(kb, key_pem, errbuf);
out:
    BIO_free(cb);
    BIO_free(kb);
    return err;
}

static bool add_ext(X509 *issuer, X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

/* A certificate skeleton: random 127-bit serial, validity from 5 minutes ago. */
static X509 *new_cert(EVP_PKEY *k, const char *cn, int days)
{
    X509 *x = X509_new();
    BIGNUM *bn = BN_new();
    bool ok = x && bn && X509_set_version(x, 2) &&
              BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
              BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
              X509_gmtime_adj(X509_getm_notBefore(x), -300) &&
              X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) && X509_set_pubkey(x, k) &&
              X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
                                         (const unsigned char *)cn, -1, -1, 0);
    BN_free(bn);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static enum wh_err check_days(int days, char *errbuf)
{
    if (days < 1 || days > 36500)
        return wh_fail(errbuf, WH_ERR_INVALID, "certificate lifetime %d days: use 1 to 36500", days);
    return WH_OK;
}

enum wh_err wh_certs_make_ca(const char *common_name, int days, struct wh_buf *cert_pem,
                             struct wh_buf *key_pem, char *errbuf)
{
    enum wh_err err = check_days(days, errbuf);
    if (err)
        return err;
    X509 *x = NULL;
    EVP_PKEY *k = EVP_EC_gen("P-256");
    if (!k)
        return ssl_fail(errbuf, "generating the CA key");
    x = new_cert(k, common_name, days);
    if (!x || !X509_set_issuer_name(x, X509_get_subject_name(x)) ||
        !add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE") ||
        !add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature") ||
        !add_ext(x, x, NID_subject_key_identifier, "hash") || !X509_sign(x, k, EVP_sha256())) {
        err = ssl_fail(errbuf, "building the CA certificate");
        goto out;
    }
    err = pem_out(x, k, cert_pem, key_pem, errbuf);
out:
    X509_free(x);
    EVP_PKEY_free(k);
    return err;
}

/* "DNS:a,DNS:b,IP:c" from the list; every entry must carry a known prefix. */
static enum wh_err san_value(const char *const *sans, size_t n, struct wh_buf *out, char *errbuf)
{
    if (n == 0 || n > WH_CERTS_MAX_SANS)
        return wh_fail(errbuf, WH_ERR_INVALID, "a server certificate needs 1 to %d names, got %zu",
                       WH_CERTS_MAX_SANS, n);
    for (size_t i = 0; i < n; i++) {
        const char *s = sans[i];
        if (strncmp(s, "DNS:", 4) && strncmp(s, "IP:", 3))
            return wh_fail(errbuf, WH_ERR_INVALID,
                           "subject alternative name \"%s\": write DNS:<name> or IP:<address>", s);
        if (strchr(s, ',') || s[strcspn(s, ":") + 1] == '\0')
            return wh_fail(errbuf, WH_ERR_INVALID,
                           "subject alternative name \"%s\": empty or contains a comma", s);
        if ((i && wh_buf_addc(out, ',')) || wh_buf_add(out, s))
            return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    }
    return WH_OK;
}

static const char *first_dns(const char *const *sans, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strncmp(sans[i], "DNS:", 4))
            return sans[i] + 4;
    return n ? strchr(sans[0], ':') + 1 : "server";
}

enum wh_err wh_certs_make_server(const char *ca_cert_pem, size_t ca_cert_len, const char *ca_key_pem,
                                 size_t ca_key_len, const char *const *sans, size_t n_sans, int days,
                                 struct wh_buf *cert_pem, struct wh_buf *key_pem, char *errbuf)
{
    X509 *ca = NULL, *x = NULL;
    EVP_PKEY *cak = NULL, *k = NULL;
    struct wh_buf san;
    wh_buf_init(&san, 4096);
    enum wh_err err = check_days(days, errbuf);
    if (!err)
        err = san_value(sans, n_sans, &san, errbuf);
    if (err)
        goto out;
    BIO *cb = BIO_new_mem_buf(ca_cert_pem, (int)ca_cert_len);
    BIO *kb = BIO_new_mem_buf(ca_key_pem, (int)ca_key_len);
    ca = cb ? PEM_read_bio_X509(cb, NULL, no_password, NULL) : NULL;
    cak = kb ? PEM_read_bio_PrivateKey(kb, NULL, no_password, NULL) : NULL;
    BIO_free(cb);
    BIO_free(kb);
    if (!ca || !cak || X509_check_private_key(ca, cak) != 1) {
        err = ssl_fail(errbuf, "the CA certificate and key do not load (an encrypted key is not "
                               "supported) or do not match");
        goto out;
    }
    k = EVP_EC_gen("P-256");
    if (!k) {
        err = ssl_fail(errbuf, "generating the server key");
        goto out;
    }
    x = new_cert(k, first_dns(sans, n_sans), days);
    if (!x || !X509_set_issuer_name(x, X509_get_subject_name(ca)) ||
        !add_ext(ca, x, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(ca, x, NID_key_usage, "critical,digitalSignature,keyEncipherment") ||
        !add_ext(ca, x, NID_ext_key_usage, "serverAuth") ||
        !add_ext(ca, x, NID_authority_key_identifier, "keyid:always") ||
        !add_ext(ca, x, NID_subject_alt_name, wh_buf_ptr(&san)) || !X509_sign(x, cak, EVP_sha256())) {
        err = ssl_fail(errbuf, "building the server certificate");
        goto out;
    }
    err = pem_out(x, k, cert_pem, key_pem, errbuf);
out:
    wh_buf_free(&san);
    X509_free(ca);
    X509_free(x);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(k);
    return err;
}

/* Write data to dir/name through dir/.name.tmp and rename(2). */
static enum wh_err write_file(const char *dir, const char *name, const struct wh_buf *data,
                              mode_t mode, char *errbuf)
{
    char path[4096], tmp[4096];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
        snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= (int)sizeof(tmp))
        return wh_fail(errbuf, WH_ERR_INVALID, "directory path too long: %s", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return wh_fail(errbuf, WH_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    const char *p = wh_buf_ptr(data);
    size_t left = wh_buf_len(data);
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return wh_fail(errbuf, WH_ERR_IO, "cannot write %s: %s", tmp, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fchmod(fd, mode) || fsync(fd) || close(fd) || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return wh_fail(errbuf, WH_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    return WH_OK;
}

static enum wh_err read_existing(const char *dir, const char *name, struct wh_buf *out, bool *found,
                                 char *errbuf)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    *found = access(path, F_OK) == 0;
    if (!*found)
        return WH_OK;
    return wh_read_file(path, out, errbuf);
}

static enum wh_err make_dir(const char *dir, char *errbuf)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
        return wh_fail(errbuf, WH_ERR_INVALID, "directory path too long: %s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) && errno != EEXIST)
            return wh_fail(errbuf, WH_ERR_IO, "cannot create directory %s: %s", path,
                           strerror(errno));
        *p = '/';
    }
    if (mkdir(path, 0700) && errno != EEXIST)
        return wh_fail(errbuf, WH_ERR_IO, "cannot create directory %s: %s", path, strerror(errno));
    return WH_OK;
}

enum wh_err wh_certs_write(const struct wh_certs_opts *o, bool *ca_reused, char *errbuf)
{
    struct wh_buf ca_cert, ca_key, cert, key;
    wh_buf_init(&ca_cert, 1 << 20);
    wh_buf_init(&ca_key, 1 << 20);
    wh_buf_init(&cert, 1 << 20);
    wh_buf_init(&key, 1 << 20);
    char names[4][300];
    const char *sans[WH_CERTS_MAX_SANS];
    size_t n = 0;
    *ca_reused = false;
    enum wh_err err = make_dir(o->dir, errbuf);
    if (err)
        goto out;
    bool have_cert = false, have_key = false;
    if (!o->new_ca) {
        err = read_existing(o->dir, "ca.crt", &ca_cert, &have_cert, errbuf);
        if (!err)
            err = read_existing(o->dir, "ca.key", &ca_key, &have_key, errbuf);
        if (err)
            goto out;
    }
    if (have_cert && have_key) {
        *ca_reused = true;
    } else {
        wh_buf_reset(&ca_cert);
        wh_buf_reset(&ca_key);
        err = wh_certs_make_ca("tpu-webhook development CA", o->ca_days, &ca_cert, &ca_key, errbuf);
        if (!err)
            err = write_file(o->dir, "ca.key", &ca_key, 0600, errbuf);
        if (!err)
            err = write_file(o->dir, "ca.crt", &ca_cert, 0644, errbuf);
        if (err)
            goto out;
    }
    /* service.ns.svc, service.ns.svc.cluster.local, service.ns, service */
    static const char *const suffixes[4] = {".svc", ".svc.cluster.local", "", NULL};
    for (size_t i = 0; i < 4; i++) {
        /* A cut name would be a certificate for some other name. */
        int len = suffixes[i] ? snprintf(names[i], sizeof(names[i]), "DNS:%s.%s%s", o->service,
                                         o->ns, suffixes[i])
                              : snprintf(names[i], sizeof(names[i]), "DNS:%s", o->service);
        if (len < 0 || len - 4 > DNS_NAME_MAX) {
            err = wh_fail(errbuf, WH_ERR_INVALID,
                          "--service/--namespace: %s.%s.svc.cluster.local is longer than a "
                          "DNS name may be (%d characters); shorten them",
                          o->service, o->ns, DNS_NAME_MAX);
            goto out;
        }
        sans[n++] = names[i];
    }
    sans[n++] = "DNS:localhost";
    sans[n++] = "IP:127.0.0.1";
    sans[n++] = "IP:::1";
    for (size_t i = 0; i < o->n_extra_sans && n < WH_CERTS_MAX_SANS; i++)
        sans[n++] = o->extra_sans[i];
    if (o->n_extra_sans > WH_CERTS_MAX_SANS - 7) {
        err = wh_fail(errbuf, WH_ERR_INVALID, "at most %d extra names", WH_CERTS_MAX_SANS - 7);
        goto out;
    }
    err = wh_certs_make_server(wh_buf_ptr(&ca_cert), wh_buf_len(&ca_cert), wh_buf_ptr(&ca_key),
                               wh_buf_len(&ca_key), sans, n, o->days, &cert, &key, errbuf);
    /* A server polling between the two renames sees a mismatched pair,
     * rejects it and keeps the old one until the second file lands. */
    if (!err)
        err = write_file(o->dir, "tls.key", &key, 0600, errbuf);
    if (!err)
        err = write_file(o->dir, "tls.crt", &cert, 0644, errbuf);
out:
    wh_buf_free(&ca_cert);
    wh_buf_free(&ca_key);
    wh_buf_free(&cert);
    wh_buf_free(&key);
    return err;
}
