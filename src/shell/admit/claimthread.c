/* claimthread.c: the claims' thread (see claims_impl.h): it sweeps
 * expired claims every sweep period and gives back, as soon as they fall
 * due, the claims whose pod is going and the Leases of pods this replica
 * denied (docs/legacy-indices.md). */
#include <limits.h> /* LONG_MAX */
#include <stdint.h> /* INT32_MAX */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* strcmp, strlen */
#include <time.h>   /* clock_gettime */

#include <cjson/cJSON.h>

#include "wh/hash.h" /* wh_hash_str */
#include "wh/json.h" /* wh_json_whole */
#include "wh/log.h"  /* wh_log */
#include "claims_impl.h"

static long long wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static struct held **held_bucket(struct wh_claims *c, const char *name)
{
    return &c->held[wh_hash_str(WH_HASH_INIT, name) % HELD_BUCKETS];
}

/* With mu held. */
static struct held *held_find(struct wh_claims *c, const char *name)
{
    for (struct held *h = *held_bucket(c, name); h; h = h->next)
        if (!strcmp(h->t.name, name))
            return h;
    return NULL;
}

/* With mu held. */
void wh_claims_held_drop(struct wh_claims *c, const char *name)
{
    for (struct held **p = held_bucket(c, name); *p; p = &(*p)->next) {
        if (!strcmp((*p)->t.name, name)) {
            struct held *h = *p;
            *p = h->next;
            free(h);
            atomic_fetch_sub(&c->n_held, 1);
            return;
        }
    }
}

/* Remember a Lease to give back: a taken claim (t with a usable uid and
 * resourceVersion; nonce NULL), released once its pod goes, or an orphan
 * (nonce set), due at once. Out of memory, or a ticket without
 * preconditions: the Lease simply expires, as before. */
