/* ratchet.h: validation of an UPDATE judges the change, not the object
 * (docs/deploy.md, "Updates of existing objects"; issue 23).
 *
 * An object that exists already may break a rule: it was created before
 * the webhook, under failurePolicy Ignore, or by the reference's looser
 * rules. Denying each of its UPDATEs would stop it scaling and stop its
 * deletion (a finalizer removal is an UPDATE). So on UPDATE:
 *   - metadata.deletionTimestamp set: admitted (the object is going away);
 *   - otherwise the object and oldObject are judged by the same code, each
 *     problem keyed by its rule (the rule's message format), its part
 *     (the worker group or replicated job) and its value (the fields the
 *     rule reads, never the replica counts the autoscaler writes); a key
 *     counts as often as it occurs. Only a problem oldObject did not have
 *     as often denies: a broken value changed into another broken value, a
 *     broken group added, a second one of a broken group's name. The
 *     others are admitted with a warning naming them.
 * CREATE is judged as before. Pure; memory through mem.h. */
#ifndef WH_RATCHET_H
#define WH_RATCHET_H

#include "wh/decision.h" /* struct wh_decision */
#include "wh/err.h"      /* enum wh_err */
#include "wh/review.h"   /* struct wh_review */
#include "wh/state.h"    /* struct wh_state */

/* The /validate policy (validate.h) through the ratchet: rv and st are
 * borrowed, d is initialised and the caller's. */
WH_NODISCARD enum wh_err wh_ratchet_raycluster(const struct wh_review *rv, const struct wh_state *st,
                                               struct wh_decision *d, char *errbuf);
/* The /validate-workload policy (workload_validate.h) through the ratchet,
 * likewise. */
WH_NODISCARD enum wh_err wh_ratchet_workload(const struct wh_review *rv, const struct wh_state *st,
                                             struct wh_decision *d, char *errbuf);

#endif
