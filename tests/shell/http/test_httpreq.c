/* test_httpreq.c: the request checks made before libmicrohttpd reads a
 * body: ambiguous framing, control bytes in the path, routing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "httpreq.h"
#include "wh/routes.h"

/* The framing verdict of header lines given as "Name", "value" pairs. */
static const char *framing(const char *const *lines, size_t n)
{
    struct wh_http_framing f;
    wh_http_framing_init(&f);
    for (size_t i = 0; i + 1 < n; i += 2)
        wh_http_framing_add(&f, lines[i], strlen(lines[i]), lines[i + 1], strlen(lines[i + 1]));
    return wh_http_framing_problem(&f);
}

#define FRAMING(...)                            \
    framing((const char *const[]){__VA_ARGS__}, \
            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

static void test_framing_accepted(void **unused)
{
    (void)unused;
    assert_null(FRAMING("Host", "x"));
    assert_null(FRAMING("Content-Length", "12"));
    assert_null(FRAMING("content-length", " 12 ", "CONTENT-LENGTH", "12"));
    assert_null(FRAMING("Transfer-Encoding", "chunked"));
    assert_null(FRAMING("transfer-encoding", " Chunked\t"));
    assert_null(FRAMING("Content-Length", "0"));
}

static void test_framing_refused(void **unused)
{
    (void)unused;
    assert_string_equal(FRAMING("Content-Length", "2", "Content-Length", "3"),
                        "two different Content-Length headers");
    assert_string_equal(FRAMING("Content-Length", "2", "Transfer-Encoding", "chunked"),
                        "Content-Length together with Transfer-Encoding");
    assert_string_equal(FRAMING("Transfer-Encoding", "chunked", "Content-Length", "2"),
                        "Content-Length together with Transfer-Encoding");
    assert_non_null(strstr(FRAMING("Transfer-Encoding", "gzip"), "unsupported Transfer-Encoding"));
    assert_non_null(FRAMING("Transfer-Encoding", "gzip, chunked"));
    assert_non_null(FRAMING("Transfer-Encoding", "chunked", "Transfer-Encoding", "chunked"));
    assert_non_null(FRAMING("Transfer-Encoding", ""));
    /* White space before the colon: libmicrohttpd's name keeps it. */
    const char *spaced[] = {"Content-Length ", "Transfer-Encoding ", "content-length\t",
                            "TRANSFER-ENCODING \t", "Host "};
    for (size_t i = 0; i < sizeof(spaced) / sizeof(spaced[0]); i++)
        assert_string_equal(FRAMING(spaced[i], i % 2 ? "chunked" : "34"),
                            "white space between a header name and its colon (RFC 9112, section 5.1)");
    /* ... and still counts as the framing header it names. */
    assert_non_null(FRAMING("Content-Length ", "2", "Transfer-Encoding", "chunked"));
    const char *bad[] = {"", "abc", "-1", "+1", "1 2", "0x10", "1,1", "9999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_string_equal(FRAMING("Content-Length", bad[i]),
                            "Content-Length is not a decimal number of bytes");
}

static const char *target(const char *raw)
{
    return wh_http_target_problem(raw, strlen(raw));
}

static void test_target(void **unused)
{
    (void)unused;
    assert_null(target("/healthz"));
    assert_null(target("/mutate?timeout=10s"));
    assert_null(target("/heal%74hz"));
    assert_null(target("/x?a=%00")); /* the query string is never read */
    assert_null(target("/x%2"));     /* cut escape: decoded as is */
    assert_non_null(strstr(target("/healthz%00x"), "%00"));
    assert_non_null(target("/healthz%0A"));
    assert_non_null(target("/healthz%7f"));
    assert_non_null(target("/health\tz"));
    assert_non_null(target("/healthz\x01"));
}

static void test_route(void **unused)
{
    (void)unused;
    assert_int_equal(wh_route_find("/mutate"), WH_MPATH_MUTATE);
    assert_int_equal(wh_route_find("/validate"), WH_MPATH_VALIDATE);
    assert_int_equal(wh_route_find("/mutate-workload"), WH_MPATH_MUTATE_WORKLOAD);
    assert_int_equal(wh_route_find("/validate-workload"), WH_MPATH_VALIDATE_WORKLOAD);
    assert_int_equal(wh_route_find("/"), WH_MPATH_ROOT);
    assert_int_equal(wh_route_find("/healthz"), WH_MPATH_HEALTHZ);
    assert_int_equal(wh_route_find("/readyz"), WH_MPATH_READYZ);
    assert_int_equal(wh_route_find("/metrics"), WH_MPATH_METRICS);
    assert_int_equal(wh_route_find("/mutate/"), WH_MPATH_OTHER);
    assert_int_equal(wh_route_find(""), WH_MPATH_OTHER);
    /* Methods, the 405's Allow and the engine route, from the one table. */
    assert_true(wh_route_allows(WH_MPATH_MUTATE, "POST"));
    assert_false(wh_route_allows(WH_MPATH_MUTATE, "GET"));
    assert_false(wh_route_allows(WH_MPATH_MUTATE, "POS"));
    assert_true(wh_route_allows(WH_MPATH_HEALTHZ, "GET"));
    assert_true(wh_route_allows(WH_MPATH_HEALTHZ, "HEAD"));
    assert_false(wh_route_allows(WH_MPATH_HEALTHZ, "POST"));
    assert_false(wh_route_allows(WH_MPATH_HEALTHZ, "HEA"));
    assert_false(wh_route_allows(WH_MPATH_OTHER, "GET"));
    assert_string_equal(wh_routes[WH_MPATH_READYZ].allow, "GET, HEAD");
    assert_int_equal(wh_routes[WH_MPATH_VALIDATE_WORKLOAD].engine, WH_ROUTE_VALIDATE_WORKLOAD);
    assert_string_equal(wh_routes[WH_MPATH_OTHER].label, "other");
    /* The 404 lists the table, word for word as before the table. */
    assert_string_equal(wh_routes_not_found(),
                        "no such path; the webhook serves POST /mutate, /validate, "
                        "/mutate-workload and /validate-workload, GET /, /healthz, "
                        "/readyz, /metrics and /debug/slices");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_framing_accepted),
        cmocka_unit_test(test_framing_refused),
        cmocka_unit_test(test_target),
        cmocka_unit_test(test_route),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
