/* claims.h: legacy TPU worker ids claimed through the Kubernetes API server,
 * so that several webhook replicas never hand out the same id.
 *
 * One claim is one coordination.k8s.io/v1 Lease in the webhook's own
 * namespace, named after a hash of (pod namespace, cluster, group, replica,
 * worker id) and created with POST: the API server (etcd) lets exactly one
 * creator win; everyone else gets 409 AlreadyExists. A claim is never
 * renewed: it lives leaseDurationSeconds from its creation, long enough for
 * every replica's pod watch to show the pod that took the id, and is then
 * deleted by whichever replica's sweeper sees it expired first, with uid +
 * resourceVersion preconditions. Earlier only when the pod it was taken for
 * goes: the claim's random nonce is on its Lease and, through the admission
 * patch, on that pod (annotation WH_ANN_CLAIM_NONCE), and the replica that
 * took it gives it back when its pod watch shows the pod carrying that
 * nonce being deleted (wh_claims_pod_seen). See docs/legacy-indices.md.
 *
 * Thread-safe. The claims object owns its API client and its thread (the
 * sweeper, which also gives claims back); wh_claims_free() stops the
 * thread and frees both. What it keeps
 * across calls is allocated with the C library's malloc, never from the
 * request arena a caller's thread may have bound (reqmem.h).
 */
#ifndef WH_CLAIMS_H
#define WH_CLAIMS_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/err.h"     /* WH_NODISCARD */
#include "wh/kube.h"    /* struct wh_kube */
#include "wh/metrics.h" /* struct wh_mclaims */
#include "wh/state.h"   /* struct wh_pod_rec */

#define WH_CLAIMS_DEFAULT_LIFETIME_S 60L
#define WH_CLAIMS_DEFAULT_BUDGET_MS 3000L
/* The shortest lifetime accepted: twice the budget. A claim must outlive
 * any claim of the same id still being made by a replica that decided
 * before the pod holding the id appeared (docs/legacy-indices.md). */
#define WH_CLAIMS_MIN_LIFETIME_S (2 * WH_CLAIMS_DEFAULT_BUDGET_MS / 1000)
#define WH_CLAIMS_NAME_LEN 56  /* wh_claims_name() */
#define WH_CLAIMS_NONCE_LEN 33 /* wh_claims_nonce(): 32 hex digits */

struct wh_claims_opts {
    const char *ns;     /* namespace of the Leases (the webhook's own); required */
    const char *holder; /* this replica's identity (holderIdentity); required */
    long lifetime_s;    /* leaseDurationSeconds; 0: default; else >= 2 x budget */
    long sweep_ms;      /* sweeper period; 0: lifetime / 4, at most 5 s */
    long budget_ms;     /* one claim, retries included; 0: default */
};

enum wh_claim_outcome {
    WH_CLAIM_TAKEN,  /* this replica holds the id now */
    WH_CLAIM_HELD,   /* another claim holds it (409 AlreadyExists) */
    WH_CLAIM_FAILED, /* the API server could not decide (unreachable, errors) */
};

/* The Lease a TAKEN claim created, for wh_claims_release(). */
struct wh_claim_ticket {
    char name[WH_CLAIMS_NAME_LEN];
    char nonce[WH_CLAIMS_NONCE_LEN];
    char uid[128];
    char rv[64]; /* metadata.resourceVersion */
};

struct wh_claims;

/* Takes over kube (freed by wh_claims_free, also on failure). Starts the
 * sweeper, whose first sweep runs at once. NULL with a reason on failure
 * (a lifetime below WH_CLAIMS_MIN_LIFETIME_S, or twice budget_ms, among
 * them). */
struct wh_claims *wh_claims_new(struct wh_kube *kube, const struct wh_claims_opts *opts,
                                char *errbuf);
void wh_claims_free(struct wh_claims *c); /* NULL-safe */

