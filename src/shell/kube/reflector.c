/* reflector.c: LIST + WATCH of one resource into the store (see
 * reflector.h). */
#include "reflector.h"

#include <pthread.h>   /* pthread_t, pthread_create, pthread_join */
#include <stdatomic.h> /* atomic_bool, atomic_long, atomic_ulong */
#include <stdint.h>    /* uint32_t */
#include <stdio.h>     /* snprintf */
#include <stdlib.h>    /* calloc, free, rand_r */
#include <string.h>    /* strcmp, strlen */
#include <time.h>      /* clock_gettime */

#include <cjson/cJSON.h>

#include "wh/buf.h"   /* wh_buf */
#include "wh/clock.h" /* wh_clock_ms, wh_nap */
#include "wh/json.h"  /* wh_json_parse, wh_json_get */
#include "wh/log.h"   /* wh_log */

#define CONT_MAX 4096 /* longest continue token taken, NUL included */

struct wh_reflector {
    struct wh_kube *kube;   /* borrowed */
    struct wh_store *store; /* borrowed */
    struct wh_cache_hooks hooks;
    struct wh_cache_opts opts;
    struct wh_nap nap; /* stops the thread */
    enum wh_reflector_kind kind;
    const char *what; /* "pods" / "nodes", for logs */
    const char *base; /* path + query with the label selector */
    pthread_t th;
    char rv[128];
    atomic_bool synced;
    atomic_long down_since; /* -1: healthy */
    uint32_t gen;
    unsigned seed;
    atomic_ulong relists, reconnects;
    bool relist;                /* set by a 410 inside the stream */
    bool stream_failed;         /* an ERROR event (not 410) or a torn line ended the stream */
    bool opened;                /* the current watch answered 2xx */
    bool logged;                /* on_event logged why the current watch failed */
    unsigned long stream_lines; /* lines received in the current stream */
    bool healthy;
};

/* Apply one object of a LIST (deleted = false) or a watch event. Returns
 * WH_ERR_NOMEM only; objects the store does not keep are skipped. */
static enum wh_err apply(struct wh_reflector *w, const cJSON *obj, bool deleted, uint32_t gen)
{
    if (w->kind == WH_REFLECT_NODES)
        return wh_store_apply_node(w->store, obj, deleted, gen);
    struct wh_pod_rec pod;
    enum wh_err err = wh_store_apply_pod(w->store, obj, deleted, gen, &pod);
    /* Only after the store holds the change (see cache.h). */
    if (!err && pod.name && w->hooks.pod_changed)
        w->hooks.pod_changed(w->hooks.arg, &pod, obj, deleted);
    return err;
}

static void mark_healthy(struct wh_reflector *w)
{
    struct wh_cache_hooks *h = &w->hooks;
    atomic_store(&w->down_since, -1L);
    if (!w->healthy && w->kind == WH_REFLECT_PODS && h->pods_health)
        h->pods_health(h->arg, wh_clock_ms());
    w->healthy = true;
}

static void mark_down(struct wh_reflector *w)
{
    struct wh_cache_hooks *h = &w->hooks;
    long expected = -1;
    atomic_compare_exchange_strong(&w->down_since, &expected, wh_clock_ms());
    if (w->healthy && w->kind == WH_REFLECT_PODS && h->pods_health)
        h->pods_health(h->arg, -1);
    w->healthy = false;
}

/* Status code of a Status object body, or 0. */
static long status_code(const cJSON *st)
{
    const cJSON *code = wh_json_get(st, "code");
    long n;
    return wh_json_whole(code, 0, 999, &n) ? n : 0;
}

/* What an operator should check for a status, or "" (401/403 are the
 * usual deployment mistakes and look alike in a bare status line). */
static const char *failure_hint(long status)
{
    if (status == 401)
        return "the API server rejected the webhook's credentials: check the bearer token "
               "(service-account token or kubeconfig token/tokenFile) or client certificate";
    if (status == 403)
        return "RBAC: the webhook's service account is not allowed to list and watch pods and "
               "nodes; bind it to a ClusterRole granting list and watch on pods and nodes";
    return "";
}

static void log_failure(struct wh_reflector *w, const char *op, long status, const char *why)
{
    wh_log(WH_LOG_WARN, "kube_request_failed", "resource", WH_F_STR, w->what, "op", WH_F_STR, op,
           "status", WH_F_INT, (long long)status, "error", WH_F_STR, why, "source", WH_F_STR,
           wh_kube_source(w->kube),
           /* no hint: a NULL key ends the fields here */
           *failure_hint(status) ? "hint" : (char *)NULL, WH_F_STR, failure_hint(status),
           (char *)NULL);
}

