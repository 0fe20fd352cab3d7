/* claimthread.c: the claims' thread (see claims_impl.h): it sweeps
 * expired claims every sweep period, and gives back at once the claims
 * whose pod, the one carrying their nonce, is seen going
 * (docs/legacy-indices.md). */
#include <limits.h>    /* LONG_MAX */
#include <stdatomic.h> /* atomic_load */
#include <stdio.h>     /* snprintf */
#include <stdlib.h>    /* calloc, free */
#include <string.h>    /* strcmp, strlen */

#include "wh/hash.h" /* wh_hash_str */
#include "wh/log.h"  /* wh_log */
#include "claims_impl.h"

/* ---- claims held, given back when their pod goes ------------------------ */

/* By Lease name: the claim path looks a name up (wh_claims_held_due), the
 * pod watch's hook a name and a nonce. */
static struct held **held_bucket(struct wh_claims *c, const char *name)
{
    return &c->held[wh_hash_str(WH_HASH_INIT, name) % HELD_BUCKETS];
}

/* With mu held. */
static struct held *held_find(struct wh_claims *c, const char *name, const char *nonce)
{
    for (struct held *h = *held_bucket(c, name); h; h = h->next)
        if (!strcmp(h->t.name, name) && !strcmp(h->t.nonce, nonce))
            return h;
    return NULL;
}

/* With mu held: forget the claim of name and nonce. */
void wh_claims_held_drop(struct wh_claims *c, const char *name, const char *nonce)
{
    for (struct held **p = held_bucket(c, name); *p; p = &(*p)->next) {
        if (!strcmp((*p)->t.name, name) && !strcmp((*p)->t.nonce, nonce)) {
            struct held *h = *p;
            *p = h->next;
            free(h);
            atomic_fetch_sub(&c->n_held, 1);
            return;
        }
    }
}

/* Remember a claim just taken. Out of memory, or a ticket without usable
 * preconditions: the Lease simply expires, as any claim did before. */
void wh_claims_held_add(struct wh_claims *c, struct wh_claim_ticket *t, const char *nonce)
{
    snprintf(t->nonce, sizeof(t->nonce), "%s", nonce);
    if (!wh_claim_str_ok(t->uid) || !wh_claim_str_ok(t->rv) || !t->nonce[0])
        return;
    struct held *h = calloc(1, sizeof(*h));
    if (!h)
        return;
    h->t = *t;
    h->until_ms = wh_clock_ms() + c->lifetime_s * 1000;
    h->backoff_ms = RELEASE_BACKOFF_FIRST_MS;
    pthread_mutex_lock(&c->mu);
    struct held **b = held_bucket(c, t->name);
    h->next = *b;
    *b = h;
    atomic_fetch_add(&c->n_held, 1);
    pthread_mutex_unlock(&c->mu);
}

/* The replica number r of a replicaIndex label "<group>-<r>", or -1. */
static long label_replica(const char *label, const char *group)
{
    size_t gl = strlen(group);
    if (!label || strncmp(label, group, gl) || label[gl] != '-')
        return -1;
    long r = 0;
    const char *p = label + gl + 1;
    if (!*p || (*p == '0' && p[1]))
        return -1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || r > (LONG_MAX - 9) / 10)
            return -1;
        r = r * 10 + (*p - '0');
    }
    return r;
}