/* What one claim is about. Strings are borrowed. */
struct wh_claim_key {
    const char *ns, *cluster, *group; /* the pod's namespace, RayCluster, worker group */
    long replica, worker_id;
    /* The uid of the RayCluster instance the pod belongs to (its owner);
     * "" or NULL when unknown. A claim that records another uid belongs to
     * a deleted instance of the same name and is superseded (below). */
    const char *cluster_uid;
    /* The claim's nonce (wh_claims_nonce), recorded on its Lease; the pod
     * answered with this claim carries it too. Required. */
    const char *nonce;
};

/* A fresh random nonce for one claim (one per decision: the engine writes
 * it into the pod's patch before the claim is asked for). */
void wh_claims_nonce(char out[WH_CLAIMS_NONCE_LEN]);

/* Claim k. Transport failures, 5xx and 429 are retried (Retry-After
 * honoured) within the budget; FAILED then, with the reason in why. A
 * transfer that timed out may have created the Lease anyway: its retry
 * sees 409 and reads the Lease back, so an id is never used unless this
 * call saw it created. A 409 whose Lease records another cluster uid than
 * k's (the RayCluster was deleted and created again under its name) is
 * deleted with uid + resourceVersion preconditions and the id claimed
 * again, a few times at most; a Lease without a recorded uid, or when k
 * has none, is HELD as any other. */
/* A TAKEN claim is remembered (no API call) until it expires, to be given
 * back when its pod goes (wh_claims_pod_seen). */
WH_NODISCARD enum wh_claim_outcome wh_claims_take(struct wh_claims *c, const struct wh_claim_key *k,
                                                  struct wh_claim_ticket *ticket, char *why,
                                                  size_t why_len);

/* Give up a TAKEN claim at once, because a live pod holds its id (counted
 * as superseded, reason pod_holds_id): DELETE its Lease with uid and
 * resourceVersion preconditions (a claim re-created meanwhile is left
 * alone). One attempt: a Lease left behind only blocks its id until it
 * expires. False with the reason in why when the API server did not
 * delete it. */
bool wh_claims_release(struct wh_claims *c, const struct wh_claim_ticket *ticket, char *why,
                       size_t why_len);

/* What the pod watch shows (its thread; never waits on the network): pod
 * (its namespace, cluster, group, replicaIndex label and TPU_WORKER_ID)
 * carrying annotation WH_ANN_CLAIM_NONCE = nonce (NULL: none), live, or
 * being deleted or deleted (gone). A claim this replica took with that
 * nonce and those ids is tied to the first live pod shown with them (by
 * name), and given back when that pod (or, never seen live, a pod with
 * them) is gone: the claims' thread DELETEs the Lease with uid and
 * resourceVersion preconditions, counts it released and logs
 * claim_released. Anything else (no nonce, an unknown one, other ids, a
 * namesake) changes nothing. */
void wh_claims_pod_seen(struct wh_claims *c, const struct wh_pod_rec *pod, const char *nonce,
                        bool gone);

/* Not part of readiness (wh_admit_ready): a failed sweep or claim is
 * counted (struct wh_mclaims) and alerted on, and denies only the legacy
 * pods whose claim it is. */
void wh_claims_stats(struct wh_claims *c, struct wh_mclaims *st);

/* The Lease name of a claim ("tpu-worker-id-" + 40 hex digits of SHA-256
 * over the five fields): deterministic, so that every replica names the
 * same claim the same way. out must hold WH_CLAIMS_NAME_LEN bytes. */
void wh_claims_name(const char *ns, const char *cluster, const char *group, long replica,
                    long worker_id, char out[WH_CLAIMS_NAME_LEN]);

/* Microseconds since the epoch of a Kubernetes Time or MicroTime text, an
 * RFC 3339 date-time ("2006-01-02T15:04:05Z", "2006-01-02T15:04:05.000000Z",
 * "2006-01-02T17:04:05+02:00"; the offset is honoured), or -1 when it is
 * not one or is before 1970 (0001-01-01T00:00:00Z, Go's zero time). */
long long wh_claims_parse_time_us(const char *s);

#endif /* WH_CLAIMS_H */
