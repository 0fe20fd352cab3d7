/* claims_impl.h: what claims.c (claiming) and claimthread.c (the claims'
 * thread: sweeping expired claims, giving back claims whose pod is gone)
 * share; private to the admit room. See wh/claims.h. */
#ifndef WH_CLAIMS_IMPL_H
#define WH_CLAIMS_IMPL_H

#include <pthread.h>   /* pthread_t, pthread_mutex_t, pthread_cond_t */
#include <stdatomic.h> /* atomic_size_t */
#include <stdbool.h>   /* bool */
#include <stddef.h>    /* size_t */

#include "wh/buf.h"     /* wh_buf */
#include "wh/claims.h"  /* struct wh_claim_ticket, struct wh_claim_key */
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

/* Retries of a release the API server did not answer. */
#define RELEASE_BACKOFF_FIRST_MS 200L
#define HELD_BUCKETS 1024u

/* A Lease this replica must give back when the time comes (see
 * wh_claims_pod_seen() and resolve_lost()): a claim it took (ticket known),
 * or one a lost attempt may have created for a pod it then denied (nonce
 * known, ticket not). Forgotten once the Lease has expired anyway. */
struct held {
    struct held *next; /* bucket chain */
    struct wh_claim_ticket t;
    char nonce[40];   /* an orphan's ("" for a taken claim) */
    long until_ms;    /* the Lease has expired by then (wh_clock_ms) */
    long next_try_ms; /* due from then on, when release is set */
    long backoff_ms;
    char pod[254]; /* the live pod it is bound to (metadata.name), "" while unbound */
    bool bound;    /* the pod watch showed a live pod with the claim's ids */
    bool release;  /* due: that pod is going, or the Lease is an orphan */
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
    pthread_cond_t cv;        /* CLOCK_MONOTONIC; the worker waits on it */
    bool kick;                /* a release is due: the worker looks at once */
    bool stopping;
    struct held *held[HELD_BUCKETS];
    atomic_size_t n_held; /* written under mu; read without it as a fast path */
};

/* Whose Lease answered a 409: this claim's own (an attempt whose answer
 * was lost created it: the nonce tells), one of a deleted instance of the
 * RayCluster (it records another cluster uid), or a live claim (HELD). */
enum found { FOUND_HELD, FOUND_MINE, FOUND_STALE, FOUND_UNKNOWN, FOUND_ABSENT };

/* A claim of a deleted instance of the RayCluster, as read back. */
struct stale_claim {
    struct wh_claim_ticket lease; /* what its deletion needs */
    char cluster_uid[128];        /* the instance it was made for */
};

/* GET the Lease name and tell (enum found) given left ms: MINE (its nonce
 * annotation is nonce) fills ticket, STALE (another cluster uid than k's)
 * fills stale; 404 is ABSENT, no answer UNKNOWN. name and ticket->name must
 * not overlap. */
enum found wh_claim_read(struct wh_claims *c, const char *name, const struct wh_claim_key *k,
                         const char *nonce, long left, struct wh_claim_ticket *ticket,
                         struct stale_claim *stale);
/* DELETE Lease name with uid + resourceVersion preconditions. True when the
 * API server answered (*deleted: it was deleted; 404 and 409 answer too). */
bool wh_claim_delete(struct wh_claims *c, const char *name, const char *uid, const char *rv,
                     long timeout_ms, bool *deleted);
/* s is non-empty and fits a path and a JSON text unescaped. */
bool wh_claim_str_ok(const char *s);
/* "HTTP <status>: <Status.message>" of an error answer, into out. */
void wh_claim_describe_answer(long status, const struct wh_buf *resp, char *out, size_t n);

/* Remember a Lease to give back (claimthread.c): a taken claim (t with a
 * usable uid and resourceVersion; nonce NULL), released once its pod goes,
 * or an orphan (nonce set), due at once. Takes mu. */
void wh_claims_held_add(struct wh_claims *c, const struct wh_claim_ticket *t, const char *nonce);
/* Forget the Lease name; with mu held. */
void wh_claims_held_drop(struct wh_claims *c, const char *name);
/* The claims' thread (arg: the claims): until c->stopping. */
void *wh_claims_thread(void *arg);

#endif /* WH_CLAIMS_IMPL_H */
