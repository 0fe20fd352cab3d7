/* test_server.c: --bind-address parsing (Go listen-address syntax); the
 * listening socket's single close when the daemon does not start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/resource.h> /* setrlimit */
#include <sys/syscall.h>  /* SYS_close */
#include <unistd.h>       /* syscall */

#include "testutil.h"
#include "wh/server.h"

static void test_bind(void **st)
{
    (void)st;
    struct sockaddr_storage ss;
    socklen_t len;
    char errbuf[WH_ERRBUF_LEN] = "";
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;

    assert_int_equal(wh_server_parse_bind(":443", &ss, &len, errbuf), WH_OK);
    assert_int_equal(ss.ss_family, AF_INET6); /* dual stack, every address */
    assert_int_equal(ntohs(v6->sin6_port), 443);
    assert_true(IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr));

    assert_int_equal(wh_server_parse_bind("127.0.0.1:8443", &ss, &len, errbuf), WH_OK);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(ntohs(v4->sin_port), 8443);
    assert_int_equal(ntohl(v4->sin_addr.s_addr), 0x7f000001);
    assert_int_equal(len, sizeof(struct sockaddr_in));

    assert_int_equal(wh_server_parse_bind("localhost:0", &ss, &len, errbuf), WH_OK);
    assert_int_equal(ntohl(v4->sin_addr.s_addr), 0x7f000001);
    assert_int_equal(wh_server_parse_bind("0.0.0.0:1", &ss, &len, errbuf), WH_OK);
    assert_int_equal(ss.ss_family, AF_INET);

    assert_int_equal(wh_server_parse_bind("[::1]:9443", &ss, &len, errbuf), WH_OK);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_true(IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr));
    assert_int_equal(ntohs(v6->sin6_port), 9443);

    const char *bad[] = {"443",      "",         ":", ":65536", ":-1", ":44x", "example.com:443",
                         "[::1:443", "1.2.3:443"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errbuf[0] = '\0';
        if (wh_server_parse_bind(bad[i], &ss, &len, errbuf) != WH_ERR_INVALID)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_non_null(strstr(errbuf, "--bind-address"));
    }
    assert_int_equal(wh_server_parse_bind(NULL, &ss, &len, errbuf), WH_ERR_INVALID);
}

/* A pipeline the server must never call: these tests end before a request. */
static enum wh_err stub_decide(void *ctx, const struct wh_review *rv, enum wh_route route,
                               struct wh_engine_result *res, char *errbuf)
{
    (void)ctx, (void)rv, (void)route, (void)res, (void)errbuf;
    fail_msg("decide called");
    return WH_ERR_INTERNAL;
}
static bool stub_ready(void *ctx, char *why, size_t why_len)
{
    (void)ctx, (void)why, (void)why_len;
    fail_msg("ready called");
    return false;
}
static void stub_stats(void *ctx, struct wh_mgauges *gs)
{
    (void)ctx, (void)gs;
    fail_msg("stats called");
}
static const struct wh_pipeline pl = {.decide = stub_decide,
                                      .ready = stub_ready,
                                      .stats = stub_stats};

/* A server without a whole pipeline is refused before it binds anything. */
static void test_start_needs_a_pipeline(void **st)
{
    (void)st;
    struct wh_server_opts o = {.bind = "127.0.0.1:0",
                               .threads = 1,
                               .max_connections = 8,
                               .idle_timeout_ms = 1000,
                               .header_timeout_ms = 1000,
                               .request_timeout_ms = 1000,
                               .max_body = 1024};
    struct wh_metrics *m = wh_metrics_new();
    struct wh_pipeline half = pl;
    half.stats = NULL;
    const struct wh_pipeline *bad[] = {NULL, &half};
    for (size_t i = 0; i < 2; i++) {
        char errbuf[WH_ERRBUF_LEN] = "";
        assert_null(wh_server_start(&o, bad[i], m, errbuf));
        assert_non_null(strstr(errbuf, "admission pipeline"));
    }
    wh_metrics_free(m);
}

/* Every close(2) in the process, libmicrohttpd's included, goes through
 * here while a test watches one descriptor: a second close of it would, in
 * a threaded server, close whatever another thread opened in between. */
static int watched_fd = -1;
static int watched_closes;

int close(int fd)
{
    if (fd >= 0 && fd == watched_fd)
        watched_closes++;
    return (int)syscall(SYS_close, fd);
}

static void test_start_failure_closes_listener_once(void **st)
{
    (void)st;
    /* The listener gets the last descriptor the limit allows, so the
     * daemon's own epoll and ITC descriptors cannot be made. */
    int probe = dup(0);
    assert_true(probe >= 0);
    close(probe);
    struct rlimit old, tight;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    tight = old;
    tight.rlim_cur = (rlim_t)probe + 1;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &tight), 0);
    watched_fd = probe;
    watched_closes = 0;
    struct wh_server_opts o = {.bind = "127.0.0.1:0",
                               .threads = 2,
                               .max_connections = 8,
                               .idle_timeout_ms = 1000,
                               .header_timeout_ms = 1000,
                               .request_timeout_ms = 1000,
                               .max_body = 1024};
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_metrics *m = wh_metrics_new();
    struct wh_server *s = wh_server_start(&o, &pl, m, errbuf);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    watched_fd = -1;
    wh_server_free(s);
    wh_metrics_free(m);
    assert_null(s);
    assert_true(errbuf[0] != '\0');
    if (watched_closes > 1)
        fail_msg("listening socket %d closed %d times", probe, watched_closes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind),
        cmocka_unit_test(test_start_needs_a_pipeline),
        cmocka_unit_test(test_start_failure_closes_listener_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
