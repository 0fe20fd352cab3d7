/* test_certs.c: the development CA and server certificates: names,
 * extensions, lifetimes, CA reuse and file modes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h> /* kill */
#include <sys/stat.h>
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, pipe, dup2 */

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "testutil.h"
#include "certs.h"
#include "wh/tls.h"

static X509 *parse(const struct wh_buf *b)
{
    BIO *bio = BIO_new_mem_buf(wh_buf_ptr(b), (int)wh_buf_len(b));
    X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    assert_non_null(x);
    return x;
}

static void test_server_cert(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_buf cac, cak, c, k;
    wh_buf_init(&cac, 1 << 16);
    wh_buf_init(&cak, 1 << 16);
    wh_buf_init(&c, 1 << 16);
    wh_buf_init(&k, 1 << 16);
    assert_int_equal(wh_certs_make_ca("CA", 10, &cac, &cak, errbuf), WH_OK);
    const char *sans[] = {"DNS:svc.ns.svc", "DNS:localhost", "IP:127.0.0.1"};
    assert_int_equal(wh_certs_make_server(wh_buf_ptr(&cac), wh_buf_len(&cac), wh_buf_ptr(&cak),
                                          wh_buf_len(&cak), sans, 3, 5, &c, &k, errbuf),
                     WH_OK);
    X509 *ca = parse(&cac), *x = parse(&c);
    assert_int_equal(X509_check_ca(ca), 1);
    assert_int_equal(X509_check_ca(x), 0);
    assert_int_equal(X509_check_host(x, "svc.ns.svc", 0, 0, NULL), 1);
    assert_int_equal(X509_check_host(x, "localhost", 0, 0, NULL), 1);
    assert_int_equal(X509_check_host(x, "other", 0, 0, NULL), 0);
    assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
    assert_int_equal(X509_check_issued(ca, x), X509_V_OK);
    EVP_PKEY *cakey = X509_get0_pubkey(ca);
    assert_int_equal(X509_verify(x, cakey), 1);
    struct wh_cert_info info;
    assert_int_equal(wh_tls_check_pair(wh_buf_ptr(&c), wh_buf_len(&c), wh_buf_ptr(&k),
                                       wh_buf_len(&k), &info, errbuf),
                     WH_OK);
    assert_string_equal(info.subject, "/CN=svc.ns.svc");
    X509_free(ca);
    X509_free(x);
    /* Bad requests. */
    const char *bad[] = {"example.com"};
    assert_int_equal(wh_certs_make_server(wh_buf_ptr(&cac), wh_buf_len(&cac), wh_buf_ptr(&cak),
                                          wh_buf_len(&cak), bad, 1, 5, &c, &k, errbuf),
                     WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "DNS:<name>"));
    assert_int_equal(wh_certs_make_server(wh_buf_ptr(&cac), wh_buf_len(&cac), wh_buf_ptr(&cak),
                                          wh_buf_len(&cak), sans, 3, 0, &c, &k, errbuf),
                     WH_ERR_INVALID);
    assert_int_equal(wh_certs_make_server(wh_buf_ptr(&cac), wh_buf_len(&cac), wh_buf_ptr(&k),
                                          wh_buf_len(&k), sans, 3, 5, &c, &k, errbuf),
                     WH_ERR_TLS);
    wh_buf_free(&cac);
    wh_buf_free(&cak);
    wh_buf_free(&c);
    wh_buf_free(&k);
}

/* An encrypted CA key is refused at once: never a passphrase prompt, which
 * (with no terminal) would read from stdin and block. */
static void test_encrypted_ca_key(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_buf cac, cak, c, k;
    wh_buf_init(&cac, 1 << 16);
    wh_buf_init(&cak, 1 << 16);
    wh_buf_init(&c, 1 << 16);
    wh_buf_init(&k, 1 << 16);
    assert_int_equal(wh_certs_make_ca("CA", 10, &cac, &cak, errbuf), WH_OK);
    BIO *in = BIO_new_mem_buf(wh_buf_ptr(&cak), (int)wh_buf_len(&cak));
    EVP_PKEY *key = PEM_read_bio_PrivateKey(in, NULL, NULL, NULL);
    BIO_free(in);
    assert_non_null(key);
    BIO *out = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_PrivateKey(out, key, EVP_aes_128_cbc(), NULL, 0, NULL,
                                              (void *)"secret"),
                     1);
    char *enc = NULL;
    long enc_len = BIO_get_mem_data(out, &enc);
    /* In a child whose stdin is a pipe that stays open and silent: a
     * passphrase prompt there blocks for good (OpenSSL takes over the
     * signals while it reads, so an alarm cannot end it). */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[0], STDIN_FILENO);
        const char *sans[] = {"DNS:localhost"};
        enum wh_err err = wh_certs_make_server(wh_buf_ptr(&cac), wh_buf_len(&cac), enc,
                                               (size_t)enc_len, sans, 1, 5, &c, &k, errbuf);
        _exit(err == WH_ERR_TLS && strstr(errbuf, "CA") ? 0 : 1);
    }
    int status = -1;
    for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) != pid; i++)
        usleep(10000);
    close(fds[0]);
    close(fds[1]);
    if (status == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("blocked asking for the CA key's passphrase");
    }
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    BIO_free(out);
    EVP_PKEY_free(key);
    wh_buf_free(&cac);
    wh_buf_free(&cak);
    wh_buf_free(&c);
    wh_buf_free(&k);
}