void wh_claims_held_add(struct wh_claims *c, const struct wh_claim_ticket *t, const char *nonce)
{
    if (!nonce && (!wh_claim_str_ok(t->uid) || !wh_claim_str_ok(t->rv)))
        return;
    struct held *h = calloc(1, sizeof(*h));
    if (!h)
        return;
    h->t = *t;
    snprintf(h->nonce, sizeof(h->nonce), "%s", nonce ? nonce : "");
    h->until_ms = wh_clock_ms() + c->lifetime_s * 1000;
    h->release = nonce != NULL;
    h->backoff_ms = RELEASE_BACKOFF_FIRST_MS;
    pthread_mutex_lock(&c->mu);
    wh_claims_held_drop(c, t->name); /* an older entry of the same Lease name is stale */
    struct held **b = held_bucket(c, t->name);
    h->next = *b;
    *b = h;
    atomic_fetch_add(&c->n_held, 1);
    if (h->release) {
        c->kick = true;
        pthread_cond_signal(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
}

void wh_claims_pod_seen(struct wh_claims *c, const char *pod, const char *ns, const char *cluster,
                        const char *group, long replica, long worker_id, bool live)
{
    if (!atomic_load(&c->n_held) || !pod || !pod[0])
        return; /* every pod of a relist, when this replica holds no claim */
    char name[WH_CLAIMS_NAME_LEN];
    wh_claims_name(ns, cluster, group, replica, worker_id, name);
    pthread_mutex_lock(&c->mu);
    struct held *h = held_find(c, name);
    if (h && !h->nonce[0]) {
        if (live && !h->bound && strlen(pod) < sizeof(h->pod)) {
            h->bound = true;
            snprintf(h->pod, sizeof(h->pod), "%s", pod);
        } else if (!live && h->bound && !h->release && !strcmp(h->pod, pod)) {
            h->release = true;
            h->next_try_ms = 0;
            c->kick = true;
            pthread_cond_signal(&c->cv);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

/* The LIST of the claims (the caller frees it with cJSON_Delete), or NULL
 * with reason set. */
static cJSON *list_claims(struct wh_claims *c, char reason[WH_ERRBUF_LEN])
{
    char path[700], errbuf[WH_ERRBUF_LEN] = "";
    snprintf(path, sizeof(path), "%s?labelSelector=%s", c->path, CLAIM_SELECTOR);
    struct wh_buf resp;
    wh_buf_init(&resp, RESP_MAX);
    struct wh_kube_answer ans = {0};
    enum wh_err err = wh_kube_request(c->kube, "GET", path, NULL, 0, LIST_TIMEOUT_MS, &resp, &ans,
                                      errbuf);
    cJSON *list = NULL;
    if (err)
        snprintf(reason, WH_ERRBUF_LEN, "%s", errbuf);
    else if (ans.status != 200)
        wh_claim_describe_answer(ans.status, &resp, reason, WH_ERRBUF_LEN);
    else if (!(list = cJSON_ParseWithLength(wh_buf_ptr(&resp), wh_buf_len(&resp))))
        snprintf(reason, WH_ERRBUF_LEN, "LIST leases: the answer is not JSON");
    wh_buf_free(&resp);
    return list;
}

/* Whether a listed claim is due for deletion at now (wall-clock us). */
static bool claim_expired(const struct wh_claims *c, const cJSON *item, long long now)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(item, "spec");
    const cJSON *dur = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
    const char *renew = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "renewTime"));
    if (!renew)
        renew = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "acquireTime"));
    long long at = wh_claims_parse_time_us(renew);
    /* A claim without a readable time or duration was not written by
     * us as we write them; it still expires, by the default lifetime:
     * counted from its creation (the API server's clock), or at once when
     * even that cannot be read (nothing says it guards a live pod). */
    long d; /* leaseDurationSeconds is an int32 */
    if (at < 0 || !wh_json_whole(dur, 1, INT32_MAX, &d))
        d = WH_CLAIMS_DEFAULT_LIFETIME_S;
    if (at < 0)
        at = wh_claims_parse_time_us(cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "metadata"),
                                             "creationTimestamp")));
    if (at < 0)
        return true;
    /* Each replica deletes its own claims; another's only one sweep
     * period later (its holder crashed, or is partitioned away), so
     * that sweepers rarely race for the same object. */
    const char *holder = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity"));
    long long grace = holder && !strcmp(holder, c->holder) ? 0 : (long long)c->sweep_ms * 1000;
    return now >= at + (long long)d * 1000000 + grace;
}

/* One LIST of the claims, deleting the expired ones. */
static void sweep(struct wh_claims *c)
{
    char reason[WH_ERRBUF_LEN] = "";
    cJSON *list = list_claims(c, reason);
    size_t objects = 0;
    uint64_t swept = 0, api_errors = reason[0] ? 1 : 0;
    long long now = wall_us();
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "items"))
    {
        if (atomic_load(&c->nap.stop))
            break;
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(item, "metadata");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));
        const char *uid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "uid"));
        const char *rv = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
        objects++;
        if (!claim_expired(c, item, now) || !wh_claim_str_ok(name) || !wh_claim_str_ok(uid) ||
            !wh_claim_str_ok(rv))
            continue;
        bool deleted = false;
        if (!wh_claim_delete(c, name, uid, rv, c->budget_ms, &deleted))
            api_errors++;
        if (deleted) {
            swept++;
            objects--;
        }
    }
    cJSON_Delete(list);
    pthread_mutex_lock(&c->mu);
    c->st.api_errors += api_errors;
    c->st.swept += swept;
    if (reason[0])
        c->st.sweeps_failed++;
    else
        c->st.objects = objects;
    pthread_mutex_unlock(&c->mu);
    if (reason[0])
        wh_log(WH_LOG_WARN, "claim_sweep_failed", "namespace", WH_F_STR, c->ns, "error", WH_F_STR,
               reason, (char *)NULL);
    else if (swept)
        wh_log(WH_LOG_INFO, "claims_expired_deleted", "namespace", WH_F_STR, c->ns, "deleted",
               WH_F_INT, (long long)swept, "remaining", WH_F_INT, (long long)objects, (char *)NULL);
}

