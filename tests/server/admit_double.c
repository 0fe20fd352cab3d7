/* admit_double.c: a test double of the admission pipeline, linked only into
 * wh-serve-double, never into the product, and handed to the server through
 * its interface (struct wh_pipeline, wh/server.h; wh_cmd_serve_with in
 * wh/commands.h): the real pipeline (wh/admit.h) is linked too, unused. It
 * answers like the real pipeline's contract says (the engine's own parser reads the review):
 * WH_ERR_KIND for the wrong kind on a
 * route, otherwise an AdmissionReview response (allowed, except a
 * RayCluster named "deny-me"). WH_TEST_ADMIT_DELAY_MS makes every review
 * take that long, so shutdown tests have requests in flight. */
#include <stdatomic.h> /* atomic_llong */
#include <stdio.h>     /* snprintf */
#include <stdlib.h>    /* calloc, getenv */
#include <string.h>    /* strcmp */
#include <time.h>      /* nanosleep */

#include "admit_double.h"
#include "wh/buf.h"
#include "wh/json.h"
#include "wh/mem.h"

struct double_admit {
    long delay_ms;
    atomic_llong reviews;
};

static enum wh_err double_decide(void *ctx, const struct wh_review *rv, enum wh_route route,
                                 struct wh_engine_result *res, char *errbuf);
static bool double_ready(void *ctx, char *why, size_t why_len);
static void double_stats(void *ctx, struct wh_mgauges *st);

static bool double_start(const struct wh_admit_opts *opts, struct wh_pipeline *pl, char *errbuf)
{
    (void)opts;
    struct double_admit *ad = calloc(1, sizeof(*ad));
    *pl = (struct wh_pipeline){.ctx = ad,
                               .decide = double_decide,
                               .ready = double_ready,
                               .stats = double_stats};
    if (!ad) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return false;
    }
    const char *d = getenv("WH_TEST_ADMIT_DELAY_MS");
    if (d && !wh_parse_long(d, &ad->delay_ms))
        ad->delay_ms = 0;
    return true;
}

static void double_stop(struct wh_pipeline *pl)
{
    free(pl->ctx);
    pl->ctx = NULL;
}

const struct wh_serve_pipeline wh_test_admit_double = {.start = double_start, .stop = double_stop};

static enum wh_err answer(const struct wh_review_info *in, bool allowed,
                          struct wh_engine_result *res, char *errbuf)
{
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    enum wh_err err = wh_buf_add(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                                     "\"AdmissionReview\",\"response\":{\"uid\":\"");
    if (!err)
        err = wh_buf_add_json_escaped(&b, in->uid, strlen(in->uid));
    if (!err)
        err = wh_buf_addf(&b, "\",\"allowed\":%s}}", allowed ? "true" : "false");
    if (err)
        return wh_fail(errbuf, err, "out of memory");
    res->allowed = allowed;
    res->code = allowed ? 0 : 400;
    if (!allowed)
        res->message = wh_strdup("denied by the test double");
    res->body = wh_buf_take(&b, &res->body_len);
    return WH_OK;
}

static enum wh_err double_decide(void *ctx, const struct wh_review *rv, enum wh_route route,
                                 struct wh_engine_result *res, char *errbuf)
{
    struct double_admit *ad = ctx;
    memset(res, 0, sizeof(*res));
    if (ad->delay_ms > 0) {
        struct timespec ts = {ad->delay_ms / 1000, (ad->delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    const struct wh_review_info *in = wh_review_info(rv);
    if (route == WH_ROUTE_MUTATE && in->kind != WH_KIND_POD)
        return wh_fail(errbuf, WH_ERR_KIND, "Invalid Kind: /mutate takes Pod, got \"%s\"",
                       in->kind_name);
    if (route == WH_ROUTE_MUTATE_WORKLOAD && in->kind != WH_KIND_POD)
        return wh_fail(errbuf, WH_ERR_KIND, "Invalid Kind: /mutate-workload takes Pod, got \"%s\"",
                       in->kind_name);
    if (route == WH_ROUTE_VALIDATE_WORKLOAD && in->kind != WH_KIND_WORKLOAD)
        return wh_fail(errbuf, WH_ERR_KIND,
                       "Invalid Kind: /validate-workload takes Job, JobSet, LeaderWorkerSet, got "
                       "\"%s\"",
                       in->kind_name);
    if (route == WH_ROUTE_VALIDATE && in->kind != WH_KIND_RAYCLUSTER)
        return wh_fail(errbuf, WH_ERR_KIND, "Invalid Kind: /validate takes RayCluster, got \"%s\"",
                       in->kind_name);
    atomic_fetch_add(&ad->reviews, 1);
    return answer(in, strcmp(in->name, "deny-me") != 0, res, errbuf);
}

static bool double_ready(void *ctx, char *why, size_t why_len)
{
    (void)ctx;
    if (why)
        snprintf(why, why_len, "ready");
    return true;
}

static void double_stats(void *ctx, struct wh_mgauges *st)
{
    struct double_admit *ad = ctx;
    memset(st, 0, sizeof(*st));
    st->synced = st->pods_synced = st->nodes_synced = st->pods_trusted = true;
    st->reservations = (size_t)atomic_load(&ad->reviews);
}
