/* server_admit.c: one admission over HTTP (see server_admit.h). */
#include "server_admit.h"

#include <stdatomic.h> /* atomic_load */
#include <stdio.h>     /* snprintf */
#include <string.h>    /* memcpy, memset, strchr */

#include <microhttpd.h>

#include "wh/buf.h"        /* wh_buf */
#include "wh/clock.h"      /* wh_clock_us */
#include "wh/log.h"        /* wh_log */
#include "wh/metrics.h"    /* wh_metrics_admission, wh_metrics_path_label */
#include "wh/reqmem.h"     /* wh_reqmem_bind, wh_arena_exhausted */
#include "wh/routes.h"     /* wh_routes */
#include "server_answer.h" /* wh_srv_reply, wh_srv_reply_error */
#include "server_conn.h"   /* wh_srv_conn_of, wh_srv_client_of */
#include "server_pool.h"   /* wh_srv_pool_submit, WH_SRV_POOL_QUEUE */

#define BUSY_DENIAL_TEXT                                                                         \
    "the webhook's workers for pods that need a worker-id claim from the Kubernetes API server " \
    "are all busy; the pod is not created now and KubeRay will retry"
#define BUSY_DENIAL BUSY_DENIAL_TEXT " (%d claims already queued)"

static enum MHD_Result answer(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                              enum wh_err err, char *errbuf);

static unsigned status_of(enum wh_err err)
{
    switch (err) {
    case WH_ERR_INVALID:
    case WH_ERR_TOOBIG:
    case WH_ERR_KIND: return 400;
    case WH_ERR_UNAVAILABLE: return 503;
    default: return 500;
    }
}

/* Who a review is about, from its one parse; "" for a body that did not
 * parse (a hostile client buys no second parse for its 400). */
static const struct wh_review_info *who(const struct request *rq)
{
    static const struct wh_review_info none = {.uid = "",
                                               .operation = "",
                                               .kind_name = "",
                                               .ns = "",
                                               .name = "",
                                               .cluster = "",
                                               .group = ""};
    return rq->rv ? wh_review_info(rq->rv) : &none;
}

/* The engine's notes (skipped pods, ...), one line each. */
static void log_notes(const struct request *rq, const char *notes)
{
    if (!notes || !wh_log_enabled(WH_LOG_INFO))
        return;
    const struct wh_review_info *d = who(rq);
    while (*notes) {
        const char *nl = strchr(notes, '\n');
        size_t n = nl ? (size_t)(nl - notes) : strlen(notes);
        char line[WH_ERRBUF_LEN];
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), notes);
        if (n)
            wh_log(WH_LOG_INFO, "admission_note", "uid", WH_F_STR, d->uid, "namespace", WH_F_STR,
                   d->ns, "cluster", WH_F_STR, d->cluster, "group", WH_F_STR, d->group, "note",
                   WH_F_STR, line, (char *)NULL);
        notes += n + (nl != NULL);
    }
}

static void log_admission(struct MHD_Connection *c, const struct request *rq, unsigned status,
                          const struct wh_engine_result *res, const char *problem,
                          long long latency_us)
{
    enum wh_log_level level = status >= 500   ? WH_LOG_ERROR
                              : status >= 400 ? WH_LOG_WARN
                                              : WH_LOG_INFO;
    if (!wh_log_enabled(level))
        return;
    const struct wh_review_info *d = who(rq);
    /* The connection's address, looked up once when it opened. */
    const struct conn *cn = wh_srv_conn_of(c);
    char client[ADDR_LEN];
    if (cn)
        memcpy(client, cn->client, sizeof(client));
    else
        wh_srv_client_of(c, client, sizeof(client));
    const char *decision = status != 200 ? "error" : res->allowed ? "allowed" : "denied";
    const char *detail = problem ? problem : (res->message ? res->message : "");
    char msg[512];
    snprintf(msg, sizeof(msg), "%s %s: %.100s/%.100s%s%s%.200s",
             d->kind_name[0] ? d->kind_name : "object", decision, d->ns, d->name,
             d->dry_run ? " (dry run)" : "", *detail ? ": " : "", detail);
    wh_log_msg(level, "admission", msg, "path", WH_F_STR, wh_metrics_path_label(rq->path), "uid",
               WH_F_STR, d->uid, "kind", WH_F_STR, d->kind_name, "namespace", WH_F_STR, d->ns,
               "name", WH_F_STR, d->name, "cluster", WH_F_STR, d->cluster, "group", WH_F_STR,
               d->group, "decision", WH_F_STR, decision, "status", WH_F_INT, (long long)status,
               "patch_ops", WH_F_INT, (long long)(status == 200 ? res->n_ops : 0), "replica",
               WH_F_INT, (long long)(status == 200 && res->assigned ? res->replica : -1), "host",
               WH_F_INT, (long long)(status == 200 && res->assigned ? res->host : -1), "latency_us",
               WH_F_INT, latency_us, "dry_run", WH_F_BOOL, (int)d->dry_run, "detail", WH_F_STR,
               detail, "client", WH_F_STR, client, (char *)NULL);
}

/* A request whose arena ran out fails as a whole, whatever the engine made
 * of the failed allocation (a parse error, a denial): never half an answer. */