/* GET one page of the LIST into body. WH_ERR_NOTFOUND: the continue token
 * expired (list again at once). */
static enum wh_err get_page(struct wh_reflector *w, const char *cont, struct wh_buf *body)
{
    char errbuf[WH_ERRBUF_LEN];
    /* 3x for percent-escaping; the continue token is opaque. */
    char esc[3 * CONT_MAX];
    wh_kube_escape(esc, sizeof(esc), cont);
    struct wh_buf pb;
    wh_buf_init(&pb, sizeof(esc) + 1024);
    if (wh_buf_addf(&pb, "%s&limit=%ld%s%s", w->base, w->opts.page_size,
                    cont[0] ? "&continue=" : "", esc)) {
        wh_buf_free(&pb);
        return WH_ERR_NOMEM;
    }
    long status = 0;
    wh_buf_reset(body);
    enum wh_err err = wh_kube_get(w->kube, wh_buf_ptr(&pb), body, &status, &w->nap.stop, errbuf);
    wh_buf_free(&pb);
    if (err) {
        log_failure(w, "list", 0, errbuf);
        return err;
    }
    if (status == 410 && cont[0])
        return WH_ERR_NOTFOUND;
    if (status != 200) {
        char why[256];
        snprintf(why, sizeof(why), "HTTP %ld: %.200s", status, wh_buf_ptr(body));
        log_failure(w, "list", status, why);
        return WH_ERR_HTTP;
    }
    return WH_OK;
}

/* Apply a page the API server answered (200) to the store; cont gets the
 * next continue token, "" after the last page. */
static enum wh_err apply_page(struct wh_reflector *w, const struct wh_buf *body, uint32_t gen,
                              char cont[CONT_MAX], size_t *items)
{
    char errbuf[WH_ERRBUF_LEN];
    cJSON *json = NULL;
    if (wh_json_parse(wh_buf_ptr(body), wh_buf_len(body), &json, errbuf)) {
        log_failure(w, "list", 200, errbuf);
        return WH_ERR_INVALID;
    }
    enum wh_err err = WH_OK;
    const cJSON *list = wh_json_get(json, "items");
    for (const cJSON *it = cJSON_IsArray(list) ? list->child : NULL; it && !err; it = it->next) {
        err = apply(w, it, false, gen);
        (*items)++;
    }
    const cJSON *meta = wh_json_get(json, "metadata");
    const char *next = wh_json_str(meta, "continue");
    const char *rv = wh_json_str(meta, "resourceVersion");
    if (rv)
        snprintf(w->rv, sizeof(w->rv), "%s", rv);
    if (next && strlen(next) >= CONT_MAX) {
        log_failure(w, "list", 200, "continue token longer than the client accepts");
        err = WH_ERR_TOOBIG;
    }
    snprintf(cont, CONT_MAX, "%s", next && !err ? next : "");
    cJSON_Delete(json);
    if (err == WH_ERR_NOMEM)
        log_failure(w, "list", 200, "out of memory");
    return err;
}

/* LIST with paging; on success the store holds exactly the listed objects
 * and w->rv is the list's resourceVersion. */
static enum wh_err list_all(struct wh_reflector *w)
{
    char cont[CONT_MAX] = "";
    uint32_t gen = ++w->gen;
    struct wh_buf body;
    wh_buf_init(&body, WH_KUBE_BODY_MAX);
    enum wh_err err;
    size_t items = 0;
    do {
        err = get_page(w, cont, &body);
        if (!err)
            err = apply_page(w, &body, gen, cont, &items);
    } while (!err && cont[0]);
    wh_buf_free(&body);
    if (err)
        return err;
    if (w->kind == WH_REFLECT_PODS)
        wh_store_sweep_pods(w->store, gen);
    else
        wh_store_sweep_nodes(w->store, gen);
    wh_log(WH_LOG_INFO, "cache_listed", "resource", WH_F_STR, w->what, "items", WH_F_INT,
           (long long)items, "resourceVersion", WH_F_STR, w->rv, (char *)NULL);
    return WH_OK;
}

static void on_open(void *arg)
{
    struct wh_reflector *w = arg;
    w->opened = true;
    mark_healthy(w);
}

