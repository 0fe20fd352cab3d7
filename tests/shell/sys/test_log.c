/* test_log.c: structured log lines (captured from stderr). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/log.h"

/* stderr redirected to a temporary file; capture_end returns what was
 * written in between (caller frees). */
struct capture {
    FILE *f;
    int saved;
};

static void capture_begin(struct capture *c)
{
    c->f = tmpfile();
    assert_non_null(c->f);
    c->saved = dup(STDERR_FILENO);
    assert_true(c->saved >= 0);
    assert_true(dup2(fileno(c->f), STDERR_FILENO) >= 0);
}

static char *capture_end(struct capture *c)
{
    assert_true(dup2(c->saved, STDERR_FILENO) >= 0);
    close(c->saved);
    off_t n = lseek(fileno(c->f), 0, SEEK_END);
    assert_true(n >= 0);
    char *text = calloc(1, (size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(pread(fileno(c->f), text, (size_t)n, 0), n);
    fclose(c->f);
    return text;
}

static void test_fields(void **st)
{
    (void)st;
    wh_log_set_verbosity(1);
    struct capture c;
    capture_begin(&c);
    wh_log(WH_LOG_INFO, "admission", "uid", WH_F_STR, "u\"1", "ops", WH_F_INT, 3LL, "ok", WH_F_BOOL,
           1, (char *)NULL);
    wh_log(WH_LOG_DEBUG, "hidden", (char *)NULL); /* above --v=1 */
    char *text = capture_end(&c);
    assert_non_null(strchr(text, '\n'));
    assert_null(strchr(strchr(text, '\n') + 1, '\n')); /* one line only */
    cJSON *j = wh_test_parse(text);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "event")->valuestring, "admission");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "uid")->valuestring, "u\"1");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "ops")->valueint, 3);
    cJSON_Delete(j);
    free(text);
}

static cJSON *item(const cJSON *j, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(j, key);
}

/* What Cloud Logging reads: time (RFC 3339), severity by its names,
 * message; then event and the fields. */
static void test_cloud_logging_fields(void **st)
{
    (void)st;
    wh_log_set_verbosity(0);
    struct capture c;
    capture_begin(&c);
    wh_log(WH_LOG_NOTICE, "tls_loaded", "serial", WH_F_STR, "01", (char *)NULL);
    wh_log(WH_LOG_INFO, "admission", (char *)NULL); /* --v=1 only */
    wh_log(WH_LOG_WARN, "claim_failed", "lease", WH_F_STR, "x", "error", WH_F_STR, "HTTP 500",
           (char *)NULL);
    wh_log(WH_LOG_ERROR, "bad_flag", "error", WH_F_STR, "no such flag", (char *)NULL);
    wh_log_msg(WH_LOG_CRITICAL, "startup_failed", "cannot listen", "flags", WH_F_JSON,
               "{\"v\":\"1\"}", (char *)NULL);
    wh_log(WH_LOG_DEBUG, "hidden", (char *)NULL);
    /* A reason that already names the event is not prefixed twice. */
    wh_log(WH_LOG_ERROR, "tls_reload_rejected", "reason", WH_F_STR,
           "TLS reload rejected: the certificate has expired", (char *)NULL);
    /* A field named message is the message, written once (libmicrohttpd's
     * log lines had two "message" keys). */
    wh_log(WH_LOG_WARN, "mhd", "message", WH_F_STR,
           "Error: received handshake message out of order", (char *)NULL);
    char *text = capture_end(&c);
    static const char *const want[][3] = {
        {"INFO", "tls loaded", "tls_loaded"},
        {"WARNING", "claim failed: HTTP 500", "claim_failed"},
        {"ERROR", "bad flag: no such flag", "bad_flag"},
        {"CRITICAL", "cannot listen", "startup_failed"},
        {"ERROR", "TLS reload rejected: the certificate has expired", "tls_reload_rejected"},
        {"WARNING", "Error: received handshake message out of order", "mhd"},
    };
    char *line = text;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        /* one "message" key: cJSON would quietly take the first of two */
        char *m = strstr(line, "\"message\":");
        assert_non_null(m);
        assert_null(strstr(m + 1, "\"message\":"));
        cJSON *j = wh_test_parse(line);
        const char *t = item(j, "time")->valuestring;
        assert_int_equal(strlen(t), strlen("2026-12-01T22:47:11.123456Z"));
        assert_true(t[4] == '-' && t[10] == 'T' && t[19] == '.' && t[26] == 'Z');
        assert_string_equal(item(j, "severity")->valuestring, want[i][0]);
        assert_string_equal(item(j, "message")->valuestring, want[i][1]);
        assert_string_equal(item(j, "event")->valuestring, want[i][2]);
        if (i == 3)
            assert_string_equal(item(item(j, "flags"), "v")->valuestring, "1");
        cJSON_Delete(j);
        line = nl + 1;
    }
    assert_string_equal(line, ""); /* nothing else: not INFO or DEBUG at --v=0 */
    free(text);
}

/* A field as large as a request body is cut, not the line dropped. */
static void test_huge_field_is_truncated(void **st)
{
    (void)st;
    wh_log_set_verbosity(1);
    size_t big = 200 * 1024;
    char *name = malloc(big + 1);
    assert_non_null(name);
    for (size_t i = 0; i < big; i += 2) { /* "é" repeated: two-byte UTF-8 */
        name[i] = (char)0xC3;
        name[i + 1] = (char)0xA9;
    }
    name[big] = '\0';
    struct capture c;
    capture_begin(&c);
    wh_log(WH_LOG_WARN, "admission", "name", WH_F_STR, name, "uid", WH_F_STR, "abc", (char *)NULL);
    char *text = capture_end(&c);
    free(name);
    assert_true(strlen(text) > 0);
    assert_true(strlen(text) < 8 * 1024);
    cJSON *j = wh_test_parse(text);
    const char *logged = cJSON_GetObjectItemCaseSensitive(j, "name")->valuestring;
    assert_non_null(strstr(logged, "(204800 bytes, truncated)"));
    assert_true(((unsigned char)logged[0]) == 0xC3);
    const char *dots = strstr(logged, "...");
    assert_true((dots - logged) % 2 == 0); /* no half character before the marker */
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "uid")->valuestring, "abc");
    cJSON_Delete(j);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_huge_field_is_truncated),
        cmocka_unit_test(test_cloud_logging_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