static char *slurp(const char *dir, const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return wh_test_read_file(path, NULL);
}

static int mode_of(const char *dir, const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return (int)(sb.st_mode & 0777);
}

static void test_write_dir(void **st)
{
    (void)st;
    char base[] = "/tmp/wh-test-certs-XXXXXX";
    assert_non_null(mkdtemp(base));
    char dir[96];
    snprintf(dir, sizeof(dir), "%s/a/b", base); /* parents are created */
    const char *extra[] = {"DNS:webhook.example"};
    struct wh_certs_opts o = {.dir = dir,
                              .ns = "ray-system",
                              .service = "kuberay-tpu-webhook",
                              .days = 30,
                              .ca_days = 60,
                              .extra_sans = extra,
                              .n_extra_sans = 1};
    char errbuf[WH_ERRBUF_LEN] = "";
    bool reused = true;
    assert_int_equal(wh_certs_write(&o, &reused, errbuf), WH_OK);
    assert_false(reused);
    assert_int_equal(mode_of(dir, "ca.key"), 0600);
    assert_int_equal(mode_of(dir, "tls.key"), 0600);
    assert_int_equal(mode_of(dir, "tls.crt"), 0644);
    char *ca1 = slurp(dir, "ca.crt"), *crt1 = slurp(dir, "tls.crt");
    struct wh_buf b;
    wh_buf_init(&b, 1 << 16);
    assert_int_equal(wh_buf_add(&b, crt1), WH_OK);
    X509 *x = parse(&b);
    assert_int_equal(X509_check_host(x, "kuberay-tpu-webhook.ray-system.svc", 0, 0, NULL), 1);
    assert_int_equal(X509_check_host(x, "kuberay-tpu-webhook.ray-system.svc.cluster.local", 0, 0,
                                     NULL),
                     1);
    assert_int_equal(X509_check_host(x, "webhook.example", 0, 0, NULL), 1);
    assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
    assert_int_equal(X509_check_ip_asc(x, "::1", 0), 1);
    X509_free(x);
    /* Second run: same CA, new server certificate. */
    assert_int_equal(wh_certs_write(&o, &reused, errbuf), WH_OK);
    assert_true(reused);
    char *ca2 = slurp(dir, "ca.crt"), *crt2 = slurp(dir, "tls.crt");
    assert_string_equal(ca1, ca2);
    assert_string_not_equal(crt1, crt2);
    /* --new-ca replaces it. */
    o.new_ca = true;
    assert_int_equal(wh_certs_write(&o, &reused, errbuf), WH_OK);
    assert_false(reused);
    char *ca3 = slurp(dir, "ca.crt");
    assert_string_not_equal(ca1, ca3);
    free(ca1), free(ca2), free(ca3), free(crt1), free(crt2);
    wh_buf_free(&b);
    /* A service name that would not fit a DNS name is refused, not cut. */
    char long_service[300];
    memset(long_service, 'a', sizeof(long_service) - 1);
    long_service[sizeof(long_service) - 1] = '\0';
    o.service = long_service;
    assert_int_equal(wh_certs_write(&o, &reused, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "--service/--namespace"));
    o.service = "kuberay-tpu-webhook";
    /* A directory that cannot be made. */
    o.dir = "/proc/no/such/dir";
    assert_int_not_equal(wh_certs_write(&o, &reused, errbuf), WH_OK);
    assert_non_null(strstr(errbuf, "/proc/no"));
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_cert),
        cmocka_unit_test(test_write_dir),
        cmocka_unit_test(test_encrypted_ca_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
