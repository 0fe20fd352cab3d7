/* legacy.h: the replica and host a legacy-path pod gets, chosen from the
 * pods its worker group already has (docs/internals/reference-behaviour.md
 * §2.4 steps 3-5; the random pick: docs/legacy-indices.md).
 *
 * Pure: it reads the state through its callbacks and allocates only
 * scratch memory (mem.h), freed before it returns.
 */
#ifndef WH_LEGACY_H
#define WH_LEGACY_H

#include <stdbool.h> /* bool */

#include "wh/decision.h" /* struct wh_decision */
#include "wh/err.h"      /* enum wh_err */
#include "wh/state.h"    /* struct wh_state */

struct cJSON;

/* The worker group of the pod being decided. Strings are borrowed. */
struct wh_legacy_group {
    const char *ns, *cluster, *group;
    long n_hosts;
    bool tpu7x; /* the group's ids count host x TPU containers + container */
};

/* Choose: the lowest incomplete replica, and in it the lowest free host,
 * or the one state->ops->legacy_pick draws among the free hosts. *host is
 * -1 when the replica has two pods with one id before its first gap (the
 * slice cannot start). Skipped pods are noted in d. Fails on a state
 * callback failure or OOM. */
WH_NODISCARD enum wh_err wh_legacy_choose(const struct wh_state *st,
                                          const struct wh_legacy_group *g, struct wh_decision *d,
                                          long *replica, long *host, char *errbuf);

/* The patch of freshly assigned legacy indices (d->assigned) names the
 * claim that stands for them on the pod: annotation WH_ANN_CLAIM_NONCE
 * (podspec.h) set to what st's legacy_claim_nonce answers; nothing when it
 * is NULL or answers NULL. Fails on OOM or a full patch (patch.h). */
WH_NODISCARD enum wh_err wh_legacy_claim_nonce(const struct wh_state *st, const struct cJSON *pod,
                                               struct wh_decision *d);

#endif /* WH_LEGACY_H */