static int on_event(void *arg, const char *line, size_t len)
{
    struct wh_reflector *w = arg;
    char errbuf[WH_ERRBUF_LEN];
    cJSON *ev = NULL;
    w->stream_lines++;
    if (wh_json_parse(line, len, &ev, errbuf)) {
        /* A torn stream: reconnect (with backoff) from the last good version.
         * Not opened: an error answer that is not a Status (a proxy's page),
         * logged with its HTTP status by the watch loop. */
        if (w->opened) {
            log_failure(w, "watch", 200, errbuf);
            w->logged = true;
        }
        w->stream_failed = true;
        return 1;
    }
    const char *type = wh_json_str0(ev, "type");
    const cJSON *obj = wh_json_get(ev, "object");
    const char *rv = wh_json_str(wh_json_get(obj, "metadata"), "resourceVersion");
    int stop = 0;
    if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
        if (apply(w, obj, !strcmp(type, "DELETED"), w->gen)) {
            w->relist = true; /* out of memory: the cache missed an event */
            stop = 1;
        } else if (rv) {
            snprintf(w->rv, sizeof(w->rv), "%s", rv);
        }
    } else if (!strcmp(type, "BOOKMARK")) {
        if (rv)
            snprintf(w->rv, sizeof(w->rv), "%s", rv);
    } else {
        /* ERROR event, or a non-2xx answer whose body is the Status itself. */
        const cJSON *st = obj ? obj : ev;
        if (status_code(st) == 410) {
            w->relist = true;
        } else {
            log_failure(w, "watch", status_code(st), wh_json_str0(st, "message"));
            w->stream_failed = w->logged = true;
        }
        stop = 1;
    }
    cJSON_Delete(ev);
    /* After applying: what was heard is in the cache (and told). */
    struct wh_cache_hooks *h = &w->hooks;
    if (!stop && w->kind == WH_REFLECT_PODS && h->pods_current)
        h->pods_current(h->arg, wh_clock_ms());
    return stop;
}

/* How a watch ended, and so what the loop does next. */
enum watch_end {
    END_RESUME, /* the server ended the stream: watch again from w->rv */
    END_RELIST, /* 410 Gone (or the cache missed an event): LIST again */
    END_EMPTY,  /* ended at once with nothing said: pause, but not a failure */
    END_FAILED, /* transport error or error answer: back off, the cache ages */
    END_STOP,   /* wh_reflector_stop() */
};

/* One WATCH from w->rv until the stream ends. */
static enum watch_end watch_once(struct wh_reflector *w)
{
    char path[1024], rv[3 * sizeof(w->rv)];
    long to = w->opts.watch_timeout_s ? w->opts.watch_timeout_s
                                      : 120 + (long)(rand_r(&w->seed) % 121);
    wh_kube_escape(rv, sizeof(rv), w->rv);
    snprintf(path, sizeof(path),
             "%s&watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%ld", w->base,
             rv, to);
    char errbuf[WH_ERRBUF_LEN];
    long status = 0;
    w->relist = w->stream_failed = w->opened = w->logged = false;
    w->stream_lines = 0;
    long opened = wh_clock_ms();
    enum wh_err err = wh_kube_stream(w->kube, path, on_open, on_event, w, &status, &w->nap.stop,
                                     errbuf);
    if (atomic_load(&w->nap.stop))
        return END_STOP;
    if (err) {
        log_failure(w, "watch", 0, errbuf);
        return END_FAILED;
    }
    if (status == 410 || w->relist)
        return END_RELIST;
    if (status != 200 || w->stream_failed) {
        /* A failure, so backed off: a server that answers every watch with
         * an error must not be hammered in a tight loop. */
        if (!w->logged)
            log_failure(w, "watch", status, "error answer without a Kubernetes Status");
        return END_FAILED;
    }
    /* Do not spin on a server (or proxy) that keeps ending watches at once. */
    if (w->stream_lines == 0 && wh_clock_ms() - opened < 1000)
        return END_EMPTY;
    return END_RESUME;
}

static long next_backoff(const struct wh_reflector *w, long backoff)
{
    return backoff * 2 > w->opts.max_backoff_ms ? w->opts.max_backoff_ms : backoff * 2;
}

