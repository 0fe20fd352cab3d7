/* test_metrics.c: Prometheus rendering of the server's counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "wh/metrics.h"

static void has(const char *text, const char *line)
{
    if (!strstr(text, line))
        fail_msg("metrics lack \"%s\" in:\n%s", line, text);
}

static void test_render(void **st)
{
    (void)st;
    struct wh_metrics *m = wh_metrics_new();
    assert_non_null(m);
    for (int i = 0; i < 3; i++)
        wh_metrics_begin(m);
    wh_metrics_end(m, WH_MPATH_MUTATE, 200, 80);   /* <= 100us */
    wh_metrics_end(m, WH_MPATH_MUTATE, 200, 3000); /* <= 5ms */
    wh_metrics_end(m, WH_MPATH_OTHER, 404, 10);
    wh_metrics_begin(m);
    wh_metrics_begin(m);
    wh_metrics_end(m, WH_MPATH_VALIDATE, 0, 9000000); /* client went away, +Inf */
    wh_metrics_end(m, WH_MPATH_VALIDATE, 418, 5);
    wh_metrics_begin(m); /* still in flight */
    struct wh_madmission patched = {.kind = "Pod", .allowed = true, .n_ops = 11};
    struct wh_madmission invalid = {.kind = "RayCluster"};
    struct wh_madmission unavailable = {.kind = "Pod", .state_unavailable = true};
    struct wh_madmission odd = {.kind = "pod-from-a-scanner", .allowed = true};
    wh_metrics_admission(m, WH_MPATH_MUTATE, &patched);
    wh_metrics_admission(m, WH_MPATH_VALIDATE, &invalid);
    wh_metrics_admission(m, WH_MPATH_MUTATE, &unavailable);
    wh_metrics_admission(m, WH_MPATH_MUTATE, &unavailable);
    wh_metrics_admission(m, WH_MPATH_VALIDATE, &odd);
    odd.kind = NULL;
    wh_metrics_admission(m, WH_MPATH_VALIDATE, &odd);
    wh_metrics_admission(m, WH_MPATH_OTHER, &patched); /* shown, being non-zero */
    struct wh_madmission jobset = {.kind = "JobSet"};
    wh_metrics_admission(m, WH_MPATH_VALIDATE_WORKLOAD, &jobset);
    wh_metrics_cert(m, 1900000000);
    wh_metrics_tls_reload(m, true);
    wh_metrics_tls_reload(m, false);
    wh_metrics_tls_reload(m, false);
    wh_metrics_timeout(m);
    assert_int_equal(wh_metrics_in_flight(m), 1);

    struct wh_mgauges s = {.synced = true,
                           .pods_synced = true,
                           .pods_trusted = false,
                           .nodes_down_ms = 12345,
                           .pods_cached = 7,
                           .nodes_cached = 3,
                           .reservations = 2,
                           .legacy_reviews = 4,
                           .legacy_wait_us = 1500};
    struct wh_mlive live = {.ready = true, .connections = 5};
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    assert_int_equal(wh_metrics_render(m, &s, &live, &b), WH_OK);
    const char *t = wh_buf_ptr(&b);
    has(t, "# TYPE tpu_webhook_http_requests_total counter\n");
    has(t, "tpu_webhook_http_requests_total{path=\"/mutate\",code=\"200\"} 2\n");
    has(t, "tpu_webhook_http_requests_total{path=\"other\",code=\"404\"} 1\n");
    has(t, "tpu_webhook_http_requests_total{path=\"/validate\",code=\"0\"} 1\n");
    has(t, "tpu_webhook_http_requests_total{path=\"/validate\",code=\"other\"} 1\n");
    assert_null(strstr(t, "{path=\"/\",code=")); /* zero series are left out */
    /* Cumulative buckets. */
    has(t, "tpu_webhook_http_request_duration_seconds_bucket{path=\"/mutate\",le=\"0.0001\"} 1\n");
    has(t, "tpu_webhook_http_request_duration_seconds_bucket{path=\"/mutate\",le=\"0.0025\"} 1\n");
    has(t, "tpu_webhook_http_request_duration_seconds_bucket{path=\"/mutate\",le=\"0.005\"} 2\n");
    has(t, "tpu_webhook_http_request_duration_seconds_bucket{path=\"/mutate\",le=\"+Inf\"} 2\n");
    has(t, "tpu_webhook_http_request_duration_seconds_sum{path=\"/mutate\"} 0.003080\n");
    has(t, "tpu_webhook_http_request_duration_seconds_count{path=\"/mutate\"} 2\n");
    has(t, "tpu_webhook_http_request_duration_seconds_bucket{path=\"/validate\",le=\"2.5\"} 1\n");
    has(t, "tpu_webhook_http_request_duration_seconds_bucket{path=\"/validate\",le=\"5\"} 1\n");
    has(t, "tpu_webhook_http_request_duration_seconds_bucket{path=\"/validate\",le=\"10\"} 2\n");
    has(t, "tpu_webhook_http_request_duration_seconds_bucket{path=\"/validate\",le=\"30\"} 2\n");
    has(t, "tpu_webhook_http_request_duration_seconds_bucket{path=\"/validate\",le=\"+Inf\"} 2\n");
    const char *adm = "tpu_webhook_admissions_total";
    char line[200];
    static const struct {
        const char *labels;
        int n;
    } want[] = {
        {"path=\"/mutate\",kind=\"Pod\",decision=\"allowed\",reason=\"patched\"", 1},
        {"path=\"/mutate\",kind=\"Pod\",decision=\"denied\",reason=\"cluster_state_unavailable\"", 2},
        {"path=\"/mutate\",kind=\"Pod\",decision=\"denied\",reason=\"invalid\"", 0},
        {"path=\"/validate\",kind=\"RayCluster\",decision=\"denied\",reason=\"invalid\"", 1},
        {"path=\"/validate\",kind=\"other\",decision=\"allowed\",reason=\"no_patch\"", 2},
        {"path=\"other\",kind=\"Pod\",decision=\"allowed\",reason=\"patched\"", 1},
        {"path=\"/validate-workload\",kind=\"JobSet\",decision=\"denied\",reason=\"invalid\"", 1},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        snprintf(line, sizeof(line), "%s{%s} %d\n", adm, want[i].labels, want[i].n);
        has(t, line);
    }
    /* KubeRay pods on /mutate and RayClusters on /validate show all four
     * reasons, zero or not; every other series only once non-zero. */
    size_t series = 0;
    for (const char *p = t; (p = strstr(p, "\ntpu_webhook_admissions_total{")); p++)
        series++;
    assert_int_equal(series, 4 + 4 + 3);
    assert_null(strstr(t, "path=\"/mutate\",kind=\"RayCluster\""));
    assert_null(strstr(t, "pod-from-a-scanner"));
    has(t, "tpu_webhook_patch_operations_total 22\n"); /* both "patched" admissions */
    has(t, "tpu_webhook_http_requests_in_flight 1\n");
    has(t, "tpu_webhook_http_open_connections 5\n");
    has(t, "tpu_webhook_ready 1\n");
    has(t, "tpu_webhook_http_connections_timed_out_total 1\n");
    has(t, "tpu_webhook_tls_cert_not_after_timestamp_seconds 1900000000\n");
    has(t, "tpu_webhook_tls_reloads_total{result=\"ok\"} 1\n");
    has(t, "tpu_webhook_tls_reloads_total{result=\"rejected\"} 2\n");
    has(t, "tpu_webhook_cache_synced{resource=\"pods\"} 1\n");
    has(t, "tpu_webhook_cache_synced{resource=\"nodes\"} 0\n");
    has(t, "tpu_webhook_cache_watch_down_seconds{resource=\"pods\"} 0\n");
    has(t, "tpu_webhook_cache_watch_down_seconds{resource=\"nodes\"} 12.345\n");
    has(t, "tpu_webhook_cache_pods_trusted 0\n");
    has(t, "tpu_webhook_cache_pods 7\n");
    has(t, "tpu_webhook_cache_nodes 3\n");
    has(t, "tpu_webhook_ledger_reservations 2\n");
    has(t, "tpu_webhook_legacy_reviews_total 4\n");
    has(t, "tpu_webhook_legacy_lock_wait_seconds_total 0.001500\n");
    has(t, "# TYPE process_resident_memory_bytes gauge\n");
    has(t, "# TYPE process_virtual_memory_bytes gauge\n");
    assert_null(strstr(t, "process_virtual_memory_bytes 0\n"));
    has(t, "# TYPE process_cpu_seconds_total counter\n");
    has(t, "# TYPE process_open_fds gauge\n");
    has(t, "# TYPE process_start_time_seconds gauge\n");
    assert_null(strstr(t, "process_resident_memory_bytes 0\n"));
    /* Every line is a comment or "name{labels} value". */
    for (const char *l = t; *l;) {
        const char *eol = strchr(l, '\n');
        assert_non_null(eol);
        if (*l != '#') {
            const char *sp = memchr(l, ' ', (size_t)(eol - l));
            assert_non_null(sp);
            assert_true(strncmp(l, "tpu_webhook_", 12) == 0 || strncmp(l, "process_", 8) == 0);
        }
        l = eol + 1;
    }
    wh_buf_free(&b);

    /* Without pipeline stats the cache gauges are left out; a tiny buffer fails cleanly. */
    wh_buf_init(&b, 1 << 20);
    assert_int_equal(wh_metrics_render(m, NULL, NULL, &b), WH_OK);
    assert_null(strstr(wh_buf_ptr(&b), "tpu_webhook_cache_pods"));
    assert_null(strstr(wh_buf_ptr(&b), "tpu_webhook_ready"));
    wh_buf_free(&b);
    wh_buf_init(&b, 64);
    assert_int_equal(wh_metrics_render(m, &s, &live, &b), WH_ERR_TOOBIG);
    assert_int_equal(wh_buf_len(&b), 0);
    wh_buf_free(&b);
    assert_string_equal(wh_metrics_path_label(WH_MPATH_ROOT), "/");
    assert_string_equal(wh_metrics_path_label((enum wh_mpath)99), "other");
    wh_metrics_free(m);
    wh_metrics_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
