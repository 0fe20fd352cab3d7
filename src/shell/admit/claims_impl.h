/* claims_impl.h: what claims.c (claiming) and claimthread.c (the claims'
 * thread: sweeping expired claims, giving back those whose pod goes)
 * share; private to the admit room. See wh/claims.h and
 * docs/legacy-indices.md. */
#ifndef WH_CLAIMS_IMPL_H
#define WH_CLAIMS_IMPL_H

#include <pthread.h>   /* pthread_t, pthread_mutex_t, pthread_cond_t */
#include <stdatomic.h> /* atomic_size_t */
#include <stdbool.h>   /* bool */
#include <stddef.h>    /* size_t */

#include "wh/buf.h"     /* wh_buf */
#include "wh/claims.h"  /* struct wh_claim_ticket */
#include "wh/clock.h"   /* wh_nap */
#include "wh/metrics.h" /* struct wh_mclaims */
#include "owners.h"     /* wh_owners */

#define CLAIM_SELECTOR \
    "app.kubernetes.io%2Fmanaged-by%3Dtpu-webhook%2Capp.kubernetes.io%2Fcomponent%3Dworker-id-claim"
#define RESP_MAX ((size_t)64 * 1024 * 1024)
/* One attempt never takes more than this, so that a request the API server
 * sits on leaves time to ask again within the budget. */
#define ATTEMPT_MAX_MS 1000L
/* The sweeper's LIST may carry thousands of claims after a burst. */
#define LIST_TIMEOUT_MS 10000L
/* Retries of a release the API server did not answer, until the claim
 * expires anyway. */
#define RELEASE_BACKOFF_FIRST_MS 200L
#define HELD_BUCKETS 1024u

/* A claim this replica took, remembered until it expires so that it can be
 * given back when the pod carrying its nonce goes (wh_claims_pod_seen). */
struct held {
    struct held *next; /* bucket chain, by nonce */
    struct wh_claim_ticket t;
    long until_ms;    /* the Lease has expired by then (wh_clock_ms) */
    long next_try_ms; /* due from then on, when release is set */
    long backoff_ms;
    char pod[254];  /* the live pod carrying the nonce (metadata.name), "" until seen */
    bool release;   /* due: that pod is going */
    bool ambiguous; /* another pod name came with the nonce: never given back early */
};

struct wh_claims {
    struct wh_kube *kube;
    char *ns, *holder;
    char path[512]; /* the Leases collection */
    long lifetime_s, sweep_ms, budget_ms;
    struct wh_nap nap; /* the sweeper's sleep; stopped by wh_claims_free */
    pthread_t thread;
    bool started;
    pthread_mutex_t mu; /* guards everything below */
    struct wh_mclaims st;
    struct wh_owners *owners; /* RayCluster uids as the API server says */
    pthread_cond_t cv;        /* CLOCK_MONOTONIC; the claims' thread waits on it */
    bool kick;                /* a release is due: the thread looks at once */
    bool stopping;
    struct held *held[HELD_BUCKETS];
    atomic_size_t n_held; /* written under mu; read without it as a fast path */
};

/* DELETE Lease name with uid + resourceVersion preconditions (the object
 * that was seen, not a newer claim of the same name). True when the API
 * server answered (*deleted: it was deleted; 404 and 409 answer too).
 * *retry_after_ms (when not NULL): the answer's Retry-After, else 0. */
bool wh_claim_delete(struct wh_claims *c, const char *name, const char *uid, const char *rv,
                     long timeout_ms, bool *deleted, long *retry_after_ms);
/* s is non-empty and fits a path and a JSON text unescaped. */
bool wh_claim_str_ok(const char *s);
/* "HTTP <status>: <Status.message>" of an error answer, into out. */
void wh_claim_describe_answer(long status, const struct wh_buf *resp, char *out, size_t n);

/* Remember a claim just taken, its nonce written into t (claimthread.c).
 * Takes mu. Out of memory, or a ticket without usable preconditions: the
 * Lease simply expires. */
void wh_claims_held_add(struct wh_claims *c, struct wh_claim_ticket *t, const char *nonce);
/* Forget the claim of Lease name and nonce; with mu held. */
void wh_claims_held_drop(struct wh_claims *c, const char *name, const char *nonce);
/* Takes mu: a copy of this replica's claim of Lease name into *out when its
 * pod is going (release due), else false. */
bool wh_claims_held_due(struct wh_claims *c, const char *name, struct held *out);
/* Give back claim h (a copy of its entry; mu not held): DELETE with its
 * preconditions, at most timeout_ms. True when settled (deleted, or found
 * gone or changed: 404, 409); then its entry is forgotten. Else
 * *retry_after_ms (when not NULL): the answer's Retry-After, or 0. */
bool wh_claims_give_back(struct wh_claims *c, const struct held *h, long timeout_ms,
                         long *retry_after_ms);
/* One LIST of the claims, deleting the expired ones (claims.c, where the
 * Leases' API path is). */
void wh_claims_sweep(struct wh_claims *c);
/* The claims' thread (arg: the claims): until c->stopping. */
void *wh_claims_thread(void *arg);

#endif /* WH_CLAIMS_IMPL_H */
