/* test_tls.c: key/certificate match, not-after and serial (OpenSSL), and
 * hot reload: a good new pair replaces the old one, a bad one (unreadable,
 * mismatched, expired, not valid yet, for another name) is refused while
 * the old one keeps serving, and refused files are judged again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "testutil.h"
#include "certs.h"
#include "wh/tls.h"

struct pem {
    struct wh_buf cert, key;
};

static struct wh_buf ca_cert, ca_key;

static int setup(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN];
    wh_buf_init(&ca_cert, 1 << 16);
    wh_buf_init(&ca_key, 1 << 16);
    return wh_certs_make_ca("test CA", 30, &ca_cert, &ca_key, errbuf) ? -1 : 0;
}

static int teardown(void **st)
{
    (void)st;
    wh_buf_free(&ca_cert);
    wh_buf_free(&ca_key);
    return 0;
}

static void make_pair(struct pem *p, int days)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    const char *sans[] = {"DNS:localhost", "IP:127.0.0.1"};
    wh_buf_init(&p->cert, 1 << 16);
    wh_buf_init(&p->key, 1 << 16);
    if (wh_certs_make_server(wh_buf_ptr(&ca_cert), wh_buf_len(&ca_cert), wh_buf_ptr(&ca_key),
                             wh_buf_len(&ca_key), sans, 2, days, &p->cert, &p->key, errbuf))
        fail_msg("make_server: %s", errbuf);
}

/* A pair for the given SANs, valid from now + from_s to now + to_s: the
 * certificate re-signed by the test CA with those dates. */
static void make_pair_at(struct pem *p, const char *const *sans, size_t n, long from_s, long to_s)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    struct pem made;
    wh_buf_init(&made.cert, 1 << 16);
    wh_buf_init(&made.key, 1 << 16);
    if (wh_certs_make_server(wh_buf_ptr(&ca_cert), wh_buf_len(&ca_cert), wh_buf_ptr(&ca_key),
                             wh_buf_len(&ca_key), sans, n, 30, &made.cert, &made.key, errbuf))
        fail_msg("make_server: %s", errbuf);
    BIO *cb = BIO_new_mem_buf(wh_buf_ptr(&made.cert), (int)wh_buf_len(&made.cert));
    BIO *kb = BIO_new_mem_buf(wh_buf_ptr(&ca_key), (int)wh_buf_len(&ca_key));
    X509 *x = PEM_read_bio_X509(cb, NULL, NULL, NULL);
    EVP_PKEY *ca = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
    assert_non_null(x);
    assert_non_null(ca);
    assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), from_s));
    assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), to_s));
    assert_true(X509_sign(x, ca, EVP_sha256()) > 0);
    BIO *out = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_X509(out, x), 1);
    char *data;
    long len = BIO_get_mem_data(out, &data);
    wh_buf_init(&p->cert, 1 << 16);
    assert_int_equal(wh_buf_addn(&p->cert, data, (size_t)len), WH_OK);
    p->key = made.key;
    wh_buf_free(&made.cert);
    BIO_free(out);
    BIO_free(cb);
    BIO_free(kb);
    X509_free(x);
    EVP_PKEY_free(ca);
}

static void free_pair(struct pem *p)
{
    wh_buf_free(&p->cert);
    wh_buf_free(&p->key);
}

static void test_check_pair(void **st)
{
    (void)st;
    struct pem a, b;
    make_pair(&a, 10);
    make_pair(&b, 100);
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_cert_info info;
    assert_int_equal(wh_tls_check_pair(wh_buf_ptr(&a.cert), wh_buf_len(&a.cert), wh_buf_ptr(&a.key),
                                       wh_buf_len(&a.key), &info, errbuf),
                     WH_OK);
    double days = difftime(info.not_after, time(NULL)) / 86400.0;
    assert_true(days > 9.9 && days <= 10.0);
    assert_true(strlen(info.serial) >= 16);
    assert_string_equal(info.subject, "/CN=localhost");
    /* The key of another pair. */
    assert_int_equal(wh_tls_check_pair(wh_buf_ptr(&a.cert), wh_buf_len(&a.cert), wh_buf_ptr(&b.key),
                                       wh_buf_len(&b.key), &info, errbuf),
                     WH_ERR_TLS);
    assert_non_null(strstr(errbuf, "does not match"));
    /* Garbage, an empty certificate, a certificate given as key. */
    const char *junk = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    assert_int_equal(wh_tls_check_pair(junk, strlen(junk), wh_buf_ptr(&a.key), wh_buf_len(&a.key),
                                       &info, errbuf),
                     WH_ERR_TLS);
    assert_non_null(strstr(errbuf, "certificate:"));
    assert_int_equal(wh_tls_check_pair("", 0, wh_buf_ptr(&a.key), wh_buf_len(&a.key), &info, errbuf),
                     WH_ERR_TLS);
    assert_int_equal(wh_tls_check_pair(wh_buf_ptr(&a.cert), wh_buf_len(&a.cert),
                                       wh_buf_ptr(&a.cert), wh_buf_len(&a.cert), &info, errbuf),
                     WH_ERR_TLS);
    assert_non_null(strstr(errbuf, "private key"));
    free_pair(&a);
    free_pair(&b);
}

