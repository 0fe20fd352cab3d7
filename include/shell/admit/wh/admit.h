/* admit.h: the admission pipeline between the HTTP server and the engine.
 *
 * Owns the cluster-state sources (Kubernetes caches unless standalone) and
 * the legacy-index ledger, and runs each review through the pure engine:
 * parse -> (legacy pod: lock its worker group) -> state view (cache +
 * ledger reservations) -> decide -> reserve the assignment -> unlock ->
 * claim it through the API server (Kubernetes mode); a claim held by
 * another replica is kept as a reservation and the pod is decided again,
 * a claim that cannot be made denies the pod (KubeRay retries).
 * Thread-safe: the server calls wh_admit_review() from many threads; an
 * admission for one worker group never waits on another group.
 */
#ifndef WH_ADMIT_H
#define WH_ADMIT_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/cache.h"   /* struct wh_cache_opts */
#include "wh/engine.h"  /* struct wh_engine_result, enum wh_route */
#include "wh/metrics.h" /* struct wh_mgauges */
#include "wh/slices.h"  /* struct wh_slices */

/* Standalone mode: the ledger is the whole state and never forgets; use it
 * for one webhook replica whose pods are never re-created (tests, demos).
 * Its memory is bounded per worker group and reset when a RayCluster of the
 * same namespace/name is created again (see ledger.h). */
struct wh_admit_opts {
    bool standalone;                   /* no Kubernetes API: the ledger alone */
    const char *kubeconfig_path;       /* NULL or "": in-cluster configuration */
    long reservation_ttl_ms;           /* unconfirmed reservations expire; 0 = default (30 s) */
    const struct wh_cache_opts *cache; /* NULL: defaults (tests tune timeouts) */
    /* Worker-id claims through the API server (Kubernetes mode; see
     * claims.h), so that several replicas never hand out the same id. */
    const char *claims_namespace; /* NULL/"": $POD_NAMESPACE, the service account's, "default" */
    const char *claims_holder;    /* NULL/"": $POD_NAME or the host name, + a random suffix */
    long claim_lifetime_s;        /* 0: default (60 s) */
    long claim_budget_ms;         /* one claim, retries included; 0: default (claims.h) */
    bool claims_off;              /* tests only: show what several replicas do without them */
    long events_window_ms; /* 0: default (events.h, one Event per object and reason a minute) */
    /* The live slice check (wh/slices.h, Kubernetes mode): how often it
     * looks for changes; 0: the default (5 s); < 0: off. */
    long slice_check_interval_ms;
};

struct wh_admit;

/* Start the pipeline; never blocks on anything remote (caches sync in the
 * background). NULL with a reason in errbuf on failure (a bad kubeconfig,
 * not in a pod and no kubeconfig given, ...). Free with
 * wh_admit_free(), which stops background threads. */
struct wh_admit *wh_admit_new(const struct wh_admit_opts *opts, char *errbuf);
void wh_admit_free(struct wh_admit *ad); /* NULL-safe */

/* Decide a review the caller parsed (wh_review_parse) and keeps until the
 * answer is sent, so that it can log from it. Same contract as
 * wh_engine_decide(). The server calls it with the request's arena bound
 * (reqmem.h): what the pipeline keeps past the request (reservations,
 * claims) must not come from mem.h or cJSON while it is bound. */
WH_NODISCARD enum wh_err wh_admit_decide(struct wh_admit *ad, const struct wh_review *rv,
                                         enum wh_route route, struct wh_engine_result *res,
                                         char *errbuf);

/* Parse and decide one AdmissionReview. Same contract as wh_engine_review(). */
WH_NODISCARD enum wh_err wh_admit_review(struct wh_admit *ad, const char *body, size_t len,
                                         enum wh_route route, struct wh_engine_result *res,
                                         char *errbuf);

/* Whether deciding rv may wait on the API server (a legacy pod's
 * worker-id claim, up to the claim budget, WH_CLAIMS_DEFAULT_BUDGET_MS):
 * such a review must be decided on a thread that serves no connection
 * (docs/internals/threads.md). Never waits. */
bool wh_admit_may_wait(struct wh_admit *ad, const struct wh_review *rv, enum wh_route route);

/* Ready to serve admissions (for /readyz); when false, why says why. */
bool wh_admit_ready(struct wh_admit *ad, char *why, size_t why_len);
/* The live slice check (wh/slices.h); NULL when standalone or off. The
 * pipeline owns it. */
struct wh_slices *wh_admit_slices(struct wh_admit *ad);

/* The pipeline's gauges right now (for /metrics and tests). */
void wh_admit_stats(struct wh_admit *ad, struct wh_mgauges *st);

#endif /* WH_ADMIT_H */
