/* test_server.c: --bind-address parsing (Go listen-address syntax). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "../testutil.h"
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

    const char *bad[] = {"443", "", ":", ":65536", ":-1", ":44x", "example.com:443", "[::1:443",
                         "1.2.3:443"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errbuf[0] = '\0';
        if (wh_server_parse_bind(bad[i], &ss, &len, errbuf) != WH_ERR_INVALID)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_non_null(strstr(errbuf, "--bind-address"));
    }
    assert_int_equal(wh_server_parse_bind(NULL, &ss, &len, errbuf), WH_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