static enum wh_err out_of_memory(const struct wh_server *s, const struct request *rq, char *errbuf)
{
    switch (wh_arena_exhausted(rq->arena)) {
    case WH_ARENA_BUDGET:
        return wh_fail(errbuf, WH_ERR_INTERNAL,
                       "answering this review needs more than the %zu-byte memory budget of a "
                       "request (--max-request-memory)",
                       wh_arena_budget(rq->arena));
    case WH_ARENA_REFUSED:
        return wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                       "the webhook is answering too many large reviews at once (%zu bytes of "
                       "request memory, --max-body-memory); retry",
                       s->o.max_body_memory);
    default: return WH_OK;
    }
}

/* The denial of a review that would wait when the workers' queue is full:
 * an AdmissionReview answer of its own (the pipeline never saw it). */
static enum MHD_Result refuse_busy(struct wh_server *s, struct MHD_Connection *c, struct request *rq)
{
    struct wh_buf b;
    wh_buf_init(&b, 4096);
    enum wh_err err = wh_buf_add(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                                     "\"AdmissionReview\",\"response\":{\"uid\":");
    if (!err)
        err = wh_buf_add_json_string(&b, who(rq)->uid, strlen(who(rq)->uid));
    if (!err)
        err = wh_buf_addf(&b,
                          ",\"allowed\":false,\"status\":{\"metadata\":{},\"status\":\"Failure\","
                          "\"code\":429,\"reason\":\"TooManyRequests\",\"message\":\"" BUSY_DENIAL
                          "\"}}}",
                          WH_SRV_POOL_QUEUE);
    enum MHD_Result ret;
    if (err) {
        ret = wh_srv_reply_error(s, c, rq, 503, BUSY_DENIAL_TEXT, NULL);
    } else {
        ret = wh_srv_reply(s, c, rq, 200, "application/json", wh_buf_ptr(&b), wh_buf_len(&b), NULL);
        struct wh_madmission ma = {.kind = who(rq)->kind_name, .allowed = false};
        wh_metrics_admission(s->m, rq->path, &ma);
    }
    struct wh_engine_result none = {0};
    log_admission(c, rq, 200, &none, BUSY_DENIAL_TEXT, wh_clock_us() - rq->start_us);
    wh_buf_free(&b);
    return ret;
}

enum MHD_Result wh_srv_admit(struct wh_server *s, struct MHD_Connection *c, struct request *rq)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_err err;
    if (rq->waiting) { /* called again: the worker's outcome, or too early */
        if (!atomic_load(&rq->decided))
            return MHD_YES;
        err = rq->job_err;
        snprintf(errbuf, sizeof(errbuf), "%s", rq->job_errbuf);
        return answer(s, c, rq, err, errbuf);
    }
    rq->route = wh_routes[rq->path].engine;
    err = wh_review_parse(rq->body.data ? rq->body.data : "", rq->body.len, &rq->rv, errbuf);
    if (!err && s->pl.may_wait && s->pl.may_wait(s->pl.ctx, rq->rv, rq->route)) {
        /* It may wait on the API server: never on this thread. */
        if (!wh_srv_pool_submit(s->pool, c, rq))
            return refuse_busy(s, c, rq);
        rq->waiting = true;
        return MHD_YES;
    }
    if (!err)
        err = s->pl.decide(s->pl.ctx, rq->rv, rq->route, &rq->res, errbuf);
    return answer(s, c, rq, err, errbuf);
}

/* The answer to a decided (or failed) review. */
static enum MHD_Result answer(struct wh_server *s, struct MHD_Connection *c, struct request *rq,
                              enum wh_err err, char *errbuf)
{
    enum wh_err oom = out_of_memory(s, rq, errbuf);
    if (oom) {
        /* An allocation failed on the way: nothing of it may be used, and
         * the Status and the log line come from the C library's heap. */
        memset(&rq->res, 0, sizeof(rq->res));
        wh_reqmem_bind(NULL); /* wh_srv_on_request restores its binding after us */
        err = oom;
    }
    enum MHD_Result ret;
    unsigned status = 200;
    if (err) {
        status = status_of(err);
        char msg[WH_ERRBUF_LEN + 64];
        const char *what = err == WH_ERR_KIND ? "wrong kind of object for this path"
                           : status == 400    ? "not an AdmissionReview"
                                              : "cannot answer the review";
        snprintf(msg, sizeof(msg), "%s: %s: %s", wh_metrics_path_label(rq->path), what,
                 errbuf[0] ? errbuf : wh_strerror(err));
        ret = wh_srv_reply_error(s, c, rq, status, msg, NULL);
        log_admission(c, rq, status, &rq->res, msg, wh_clock_us() - rq->start_us);
    } else {
        ret = wh_srv_reply(s, c, rq, 200, "application/json", rq->res.body, rq->res.body_len, NULL);
        struct wh_madmission ma = {.kind = who(rq)->kind_name,
                                   .allowed = rq->res.allowed,
                                   .state_unavailable = rq->res.state_unavailable,
                                   .n_ops = rq->res.n_ops};
        wh_metrics_admission(s->m, rq->path, &ma);
        log_admission(c, rq, 200, &rq->res, NULL, wh_clock_us() - rq->start_us);
        log_notes(rq, rq->res.notes);
    }
    return ret;
}
