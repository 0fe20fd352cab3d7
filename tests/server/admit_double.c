/* admit_double.c: a test double of the admission pipeline (admit.h), linked
 * only into wh-serve-double, never into the product. It answers like the
 * real pipeline's contract says: WH_ERR_INVALID for bytes that are not an
 * AdmissionReview with a request, WH_ERR_KIND for the wrong kind on a
 * route, otherwise an AdmissionReview response (allowed, except a
 * RayCluster named "deny-me"). WH_TEST_ADMIT_DELAY_MS makes every review
 * take that long, so shutdown tests have requests in flight. */
#include <stdatomic.h> /* atomic_llong */
#include <stdio.h>     /* snprintf */
#include <stdlib.h>    /* calloc, getenv */
#include <string.h>    /* strcmp */
#include <time.h>      /* nanosleep */

#include "wh/admit.h"
#include "wh/buf.h"
#include "wh/json.h"

struct wh_admit {
    long delay_ms;
    atomic_llong reviews;
};

struct wh_admit *wh_admit_new(const struct wh_admit_opts *opts, char *errbuf)
{
    (void)opts;
    struct wh_admit *ad = calloc(1, sizeof(*ad));
    if (!ad) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    const char *d = getenv("WH_TEST_ADMIT_DELAY_MS");
    if (d && !wh_parse_long(d, &ad->delay_ms))
        ad->delay_ms = 0;
    return ad;
}

void wh_admit_free(struct wh_admit *ad)
{
    free(ad);
}

static enum wh_err answer(const cJSON *req, bool allowed, struct wh_engine_result *res,
                          char *errbuf)
{
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    const char *uid = wh_json_str0(req, "uid");
    enum wh_err err = wh_buf_add(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                                     "\"AdmissionReview\",\"response\":{\"uid\":\"");
    if (!err)
        err = wh_buf_add_json_escaped(&b, uid, strlen(uid));
    if (!err)
        err = wh_buf_addf(&b, "\",\"allowed\":%s}}", allowed ? "true" : "false");
    if (err)
        return wh_fail(errbuf, err, "out of memory");
    res->allowed = allowed;
    res->code = allowed ? 0 : 400;
    if (!allowed)
        res->message = strdup("denied by the test double");
    res->body = wh_buf_take(&b, &res->body_len);
    return WH_OK;
}

enum wh_err wh_admit_review(struct wh_admit *ad, const char *body, size_t len, enum wh_route route,
                            struct wh_engine_result *res, char *errbuf)
{
    memset(res, 0, sizeof(*res));
    if (ad->delay_ms > 0) {
        struct timespec ts = {ad->delay_ms / 1000, (ad->delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    cJSON *json = NULL;
    enum wh_err err = wh_json_parse(body, len, &json, errbuf);
    if (err)
        return WH_ERR_INVALID;
    const cJSON *req = wh_json_get(json, "request");
    const char *kind = wh_json_str0(wh_json_get(req, "kind"), "kind");
    if (!cJSON_IsObject(req)) {
        err = wh_fail(errbuf, WH_ERR_INVALID, "AdmissionReview has no request");
    } else if (route == WH_ROUTE_MUTATE && strcmp(kind, "Pod")) {
        err = wh_fail(errbuf, WH_ERR_KIND, "Invalid Kind: /mutate takes Pod, got \"%s\"", kind);
    } else if (route == WH_ROUTE_VALIDATE && strcmp(kind, "RayCluster")) {
        err = wh_fail(errbuf, WH_ERR_KIND, "Invalid Kind: /validate takes RayCluster, got \"%s\"",
                      kind);
    } else {
        const char *name = wh_json_str0(wh_json_path(req, "object", "metadata", NULL), "name");
        err = answer(req, strcmp(name, "deny-me") != 0, res, errbuf);
        atomic_fetch_add(&ad->reviews, 1);
    }
    cJSON_Delete(json);
    return err;
}

bool wh_admit_ready(struct wh_admit *ad, char *why, size_t why_len)
{
    (void)ad;
    snprintf(why, why_len, "ready");
    return true;
}

void wh_admit_stats(struct wh_admit *ad, struct wh_admit_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->synced = true;
    st->reservations = (size_t)atomic_load(&ad->reviews);
}

#ifdef WH_DOUBLE_ENGINE_FREE
/* Until the engine lands on this branch, the result destructor too. */
void wh_engine_result_free(struct wh_engine_result *res)
{
    if (!res)
        return;
    free(res->body);
    free(res->message);
    free(res->notes);
    memset(res, 0, sizeof(*res));
}
#endif