/* Give back one due Lease (a copy of its entry, mu not held). Returns
 * true when it is settled: deleted, or found gone, changed or not ours. */
static bool give_back(struct wh_claims *c, const struct held *h)
{
    struct wh_claim_ticket t = h->t; /* an orphan's: read back below */
    bool deleted = false, answered;
    if (h->nonce[0]) {
        const struct wh_claim_key none = {.cluster_uid = NULL};
        struct stale_claim stale;
        enum found f = wh_claim_read(c, h->t.name, &none, h->nonce, ATTEMPT_MAX_MS, &t, &stale);
        if (f == FOUND_UNKNOWN)
            return false;
        answered = f != FOUND_MINE ||
                   wh_claim_delete(c, t.name, t.uid, t.rv, ATTEMPT_MAX_MS, &deleted);
    } else {
        answered = wh_claim_delete(c, t.name, t.uid, t.rv, ATTEMPT_MAX_MS, &deleted);
    }
    if (!answered)
        return false;
    pthread_mutex_lock(&c->mu);
    if (deleted)
        c->st.released++;
    pthread_mutex_unlock(&c->mu);
    wh_log(WH_LOG_INFO, "claim_released", "lease", WH_F_STR, h->t.name, "reason", WH_F_STR,
           h->nonce[0] ? "pod_denied" : "pod_deleted", "deleted", WH_F_BOOL, (int)deleted,
           (char *)NULL);
    return true;
}

/* With mu held: drop the entries whose Lease has expired by now (the
 * sweeper deletes it); copy the first due one into *due and return true,
 * else set *next to when the next one falls due (LONG_MAX: none). */
static bool held_scan(struct wh_claims *c, long now, struct held *due, long *next)
{
    *next = LONG_MAX;
    for (size_t b = 0; b < HELD_BUCKETS; b++) {
        for (struct held **p = &c->held[b]; *p;) {
            struct held *h = *p;
            if (now >= h->until_ms) {
                *p = h->next;
                free(h);
                atomic_fetch_sub(&c->n_held, 1);
                continue;
            }
            if (h->release && h->next_try_ms <= now) {
                *due = *h;
                return true;
            }
            if (h->release && h->next_try_ms < *next)
                *next = h->next_try_ms;
            p = &h->next;
        }
    }
    return false;
}

/* The claims' thread: gives back due Leases as soon as they fall due
 * (wh_claims_pod_seen() and resolve_lost() kick it) and sweeps expired
 * ones every sweep_ms. */
void *wh_claims_thread(void *arg)
{
    struct wh_claims *c = arg;
    long next_sweep = wh_clock_ms();
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        long now = wh_clock_ms();
        if (now >= next_sweep) {
            pthread_mutex_unlock(&c->mu);
            sweep(c);
            pthread_mutex_lock(&c->mu);
            next_sweep = wh_clock_ms() + c->sweep_ms;
            continue;
        }
        struct held due;
        c->kick = false;
        long next;
        if (held_scan(c, now, &due, &next)) {
            pthread_mutex_unlock(&c->mu);
            bool settled = give_back(c, &due);
            pthread_mutex_lock(&c->mu);
            struct held *h = held_find(c, due.t.name);
            /* The same entry (not one made again meanwhile) */
            if (h && h->until_ms == due.until_ms && !strcmp(h->nonce, due.nonce)) {
                if (settled) {
                    wh_claims_held_drop(c, due.t.name);
                } else {
                    h->next_try_ms = wh_clock_ms() + h->backoff_ms;
                    h->backoff_ms = h->backoff_ms * 2 < c->sweep_ms ? h->backoff_ms * 2
                                                                    : c->sweep_ms;
                }
            }
            continue;
        }
        struct timespec until;
        long wait = (next < next_sweep ? next : next_sweep) - now;
        wh_clock_deadline(&until, wait > 0 ? wait : 0);
        wh_clock_wait_flag(&c->cv, &c->mu, &c->kick, &until);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}
