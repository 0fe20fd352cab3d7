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

#include <stddef.h> /* size_t */

#include "wh/decision.h" /* struct wh_decision */
#include "wh/err.h"      /* enum wh_err */
#include "wh/review.h"   /* struct wh_review */
#include "wh/state.h"    /* struct wh_state */

/* Longest message of a violation kept (a warning cuts it shorter; a
 * denial naming the problems an update adds shows it whole). */
#define WH_VIOLATION_MESSAGE_MAX 1024

/* One problem a policy found. */
struct wh_violation {
    const char *rule; /* the rule's message format: static text, the same for any value */
    char *part;       /* what it is about (group, replicated job, field); owned */
    char *value;      /* the values of the fields the rule reads; owned */
    char *message;    /* the problem as a person reads it; owned */
};

/* Owned by the caller; wh_violations_free() frees items. Start zeroed. */
struct wh_violations {
    struct wh_violation *items;
    size_t n, cap;
};

/* Append a copy of part, value and message. WH_ERR_NOMEM only. */
WH_NODISCARD enum wh_err wh_violations_add(struct wh_violations *v, const char *rule,
                                           const char *part, const char *value, const char *message);
void wh_violations_free(struct wh_violations *v); /* v is left zeroed; NULL-safe */

/* The /validate policy (validate.h) through the ratchet: rv and st are
 * borrowed, d is initialised and the caller's. */
WH_NODISCARD enum wh_err wh_ratchet_raycluster(const struct wh_review *rv, const struct wh_state *st,
                                               struct wh_decision *d, char *errbuf);
/* The /validate-workload policy (workload_validate.h) through the ratchet,
 * likewise. */
WH_NODISCARD enum wh_err wh_ratchet_workload(const struct wh_review *rv, const struct wh_state *st,
                                             struct wh_decision *d, char *errbuf);

#endif