static void *watch_thread(void *arg)
{
    struct wh_reflector *w = arg;
    long backoff = WH_REFLECTOR_MIN_BACKOFF_MS;
    bool need_list = true, first = true, expired = false;
    while (!atomic_load(&w->nap.stop)) {
        bool failed = false;
        /* Back after longer than the cache is trusted: resuming the watch
         * would trust the cache before the missed events have been replayed,
         * so take a fresh snapshot first. */
        long down = atomic_load(&w->down_since);
        if (!first && down >= 0 && wh_clock_ms() - down > w->opts.trust_ms)
            need_list = true;
        if (need_list) {
            if (!first)
                atomic_fetch_add(&w->relists, 1);
            long listed_at = wh_clock_ms();
            enum wh_err lerr = list_all(w);
            if (lerr == WH_ERR_NOTFOUND && !expired) {
                expired = true; /* retry at once, but only once in a row */
                continue;
            }
            expired = false;
            if (lerr) {
                failed = true;
            } else {
                need_list = first = false;
                atomic_store(&w->synced, true);
                mark_healthy(w);
                /* The snapshot is as of the LIST (reservations then expire
                 * only as fast as the watch is heard, see ledger.h). */
                if (w->kind == WH_REFLECT_PODS && w->hooks.pods_current)
                    w->hooks.pods_current(w->hooks.arg, listed_at);
                backoff = WH_REFLECTOR_MIN_BACKOFF_MS;
            }
        }
        if (!failed) {
            switch (watch_once(w)) {
            case END_STOP: return NULL;
            case END_RELIST: need_list = true; continue;
            case END_RESUME: backoff = WH_REFLECTOR_MIN_BACKOFF_MS; continue;
            case END_EMPTY: {
                long sleep = backoff;
                backoff = next_backoff(w, backoff);
                if (!wh_nap(&w->nap, sleep))
                    return NULL;
                continue;
            }
            case END_FAILED: failed = true; break;
            }
        }
        if (failed) {
            mark_down(w);
            atomic_fetch_add(&w->reconnects, 1);
            long sleep = backoff / 2 + (long)(rand_r(&w->seed) % (unsigned)(backoff / 2 + 1));
            backoff = next_backoff(w, backoff);
            if (!wh_nap(&w->nap, sleep))
                break;
        }
    }
    return NULL;
}

struct wh_reflector *wh_reflector_start(enum wh_reflector_kind kind, struct wh_kube *kube,
                                        struct wh_store *store, const struct wh_cache_hooks *hooks,
                                        const struct wh_cache_opts *opts, char *errbuf)
{
    static const char pods_base[] = "/api/v1/pods?labelSelector=ray.io%2Fnode-type%3Dworker%2C"
                                    "app.kubernetes.io%2Fcreated-by%3Dkuberay-operator";
    static const char nodes_base[] = "/api/v1/nodes?labelSelector="
                                     "cloud.google.com%2Fgke-tpu-accelerator";
    struct wh_reflector *w = calloc(1, sizeof(*w));
    if (!w) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    w->kube = kube;
    w->store = store;
    if (hooks)
        w->hooks = *hooks;
    w->opts = *opts;
    w->kind = kind;
    w->what = kind == WH_REFLECT_PODS ? "pods" : "nodes";
    w->base = kind == WH_REFLECT_PODS ? pods_base : nodes_base;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    w->seed = (unsigned)ts.tv_nsec ^ (unsigned)kind * 2654435761u;
    atomic_init(&w->synced, false);
    atomic_init(&w->down_since, wh_clock_ms()); /* not yet reached */
    atomic_init(&w->relists, 0);
    atomic_init(&w->reconnects, 0);
    wh_nap_init(&w->nap);
    if (pthread_create(&w->th, NULL, watch_thread, w)) {
        wh_fail(errbuf, WH_ERR_INTERNAL, "cannot start the %s watcher thread", w->what);
        wh_nap_destroy(&w->nap);
        free(w);
        return NULL;
    }
    return w;
}

void wh_reflector_stop(struct wh_reflector *w)
{
    wh_nap_stop(&w->nap);
}

void wh_reflector_free(struct wh_reflector *w)
{
    if (!w)
        return;
    wh_reflector_stop(w);
    pthread_join(w->th, NULL);
    wh_nap_destroy(&w->nap);
    free(w);
}

bool wh_reflector_synced(const struct wh_reflector *w)
{
    return atomic_load(&w->synced);
}

long wh_reflector_down_since(const struct wh_reflector *w)
{
    return atomic_load(&w->down_since);
}

unsigned long wh_reflector_relists(const struct wh_reflector *w)
{
    return atomic_load(&w->relists);
}

unsigned long wh_reflector_reconnects(const struct wh_reflector *w)
{
    return atomic_load(&w->reconnects);
}
