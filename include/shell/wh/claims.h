/* claims.h: legacy TPU worker ids claimed through the Kubernetes API server,
 * so that several webhook replicas never hand out the same id.
 *
 * One claim is one coordination.k8s.io/v1 Lease in the webhook's own
 * namespace, named after a hash of (pod namespace, cluster, group, replica,
 * worker id) and created with POST: the API server (etcd) lets exactly one
 * creator win; everyone else gets 409 AlreadyExists. A claim is never
 * renewed and never deleted early: it lives leaseDurationSeconds from its
 * creation, long enough for every replica's pod watch to show the pod that
 * took the id, and is then deleted by whichever replica's sweeper sees it
 * expired first, with uid + resourceVersion preconditions. See
 * docs/legacy-indices.md for why.
 *
 * Thread-safe. The claims object owns its API client and its sweeper
 * thread; wh_claims_free() stops the thread and frees both. What it keeps
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

#define WH_CLAIMS_DEFAULT_LIFETIME_S 60L
#define WH_CLAIMS_DEFAULT_BUDGET_MS 3000L

struct wh_claims_opts {
    const char *ns;     /* namespace of the Leases (the webhook's own); required */
    const char *holder; /* this replica's identity (holderIdentity); required */
    long lifetime_s;    /* leaseDurationSeconds; 0: default */
    long sweep_ms;      /* sweeper period; 0: lifetime / 4, at most 5 s */
    long budget_ms;     /* one claim, retries included; 0: default */
};

enum wh_claim_outcome {
    WH_CLAIM_TAKEN,  /* this replica holds the id now */
    WH_CLAIM_HELD,   /* another claim holds it (409 AlreadyExists) */
    WH_CLAIM_FAILED, /* the API server could not decide (unreachable, errors) */
};


struct wh_claims;

/* Takes over kube (freed by wh_claims_free, also on failure). Starts the
 * sweeper, whose first sweep runs at once. NULL with a reason on failure. */
struct wh_claims *wh_claims_new(struct wh_kube *kube, const struct wh_claims_opts *opts,
                                char *errbuf);
void wh_claims_free(struct wh_claims *c); /* NULL-safe */

/* Claim (ns, cluster, group, replica, worker_id). Transport failures, 5xx
 * and 429 are retried (Retry-After honoured) within the budget; FAILED
 * then, with the reason in why. A transfer that timed out may have created
 * the Lease anyway: its retry sees 409 and answers HELD, so an id is never
 * used unless this call saw it created. */
WH_NODISCARD enum wh_claim_outcome wh_claims_take(struct wh_claims *c, const char *ns,
                                                  const char *cluster, const char *group,
                                                  long replica, long worker_id, char *why,
                                                  size_t why_len);

/* The API server answered the last sweeps (for /readyz). why: the last
 * failure when not. */
bool wh_claims_ready(struct wh_claims *c, char *why, size_t why_len);
void wh_claims_stats(struct wh_claims *c, struct wh_mclaims *st);

/* The Lease name of a claim ("tpu-worker-id-" + 40 hex digits of SHA-256
 * over the five fields): deterministic, so that every replica names the
 * same claim the same way. out must hold WH_CLAIMS_NAME_LEN bytes. */
#define WH_CLAIMS_NAME_LEN 56
void wh_claims_name(const char *ns, const char *cluster, const char *group, long replica,
                    long worker_id, char out[WH_CLAIMS_NAME_LEN]);

#endif /* WH_CLAIMS_H */