static void write_file(const char *path, const struct wh_buf *b)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(wh_buf_ptr(b), 1, wh_buf_len(b), f), wh_buf_len(b));
    fclose(f);
}

static void served(struct wh_cert_info *info)
{
    gnutls_pcert_st *pc = NULL;
    unsigned n = 0;
    gnutls_privkey_t key = NULL;
    assert_int_equal(wh_tls_retrieve(NULL, NULL, 0, NULL, 0, &pc, &n, &key), 0);
    assert_non_null(pc);
    assert_int_equal(n, 1);
    assert_non_null(key);
    (void)info;
}

static void test_reload(void **st)
{
    (void)st;
    char dir[] = "/tmp/wh-test-tls-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char crt[64], key[64];
    snprintf(crt, sizeof(crt), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    struct pem a, b;
    make_pair(&a, 100);
    make_pair(&b, 200);
    write_file(crt, &a.cert);
    write_file(key, &a.key);
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_tls_opts o = {.cert_file = crt, .key_file = key};
    struct wh_tls *tls = wh_tls_new(&o, errbuf);
    if (!tls)
        fail_msg("wh_tls_new: %s", errbuf);
    struct wh_cert_info first, now;
    wh_tls_current(tls, &first);
    served(&first);
    assert_int_equal(wh_tls_poll(tls), 0); /* unchanged */
    /* Half a rotation: new certificate, old key -> refused, old pair stays. */
    write_file(crt, &b.cert);
    assert_int_equal(wh_tls_poll(tls), -1);
    assert_int_equal(wh_tls_poll(tls), 0); /* said once */
    wh_tls_current(tls, &now);
    assert_string_equal(now.serial, first.serial);
    /* The key arrives -> the new pair. */
    write_file(key, &b.key);
    assert_int_equal(wh_tls_poll(tls), 1);
    wh_tls_current(tls, &now);
    assert_string_not_equal(now.serial, first.serial);
    double days = difftime(now.not_after, time(NULL)) / 86400.0;
    assert_true(days > 199 && days <= 200);
    served(&now);
    /* A vanished file is refused too. */
    unlink(key);
    assert_int_equal(wh_tls_poll(tls), -1);
    assert_int_equal(wh_tls_poll(tls), 0);
    wh_tls_free(tls);
    /* After free no pair is served. */
    gnutls_pcert_st *pc;
    unsigned n;
    gnutls_privkey_t pk;
    assert_int_equal(wh_tls_retrieve(NULL, NULL, 0, NULL, 0, &pc, &n, &pk), -1);
    /* Start-up with a mismatched pair fails with the reason. */
    write_file(key, &a.key);
    assert_null(wh_tls_new(&o, errbuf));
    assert_non_null(strstr(errbuf, "does not match"));
    /* In memory (the base64 flags). */
    struct wh_tls_opts m = {.cert_pem = wh_buf_ptr(&a.cert),
                            .cert_len = wh_buf_len(&a.cert),
                            .key_pem = wh_buf_ptr(&a.key),
                            .key_len = wh_buf_len(&a.key)};
    tls = wh_tls_new(&m, errbuf);
    assert_non_null(tls);
    assert_int_equal(wh_tls_poll(tls), 0);
    wh_tls_free(tls);
    wh_tls_free(NULL);
    unlink(crt);
    unlink(key);
    rmdir(dir);
    free_pair(&a);
    free_pair(&b);
}

/* Files a Secret mount could hold instead of PEM: a FIFO (a blocking open
 * would wait for a writer for ever), a directory, a file over the size
 * limit, a chain longer than the handshake can carry. Each is refused at
 * once, and the pair already loaded keeps serving. */
static void test_hostile_files(void **st)
{
    (void)st;
    char dir[] = "/tmp/wh-test-tls-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char crt[64], key[64];
    snprintf(crt, sizeof(crt), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    struct pem a;
    make_pair(&a, 100);
    write_file(crt, &a.cert);
    write_file(key, &a.key);
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_tls_opts o = {.cert_file = crt, .key_file = key};
    struct wh_tls *tls = wh_tls_new(&o, errbuf);
    if (!tls)
        fail_msg("wh_tls_new: %s", errbuf);
    struct wh_cert_info first, now;
    wh_tls_current(tls, &first);
    /* A FIFO with no writer. */
    unlink(key);
    assert_int_equal(mkfifo(key, 0600), 0);
    assert_int_equal(wh_tls_poll(tls), -1);
    assert_null(wh_tls_new(&o, errbuf));
    assert_non_null(strstr(errbuf, "not a regular file"));
    /* A directory. */
    unlink(key);
    assert_int_equal(mkdir(key, 0700), 0);
    assert_int_equal(wh_tls_poll(tls), 0); /* the same problem: said once */
    assert_null(wh_tls_new(&o, errbuf));
    assert_non_null(strstr(errbuf, "not a regular file"));
    rmdir(key);
    /* Over the 1 MiB limit. */
    struct wh_buf big;
    wh_buf_init(&big, 2 << 20);
    while (wh_buf_len(&big) < (1 << 20) + 1)
        assert_int_equal(wh_buf_addn(&big, wh_buf_ptr(&a.key), wh_buf_len(&a.key)), WH_OK);
    write_file(key, &big);
    assert_int_equal(wh_tls_poll(tls), -1);
    assert_null(wh_tls_new(&o, errbuf));
    assert_non_null(strstr(errbuf, "over the 1048576-byte limit"));
    wh_buf_free(&big);
    /* Nine certificates: the leaf and eight copies of the CA. */
    struct wh_buf chain;
    wh_buf_init(&chain, 1 << 20);
    assert_int_equal(wh_buf_addn(&chain, wh_buf_ptr(&a.cert), wh_buf_len(&a.cert)), WH_OK);
    for (int i = 0; i < 8; i++)
        assert_int_equal(wh_buf_addn(&chain, wh_buf_ptr(&ca_cert), wh_buf_len(&ca_cert)), WH_OK);
    write_file(key, &a.key);
    write_file(crt, &chain);
    assert_int_equal(wh_tls_poll(tls), -1);
    assert_null(wh_tls_new(&o, errbuf));
    assert_non_null(strstr(errbuf, "chain of more than 8 certificates"));
    wh_tls_current(tls, &now);
    assert_string_equal(now.serial, first.serial);
    /* Eight are served. */
    wh_buf_free(&chain);
    wh_buf_init(&chain, 1 << 20);
    assert_int_equal(wh_buf_addn(&chain, wh_buf_ptr(&a.cert), wh_buf_len(&a.cert)), WH_OK);
    for (int i = 0; i < 7; i++)
        assert_int_equal(wh_buf_addn(&chain, wh_buf_ptr(&ca_cert), wh_buf_len(&ca_cert)), WH_OK);
    write_file(crt, &chain);
    struct wh_tls *eight = wh_tls_new(&o, errbuf);
    if (!eight)
        fail_msg("eight certificates: %s", errbuf);
    gnutls_pcert_st *pc;
    unsigned n;
    gnutls_privkey_t pk;
    assert_int_equal(wh_tls_retrieve(NULL, NULL, 0, NULL, 0, &pc, &n, &pk), 0);
    assert_int_equal(n, 8);
    wh_tls_free(eight);
    wh_tls_free(tls);
    wh_buf_free(&chain);
    unlink(crt);
    unlink(key);
    rmdir(dir);
    free_pair(&a);
}

/* Each refusal keeps the pair serving, logs once, keeps wh_tls_refused()
 * true, and leaves the files to be judged again at the next poll. */
static void expect_refused(struct wh_tls *tls, const char *serial)
{
    assert_int_equal(wh_tls_poll(tls), -1);
    assert_true(wh_tls_refused(tls));
    assert_int_equal(wh_tls_poll(tls), 0); /* said once */
    assert_true(wh_tls_refused(tls));
    struct wh_cert_info now;
    wh_tls_current(tls, &now);
    assert_string_equal(now.serial, serial);
}

/* A reload takes a certificate only if it is valid now and names the
 * Service (here derived from the first certificate: svc.ns.svc). */
static void test_reload_vetted(void **st)
{
    (void)st;
    char dir[] = "/tmp/wh-test-tls-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char crt[64], key[64];
    snprintf(crt, sizeof(crt), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    const char *svc[] = {"DNS:svc.ns.svc", "DNS:svc.ns.svc.cluster.local", "DNS:localhost"};
    const char *other[] = {"DNS:other.ns.svc", "DNS:localhost"};
    struct pem first, expired, later, wrong, good;
    make_pair_at(&first, svc, 3, -60, 86400);
    make_pair_at(&expired, svc, 3, -10 * 86400, -3600);
    /* Valid from 2 s after the clock skew allowed: taken within seconds. */
    make_pair_at(&later, svc, 3, WH_TLS_CLOCK_SKEW_S + 2, 86400);
    make_pair_at(&wrong, other, 2, -60, 86400);
    make_pair_at(&good, svc, 3, -60, 2 * 86400);
    write_file(crt, &first.cert);
    write_file(key, &first.key);
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_tls_opts o = {.cert_file = crt, .key_file = key};
    struct wh_tls *tls = wh_tls_new(&o, errbuf);
    if (!tls)
        fail_msg("wh_tls_new: %s", errbuf);
    struct wh_cert_info at_start, now;
    wh_tls_current(tls, &at_start);
    assert_false(wh_tls_refused(tls));
    /* Expired. */
    write_file(crt, &expired.cert);
    write_file(key, &expired.key);
    expect_refused(tls, at_start.serial);
    /* Another name. */
    write_file(crt, &wrong.cert);
    write_file(key, &wrong.key);
    expect_refused(tls, at_start.serial);
    /* The right certificate with the key of another. */
    write_file(crt, &good.cert);
    expect_refused(tls, at_start.serial);
    /* Not valid yet: refused, then taken without a change on disk once
     * its time comes (polled as the watcher does, bounded). */
    write_file(crt, &later.cert);
    write_file(key, &later.key);
    expect_refused(tls, at_start.serial);
    int rc = 0;
    for (int i = 0; i < 200 && rc != 1; i++) {
        rc = wh_tls_poll(tls);
        assert_true(rc == 0 || rc == 1);
        if (rc != 1)
            usleep(50 * 1000);
    }
    assert_int_equal(rc, 1);
    assert_false(wh_tls_refused(tls));
    wh_tls_current(tls, &now);
    assert_string_not_equal(now.serial, at_start.serial);
    /* Then a good one. */
    write_file(crt, &good.cert);
    write_file(key, &good.key);
    assert_int_equal(wh_tls_poll(tls), 1);
    assert_false(wh_tls_refused(tls));
    wh_tls_current(tls, &now);
    double days = difftime(now.not_after, time(NULL)) / 86400.0;
    assert_true(days > 1.99 && days <= 2.0);
    wh_tls_free(tls);
    /* Names given (--tls-dns-names) rule over the first certificate's. */
    write_file(crt, &first.cert);
    write_file(key, &first.key);
    struct wh_tls_opts named = {.cert_file = crt, .key_file = key, .dns_names = "other.ns.svc"};
    tls = wh_tls_new(&named, errbuf); /* served at start-up, with an error logged */
    if (!tls)
        fail_msg("wh_tls_new: %s", errbuf);
    write_file(crt, &good.cert);
    write_file(key, &good.key);
    wh_tls_current(tls, &at_start);
    expect_refused(tls, at_start.serial);
    write_file(crt, &wrong.cert);
    write_file(key, &wrong.key);
    assert_int_equal(wh_tls_poll(tls), 1);
    wh_tls_free(tls);
    unlink(crt);
    unlink(key);
    rmdir(dir);
    free_pair(&first);
    free_pair(&expired);
    free_pair(&later);
    free_pair(&wrong);
    free_pair(&good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_pair),
        cmocka_unit_test(test_reload),
        cmocka_unit_test(test_hostile_files),
        cmocka_unit_test(test_reload_vetted),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
