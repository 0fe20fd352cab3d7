/* engine.c: from a parsed review to the response AdmissionReview bytes. */
#include "wh/engine.h"

#include <string.h> /* memset, memcpy */

#include "wh/b64.h"      /* wh_b64_encode */
#include "wh/buf.h"      /* wh_buf */
#include "wh/decision.h" /* struct wh_decision */
#include "wh/json.h"     /* wh_json_* */
#include "wh/kinds.h"    /* enum wh_kind, wh_kind_list_by_review */
#include "wh/mutate.h"   /* wh_mutate_pod */
#include "wh/ratchet.h"  /* wh_ratchet_raycluster, wh_ratchet_workload */
#include "wh/review.h"   /* wh_review_* */
#include "wh/utf8.h"     /* wh_utf8_cut */
#include "wh/workload.h" /* wh_mutate_workload */
#include "wh/mem.h"      /* wh_free */

/* Responses carry base64 patches of up to a few MiB for the largest slices. */
#define RESPONSE_MAX ((size_t)64 * 1024 * 1024)

static enum wh_err write_response(const struct wh_review *rv, const struct wh_decision *d,
                                  struct wh_buf *b, size_t *n_ops)
{
    const char *api = wh_review_api_version(rv);
    enum wh_err err = wh_buf_add(b, "{\"apiVersion\":");
    if (!err)
        err = wh_json_write_string(b, api ? api : "admission.k8s.io/v1");
    if (!err)
        err = wh_buf_add(b, ",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    if (!err)
        err = wh_json_write_string(b, wh_review_info(rv)->uid);
    if (!err)
        err = wh_buf_add(b, d->allowed ? ",\"allowed\":true" : ",\"allowed\":false");
    if (!err && !d->allowed) {
        err = wh_buf_add(
            b,
            ",\"status\":{\"status\":\"Failure\",\"code\":400,\"reason\":\"BadRequest\",\"message\":");
        if (!err)
            err = wh_json_write_string(b, d->message ? d->message : "");
        if (!err)
            err = wh_buf_addc(b, '}');
    }
    *n_ops = d->allowed ? d->n_ops : 0;
    if (!err && *n_ops) {
        err = wh_buf_add(b, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
        if (!err)
            err = wh_b64_encode(b, wh_buf_ptr(&d->patch), wh_buf_len(&d->patch));
        if (!err)
            err = wh_buf_addc(b, '"');
    }
    if (!err && cJSON_GetArraySize(d->warnings) > 0) {
        err = wh_buf_add(b, ",\"warnings\":[");
        int i = 0;
        for (const cJSON *w = d->warnings->child; w && !err; w = w->next, i++) {
            if (i)
                err = wh_buf_addc(b, ',');
            if (!err)
                err = wh_json_write_string(b, w->valuestring);
        }
        if (!err)
            err = wh_buf_addc(b, ']');
    }
    if (!err)
        err = wh_buf_add(b, "}}");
    return err;
}

static char *take_notes(struct wh_buf *notes)
{
    if (!notes->len)
        return NULL;
    return wh_buf_take(notes, NULL);
}

/* The log notes; the pod path's Event notes when a workload is named to
 * carry them. */
static void take_events(struct wh_decision *d, struct wh_engine_result *res)
{
    res->notes = take_notes(&d->notes);
    if (!d->n_events || !*d->subject.kind)
        return;
    res->subject = d->subject;
    memcpy(res->events, d->events, d->n_events * sizeof(d->events[0]));
    res->n_events = d->n_events;
}

/* The policy of rv's route and kind into d. */
static enum wh_err judge(const struct wh_review *rv, enum wh_route route,
                         const struct wh_state *state, struct wh_decision *d, char *errbuf)
{
    const struct wh_review_info *in = wh_review_info(rv);
    /* The API server sends an object in the request's namespace (it refuses
     * a mismatch before admission): a review that says otherwise was not
     * made by it, and nothing may be written about either namespace. */
    if (*in->object_ns && strcmp(in->object_ns, in->ns))
        return wh_decision_deny(d,
                                "object.metadata.namespace \"%.*s\" is not request.namespace "
                                "\"%.*s\"; the API server sends them equal: send the review it "
                                "made",
                                (int)wh_utf8_cut(in->object_ns, 63), in->object_ns,
                                (int)wh_utf8_cut(in->ns, 63), in->ns);
    if (in->kind == WH_KIND_POD && route == WH_ROUTE_MUTATE_WORKLOAD)
        return wh_mutate_workload(rv, state, d, errbuf);
    if (in->kind == WH_KIND_POD)
        return wh_mutate_pod(rv, state, d, errbuf);
    if (in->kind == WH_KIND_WORKLOAD)
        return wh_ratchet_workload(rv, state, d, errbuf);
    if (in->kind == WH_KIND_RAYCLUSTER)
        return wh_ratchet_raycluster(rv, state, d, errbuf);
    return WH_OK;
}

/* The class of kinds route accepts (kinds.h), and its path for messages. */
static enum wh_kind route_accepts(enum wh_route route, const char **path)
{
    switch (route) {
    case WH_ROUTE_MUTATE: *path = "/mutate"; return WH_KIND_POD;
    case WH_ROUTE_MUTATE_WORKLOAD: *path = "/mutate-workload"; return WH_KIND_POD;
    case WH_ROUTE_VALIDATE: *path = "/validate"; return WH_KIND_RAYCLUSTER;
    case WH_ROUTE_VALIDATE_WORKLOAD: *path = "/validate-workload"; return WH_KIND_WORKLOAD;
    default: *path = ""; return WH_KIND_OTHER;
    }
}

enum wh_err wh_engine_decide(const struct wh_review *rv, enum wh_route route,
                             const struct wh_state *state, struct wh_engine_result *res,
                             char *errbuf)
{
    memset(res, 0, sizeof(*res));
    errbuf[0] = '\0';
    const struct wh_review_info *in = wh_review_info(rv);
    const char *path;
    enum wh_kind accepts = route_accepts(route, &path);
    if (route != WH_ROUTE_ANY && in->kind != accepts) {
        char kinds[160];
        return wh_fail(errbuf, WH_ERR_KIND,
                       "Invalid Kind: request.kind.kind is \"%.*s\"; %s accepts %s",
                       (int)wh_utf8_cut(in->kind_name, 64), in->kind_name, path,
                       wh_kind_list_by_review(kinds, sizeof(kinds), accepts, "and"));
    }
    struct wh_decision d;
    wh_decision_init(&d);
    enum wh_err err = judge(rv, route, state, &d, errbuf);
    /* A dry run reserves nothing (sideEffects: NoneOnDryRun): the id shown
     * may go to another pod, and the real request may get another one. */
    if (!err && in->dry_run && d.allowed && d.assigned)
        err = wh_decision_warn(&d,
                               "dry run: TPU_WORKER_ID %ld (replica %ld) is not reserved; the "
                               "real request may get another",
                               d.worker_id, d.replica);
    struct wh_buf body;
    wh_buf_init(&body, RESPONSE_MAX);
    /* The envelope, the base64 patch (written as text while it was built,
     * patch.h) and a message or warnings. */
    size_t patch_len = d.allowed ? wh_buf_len(&d.patch) : 0;
    if (!err)
        err = wh_buf_reserve(&body, (patch_len + 2) / 3 * 4 + 1024);
    if (!err)
        err = write_response(rv, &d, &body, &res->n_ops);
    if (err) {
        if (!errbuf[0])
            wh_fail(errbuf, err, "%s", wh_strerror(err));
        wh_buf_free(&body);
        wh_decision_free(&d);
        memset(res, 0, sizeof(*res));
        return err;
    }
    res->body = wh_buf_take(&body, &res->body_len);
    res->allowed = d.allowed;
    res->code = d.allowed ? 0 : 400;
    res->state_unavailable = !d.allowed && d.state_unavailable;
    res->message = d.message;
    d.message = NULL;
    res->n_warnings = d.n_warnings;
    res->assigned = d.allowed && d.assigned && !in->dry_run;
    res->replica = d.replica;
    res->host = d.host;
    res->n_hosts = d.n_hosts;
    res->n_tpu_containers = d.n_tpu_containers;
    res->worker_id = d.worker_id;
    take_events(&d, res); /* notes and Event notes, before d is freed */
    wh_decision_free(&d);
    if (!res->body) {
        wh_engine_result_free(res);
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    }
    return WH_OK;
}

enum wh_err wh_engine_review(const char *body, size_t len, enum wh_route route,
                             const struct wh_state *state, struct wh_engine_result *res,
                             char *errbuf)
{
    struct wh_review *rv;
    memset(res, 0, sizeof(*res));
    enum wh_err err = wh_review_parse(body, len, &rv, errbuf);
    if (err)
        return err;
    err = wh_engine_decide(rv, route, state, res, errbuf);
    wh_review_free(rv);
    return err;
}

void wh_engine_result_free(struct wh_engine_result *res)
{
    if (!res)
        return;
    wh_free(res->body);
    wh_free(res->message);
    wh_free(res->notes);
    memset(res, 0, sizeof(*res));
}
