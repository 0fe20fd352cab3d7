/* events.c: Events on warned pods' workloads (events.h). */
#include "events.h"

#include <pthread.h> /* pthread_* */
#include <stdbool.h> /* bool */
#include <stdint.h>  /* uint64_t */
#include <stdio.h>   /* snprintf */
#include <stdlib.h>  /* calloc, free */
#include <string.h>  /* strlen, memset */
#include <time.h>    /* time, gmtime_r, strftime, struct timespec */

#include <cjson/cJSON.h>

#include "wh/buf.h"   /* wh_buf */
#include "wh/clock.h" /* wh_clock_ms, wh_clock_us, wh_clock_deadline, wh_clock_wait_flag */
#include "wh/json.h"  /* wh_json_path, wh_json_str0 */
#include "wh/kinds.h" /* wh_kind_find */
#include "wh/log.h"   /* wh_log */
#include "nswin.h"    /* wh_nswin_admit */
#include "uidcache.h" /* wh_uidcache_* */

#define WINDOW_SLOTS 512 /* objects x reasons remembered; the oldest is forgotten */
#define LWS_RESP_MAX ((size_t)4 * 1024 * 1024) /* a workload, templates included */

struct item {
    struct wh_event_subject s;
    const char *reason;
    char text[WH_EVENT_TEXT_MAX];
    long count; /* warnings this Event stands for */
};

struct slot {
    uint64_t key;  /* FNV-1a of namespace, kind, name, reason; 0 free */
    long last_ms;  /* when an Event of it was queued */
    long withheld; /* warnings since, deduplicated */
};

struct wh_events {
    struct wh_kube *kube;
    long window_ms;
    char instance[128];
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC (wh_clock_wait_flag) */
    bool stop;
    bool ready; /* the worker has work: an item queued, or stop */
    pthread_t worker;
    struct wh_uidcache *uids; /* the worker's only */
    struct item q[WH_EVENTS_QUEUE];
    size_t head, len;
    struct slot slots[WINDOW_SLOTS];
    struct wh_nswin ns; /* Events per namespace (nswin.h) */
    struct wh_mevents st;
    unsigned long long seq;
};

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (h ^ 0x1f) * 1099511628211ULL; /* a separator: "ab"+"c" is not "a"+"bc" */
}

static struct slot *slot_of(struct wh_events *e, uint64_t key)
{
    struct slot *oldest = &e->slots[0];
    for (size_t i = 0; i < WINDOW_SLOTS; i++) {
        struct slot *s = &e->slots[i];
        if (s->key == key)
            return s;
        if (!s->key || (oldest->key && s->last_ms < oldest->last_ms))
            oldest = s;
    }
    memset(oldest, 0, sizeof(*oldest));
    return oldest;
}

