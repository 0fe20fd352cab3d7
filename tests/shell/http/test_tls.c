/* test_tls.c: key/certificate match, not-after and serial (OpenSSL), and
 * hot reload: a good new pair replaces the old one, a bad one is refused
 * while the old one keeps serving. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_pair),
        cmocka_unit_test(test_reload),
        cmocka_unit_test(test_hostile_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