void wh_claims_pod_seen(struct wh_claims *c, const struct wh_pod_rec *pod, const char *nonce,
                        bool gone)
{
    if (!nonce || !nonce[0] || !atomic_load(&c->n_held) || !pod->name || !pod->ns ||
        !pod->cluster || !pod->group)
        return; /* the pods of a relist, when this replica holds no claim */
    long replica = label_replica(pod->replica_label, pod->group);
    if (replica < 0 || pod->worker_id < 0)
        return;
    /* The nonce alone could be copied onto another pod by its author: the
     * claim's own ids must match too, and its first live pod stays its pod. */
    char name[WH_CLAIMS_NAME_LEN];
    wh_claims_name(pod->ns, pod->cluster, pod->group, replica, pod->worker_id, name);
    pthread_mutex_lock(&c->mu);
    struct held *h = held_find(c, name, nonce);
    if (h) {
        if (h->pod[0] && strcmp(h->pod, pod->name)) {
            /* A second pod with the nonce: after a relist the copy may be
             * the one seen first. Which is the claim's is unknown: it
             * expires. */
            h->ambiguous = true;
        } else if (!gone && !h->pod[0] && strlen(pod->name) < sizeof(h->pod)) {
            snprintf(h->pod, sizeof(h->pod), "%s", pod->name);
        } else if (gone && h->pod[0] && !h->ambiguous && !h->release) {
            /* Only a bound claim: its pod seen live first, by name. */
            h->release = true;
            h->next_try_ms = 0;
            c->kick = true;
            pthread_cond_signal(&c->cv);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

bool wh_claims_held_due(struct wh_claims *c, const char *name, struct held *out)
{
    if (!atomic_load(&c->n_held))
        return false;
    bool found = false;
    pthread_mutex_lock(&c->mu);
    for (struct held *h = *held_bucket(c, name); h && !found; h = h->next) {
        if (h->release && !strcmp(h->t.name, name)) {
            *out = *h;
            found = true;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return found;
}

bool wh_claims_give_back(struct wh_claims *c, const struct held *h, long timeout_ms,
                         long *retry_after_ms)
{
    bool deleted = false;
    if (!wh_claim_delete(c, h->t.name, h->t.uid, h->t.rv, timeout_ms, &deleted, retry_after_ms)) {
        pthread_mutex_lock(&c->mu);
        c->st.api_errors++;
        pthread_mutex_unlock(&c->mu);
        return false;
    }
    pthread_mutex_lock(&c->mu);
    if (deleted)
        c->st.released++;
    wh_claims_held_drop(c, h->t.name, h->t.nonce);
    pthread_mutex_unlock(&c->mu);
    wh_log(WH_LOG_INFO, "claim_released", "lease", WH_F_STR, h->t.name, "pod", WH_F_STR, h->pod,
           "reason", WH_F_STR, "pod_deleted", "deleted", WH_F_BOOL, (int)deleted, (char *)NULL);
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

/* The claims' thread: gives claims back as soon as their pod goes
 * (wh_claims_pod_seen kicks it) and sweeps expired ones every sweep_ms. */
void *wh_claims_thread(void *arg)
{
    struct wh_claims *c = arg;
    long next_sweep = wh_clock_ms();
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        long now = wh_clock_ms();
        struct held due;
        long next;
        c->kick = false;
        /* A due release first: a replacement pod may be waiting for that
         * id, and a sweep's LIST can take 10 s. */
        if (held_scan(c, now, &due, &next)) {
            pthread_mutex_unlock(&c->mu);
            long retry_after = 0;
            bool settled = wh_claims_give_back(c, &due, ATTEMPT_MAX_MS, &retry_after);
            pthread_mutex_lock(&c->mu);
            struct held *h = held_find(c, due.t.name, due.t.nonce);
            if (h && !settled) {
                /* A throttling or failing API server is asked again only
                 * after its Retry-After (past the claim's end: it expires,
                 * held_scan drops it), else after the doubling back-off. */
                long wait = retry_after > h->backoff_ms ? retry_after : h->backoff_ms;
                h->next_try_ms = wh_clock_ms() + wait;
                h->backoff_ms = h->backoff_ms * 2 < c->sweep_ms ? h->backoff_ms * 2 : c->sweep_ms;
            }
            continue;
        }
        if (now >= next_sweep) {
            pthread_mutex_unlock(&c->mu);
            wh_claims_sweep(c);
            pthread_mutex_lock(&c->mu);
            next_sweep = wh_clock_ms() + c->sweep_ms;
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