void wh_events_offer(struct wh_events *e, const struct wh_event_subject *s,
                     const struct wh_event_note *n)
{
    if (!e || !*s->kind)
        return;
    uint64_t key = fnv(fnv(fnv(fnv(14695981039346656037ULL, s->ns), s->kind), s->name), n->reason);
    key += !key;
    uint64_t ns_key = fnv(14695981039346656037ULL, s->ns);
    ns_key += !ns_key;
    long now = wh_clock_ms();
    pthread_mutex_lock(&e->mu);
    struct slot *sl = slot_of(e, key);
    if (sl->key == key && now - sl->last_ms < e->window_ms) {
        sl->withheld++;
        e->st.deduplicated++;
    } else if (e->len == WH_EVENTS_QUEUE) {
        e->st.dropped++; /* the slot keeps its window: the next offer tries again */
    } else if (!wh_nswin_admit(&e->ns, ns_key, now, e->window_ms)) {
        e->st.limited++; /* likewise */
    } else {
        struct item *it = &e->q[(e->head + e->len++) % WH_EVENTS_QUEUE];
        it->s = *s;
        it->reason = n->reason;
        snprintf(it->text, sizeof(it->text), "%s", n->text);
        it->count = 1 + (sl->key == key ? sl->withheld : 0);
        sl->key = key;
        sl->last_ms = now;
        sl->withheld = 0;
        e->ready = true;
        pthread_cond_signal(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
}

static void add_field(struct wh_buf *b, enum wh_err *err, const char *name, const char *v)
{
    if (!*err)
        *err = wh_buf_addf(b, "\"%s\":", name);
    if (!*err)
        *err = wh_buf_add_json_string(b, v, strlen(v));
}

/* The Event as JSON (core v1), named after its object. */
static enum wh_err event_json(const struct wh_events *e, const struct item *it,
                              unsigned long long seq, struct wh_buf *b)
{
    char name[300], ts[32];
    snprintf(name, sizeof(name), "%.200s.%llx%04llx", it->s.name, (unsigned long long)wh_clock_us(),
             seq & 0xffff);
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    enum wh_err err = wh_buf_add(b, "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{");
    add_field(b, &err, "name", name);
    if (!err)
        err = wh_buf_addc(b, ',');
    add_field(b, &err, "namespace", it->s.ns);
    if (!err)
        err = wh_buf_add(b, "},\"involvedObject\":{");
    add_field(b, &err, "apiVersion", it->s.api_version);
    if (!err)
        err = wh_buf_addc(b, ',');
    add_field(b, &err, "kind", it->s.kind);
    if (!err)
        err = wh_buf_addc(b, ',');
    add_field(b, &err, "namespace", it->s.ns);
    if (!err)
        err = wh_buf_addc(b, ',');
    add_field(b, &err, "name", it->s.name);
    if (!err && *it->s.uid) {
        err = wh_buf_addc(b, ',');
        add_field(b, &err, "uid", it->s.uid);
    }
    if (!err)
        err = wh_buf_add(b, "},\"type\":\"Warning\",");
    add_field(b, &err, "reason", it->reason);
    if (!err)
        err = wh_buf_addc(b, ',');
    add_field(b, &err, "message", it->text);
    if (!err)
        err = wh_buf_addf(b,
                          ",\"count\":%ld,\"firstTimestamp\":\"%s\",\"lastTimestamp\":\"%s\","
                          "\"source\":{\"component\":\"tpu-webhook\"},"
                          "\"reportingComponent\":\"tpu-webhook\",",
                          it->count, ts, ts);
    add_field(b, &err, "reportingInstance", e->instance);
    if (!err)
        err = wh_buf_addc(b, '}');
    return err;
}

/* How long a 429 answer asks the worker to wait before its next request:
 * Retry-After (1 s when absent), at most WH_EVENTS_BACKOFF_MAX_MS. */
static long backoff_ms(const struct wh_kube_answer *ans)
{
    if (ans->status != 429)
        return 0;
    long ms = ans->retry_after_s > 0 ? ans->retry_after_s * 1000 : 1000;
    return ms < WH_EVENTS_BACKOFF_MAX_MS ? ms : WH_EVENTS_BACKOFF_MAX_MS;
}

/* One GET of the workload it->s names (RBAC: get on its resource), as
 * the API server knows it. */
struct owner_read {
    enum wh_err err;
    struct wh_kube_answer ans;
    char errbuf[WH_ERRBUF_LEN];
    char uid[WH_UIDCACHE_UID_MAX]; /* "" unless 200 names it */
};

/* The GETs of the workloads an Event may name, ns and name escaped; one
 * literal path each, which tests/deploy/test_rbac.py reads against the
 * chart's and kustomize's RBAC (get on each). */
typedef enum wh_err (*owner_get)(struct wh_kube *kube, const char *ns, const char *name,
                                 struct wh_buf *resp, struct wh_kube_answer *ans, char *errbuf);

static enum wh_err get_job(struct wh_kube *kube, const char *ns, const char *name,
                           struct wh_buf *resp, struct wh_kube_answer *ans, char *errbuf)
{
    char path[1200];
    snprintf(path, sizeof(path), "/apis/batch/v1/namespaces/%s/jobs/%s", ns, name);
    return wh_kube_request(kube, "GET", path, NULL, 0, WH_EVENTS_GET_TIMEOUT_MS, resp, ans, errbuf);
}

static enum wh_err get_jobset(struct wh_kube *kube, const char *ns, const char *name,
                              struct wh_buf *resp, struct wh_kube_answer *ans, char *errbuf)
{
    char path[1200];
    snprintf(path, sizeof(path), "/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets/%s", ns,
             name);
    return wh_kube_request(kube, "GET", path, NULL, 0, WH_EVENTS_GET_TIMEOUT_MS, resp, ans, errbuf);
}

static enum wh_err get_lws(struct wh_kube *kube, const char *ns, const char *name,
                           struct wh_buf *resp, struct wh_kube_answer *ans, char *errbuf)
{
    char path[1200];
    snprintf(path, sizeof(path),
             "/apis/leaderworkerset.x-k8s.io/v1/namespaces/%s/leaderworkersets/%s", ns, name);
    return wh_kube_request(kube, "GET", path, NULL, 0, WH_EVENTS_GET_TIMEOUT_MS, resp, ans, errbuf);
}

/* By the kind's row of wh_kinds, chosen by its identity. */
static owner_get owner_get_of(const char *kind)
{
    const struct wh_kind_def *def = wh_kind_find(kind);
    switch (def ? def->identity : WH_IDENTITY_SINGLE) {
    case WH_IDENTITY_JOB_INDEX: return get_job;
    case WH_IDENTITY_JOBSET: return get_jobset;
    case WH_IDENTITY_LWS: return get_lws;
    default: return NULL;
    }
}

static void read_owner(struct wh_events *e, const struct item *it, struct owner_read *r)
{
    memset(r, 0, sizeof(*r));
    owner_get get = owner_get_of(it->s.kind);
    if (!get) {
        r->err = WH_ERR_INVALID;
        snprintf(r->errbuf, sizeof(r->errbuf), "the webhook reads no %s", it->s.kind);
        return;
    }
    char ns[200], name[800];
    wh_kube_escape(ns, sizeof(ns), it->s.ns);
    wh_kube_escape(name, sizeof(name), it->s.name);
    struct wh_buf resp;
    wh_buf_init(&resp, LWS_RESP_MAX);
    r->err = get(e->kube, ns, name, &resp, &r->ans, r->errbuf);
    cJSON *j = !r->err && r->ans.status == 200
                   ? cJSON_ParseWithLength(wh_buf_ptr(&resp), wh_buf_len(&resp))
                   : NULL;
    wh_buf_free(&resp);
    const cJSON *md = wh_json_path(j, "metadata", NULL);
    const char *uid = wh_json_str0(md, "uid");
    if (*uid && strlen(uid) < sizeof(r->uid) && !strcmp(wh_json_str0(md, "name"), it->s.name))
        snprintf(r->uid, sizeof(r->uid), "%s", uid);
    cJSON_Delete(j);
}

static void log_uid_unknown(const struct item *it, const struct owner_read *r, bool remembered)
{
    wh_log(WH_LOG_WARN, "event_uid_unknown", "namespace", WH_F_STR, it->s.ns, "kind", WH_F_STR,
           it->s.kind, "name", WH_F_STR, it->s.name, "status", WH_F_INT,
           (long long)(r->err ? 0 : r->ans.status), "error", WH_F_STR,
           r->err                 ? (r->errbuf[0] ? r->errbuf : wh_strerror(r->err))
           : r->ans.status == 200 ? "the answer names no uid of this object"
                                  : "the GET was not answered 200",
           "remembered", WH_F_BOOL, (int)remembered, (char *)NULL);
}

static void owner_mismatch(struct wh_events *e, const struct item *it, const char *api_uid)
{
    wh_log(WH_LOG_WARN, "event_owner_mismatch", "namespace", WH_F_STR, it->s.ns, "kind", WH_F_STR,
           it->s.kind, "name", WH_F_STR, it->s.name, "pod_uid", WH_F_STR, it->s.uid, "api_uid",
           WH_F_STR, api_uid, "reason", WH_F_STR,
           *api_uid ? "the pod names a uid of this workload the API server does not: no Event"
                    : "the pod names a workload the API server does not have: no Event",
           (char *)NULL);
    pthread_mutex_lock(&e->mu);
    e->st.unverified++;
    pthread_mutex_unlock(&e->mu);
}

/* The uid of LeaderWorkerSet it->s into it->s.uid, from the cache or one GET
 * (RBAC: get leaderworkersets.leaderworkerset.x-k8s.io): an LWS pod carries
 * no uid of it, so the Event names the one the API server gives. No such
 * LWS (404): the pod's labels name a workload that does not exist, and no
 * Event is written (false; event_owner_mismatch, counted unverified; not
 * remembered, the LWS may be made). Refused (403): remembered as no uid;
 * other failures (429, 5xx, reset, timeout) are not remembered, so the next
 * Event asks again; either way the Event goes out without a uid. *pause:
 * the back-off after a 429. */
static bool lws_uid(struct wh_events *e, struct item *it, long *pause)
{
    long now = wh_clock_ms();
    *pause = 0;
    if (wh_uidcache_find(e->uids, it->s.ns, it->s.name, now, it->s.uid))
        return true;
    struct owner_read r;
    read_owner(e, it, &r);
    *pause = backoff_ms(&r.ans);
    if (!r.err && r.ans.status == 404) {
        owner_mismatch(e, it, "");
        return false;
    }
    bool remember = *r.uid || r.ans.status == 403;
    if (remember)
        wh_uidcache_put(e->uids, it->s.ns, it->s.name, r.uid, now);
    if (*r.uid)
        snprintf(it->s.uid, sizeof(it->s.uid), "%s", r.uid);
    else
        log_uid_unknown(it, &r, remember);
    return true;
}

/* The uid a pod states for its Job or JobSet (the controller
 * ownerReference, the jobset-uid label) is the pod's word: checked with one
 * GET. The API server names another uid, or no such object (404): the pod
 * is not that workload's and the Event is not posted (false; logged
 * event_owner_mismatch, counted unverified). Not answered (403, 429, 5xx,
 * a reset, the timeout): the Event goes without the uid (event_uid_unknown).
 * *pause: the back-off after a 429. */
static bool verify_uid(struct wh_events *e, struct item *it, long *pause)
{
    struct owner_read r;
    read_owner(e, it, &r);
    *pause = backoff_ms(&r.ans);
    if (*r.uid && !strcmp(r.uid, it->s.uid))
        return true;
    if (!r.err && (r.ans.status == 404 || (r.ans.status == 200 && *r.uid))) {
        owner_mismatch(e, it, r.uid);
        return false;
    }
    log_uid_unknown(it, &r, false);
    it->s.uid[0] = '\0';
    return true;
}

/* POST the Event; returns the back-off after a 429. */
static long post(struct wh_events *e, const struct item *it, unsigned long long seq)
{
    char path[256], ns[200], errbuf[WH_ERRBUF_LEN] = "";
    wh_kube_escape(ns, sizeof(ns), it->s.ns);
    /* Core v1 Events (RBAC: create events in the workload's namespace). */
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);
    struct wh_buf body, resp;
    wh_buf_init(&body, 64 * 1024);
    wh_buf_init(&resp, 64 * 1024);
    struct wh_kube_answer ans = {0};
    enum wh_err err = event_json(e, it, seq, &body);
    if (!err)
        err = wh_kube_request(e->kube, "POST", path, wh_buf_ptr(&body), wh_buf_len(&body),
                              WH_EVENTS_POST_TIMEOUT_MS, &resp, &ans, errbuf);
    bool ok = !err && ans.status >= 200 && ans.status < 300;
    pthread_mutex_lock(&e->mu);
    if (ok)
        e->st.sent++;
    else
        e->st.failed++;
    pthread_mutex_unlock(&e->mu);
    if (!ok)
        wh_log(WH_LOG_WARN, "event_failed", "namespace", WH_F_STR, it->s.ns, "kind", WH_F_STR,
               it->s.kind, "name", WH_F_STR, it->s.name, "reason", WH_F_STR, it->reason, "status",
               WH_F_INT, (long long)ans.status, "error", WH_F_STR,
               err ? (errbuf[0] ? errbuf : wh_strerror(err)) : "", (char *)NULL);
    wh_buf_free(&body);
    wh_buf_free(&resp);
    return backoff_ms(&ans);
}

/* With mu held: wait up to ms (a 429's Retry-After), cut short by stop;
 * false when stopped. */
static bool pause_locked(struct wh_events *e, long ms)
{
    if (ms > 0) {
        struct timespec until;
        wh_clock_deadline(&until, ms);
        (void)wh_clock_wait_flag(&e->cv, &e->mu, &e->stop, &until);
    }
    return !e->stop;
}

/* One queued warning out: the LWS's uid looked up when the pod had none,
 * a uid the pod states checked (then the back-off a 429 asked for), then
 * the POST, unless the check refused it; nothing more once stopped.
 * Returns the back-off the POST's answer asks for. */
static long deliver(struct wh_events *e, struct item *it, unsigned long long seq)
{
    const struct wh_kind_def *def = wh_kind_find(it->s.kind);
    bool lws = def && def->identity == WH_IDENTITY_LWS, send = true;
    if (*it->s.uid || lws) {
        long pause = 0;
        if (*it->s.uid)
            send = verify_uid(e, it, &pause);
        else
            send = lws_uid(e, it, &pause);
        pthread_mutex_lock(&e->mu);
        bool go = pause_locked(e, pause);
        pthread_mutex_unlock(&e->mu);
        if (!go)
            return 0;
    }
    return send ? post(e, it, seq) : 0;
}

/* The worker: may block on the API server, one request at a time
 * (docs/internals/threads.md); after a 429 it waits out Retry-After (capped)
 * before the next, and stop cuts that wait short. */
static void *worker(void *arg)
{
    struct wh_events *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        struct timespec until;
        wh_clock_deadline(&until, WH_EVENTS_IDLE_MS);
        if (!wh_clock_wait_flag(&e->cv, &e->mu, &e->ready, &until) || e->stop)
            continue; /* idle: wait again */
        if (!e->len) {
            e->ready = false;
            continue;
        }
        struct item it = e->q[e->head];
        e->head = (e->head + 1) % WH_EVENTS_QUEUE;
        e->len--;
        e->ready = e->len > 0;
        unsigned long long seq = ++e->seq;
        pthread_mutex_unlock(&e->mu);
        long pause = deliver(e, &it, seq);
        pthread_mutex_lock(&e->mu);
        (void)pause_locked(e, pause);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

struct wh_events *wh_events_new(struct wh_kube *kube, const struct wh_events_opts *o, char *errbuf)
{
    struct wh_events *e = calloc(1, sizeof(*e));
    struct wh_uidcache *uids = e ? wh_uidcache_new(WH_EVENTS_UIDS, WH_EVENTS_UID_TTL_MS) : NULL;
    if (!uids) {
        free(e);
        wh_kube_free(kube);
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    e->kube = kube;
    e->uids = uids;
    e->window_ms = o && o->window_ms > 0 ? o->window_ms : WH_EVENTS_WINDOW_MS;
    snprintf(e->instance, sizeof(e->instance), "%s", o && o->instance ? o->instance : "");
    pthread_mutex_init(&e->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&e->worker, NULL, worker, e)) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        wh_kube_free(kube);
        wh_uidcache_free(uids);
        free(e);
        wh_fail(errbuf, WH_ERR_INTERNAL, "cannot start the Events thread");
        return NULL;
    }
    return e;
}

void wh_events_free(struct wh_events *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    e->stop = true;
    e->ready = true;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->worker, NULL);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    wh_kube_free(e->kube);
    wh_uidcache_free(e->uids);
    free(e);
}

void wh_events_stats(struct wh_events *e, struct wh_mevents *st)
{
    pthread_mutex_lock(&e->mu);
    *st = e->st;
    pthread_mutex_unlock(&e->mu);
}
