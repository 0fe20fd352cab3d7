/* validate.h: RayCluster validation (docs/internals/reference-behaviour.md §3,
 * with D1 and D8 of docs/behaviour.md, "Differences from the reference"). Pure. */
#ifndef WH_VALIDATE_H
#define WH_VALIDATE_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/decision.h"   /* struct wh_decision */
#include "wh/err.h"        /* enum wh_err */
#include "wh/review.h"     /* struct wh_review */
#include "wh/state.h"      /* struct wh_state */
#include "wh/violations.h" /* struct wh_suggestion */

/* Decide about rv (an AdmissionReview whose kind is RayCluster; its
 * operation and the cluster's name are its info's): CREATE and UPDATE are
 * checked, other operations admitted. Every failing TPU worker group is
 * reported in one denial message; admissible-but-likely-wrong settings
 * become warnings. rv and st are borrowed; d must be initialised and is the
 * caller's (wh_decision_free). Errors only for OOM or a failing state
 * callback. */
WH_NODISCARD enum wh_err wh_validate_raycluster(const struct wh_review *rv,
                                                const struct wh_state *st, struct wh_decision *d,
                                                char *errbuf);

/* One finding about one worker group: a problem (the cluster is denied) or
 * a warning. The text is exactly what the denial carries after the group's
 * prefix, or the warning as sent; the other fields say the same as data, for
 * tools that show or act on them (check, render). */
struct wh_group_finding {
    bool warning;
    int index;          /* spec.workerGroupSpecs[index] */
    char *group;        /* groupName, owned (wh_malloc); "" when absent */
    const char *field;  /* the field at fault, from the group (static text) */
    const char *rule;   /* the rule: its message format (static text, ratchet.h) */
    char value[128];    /* the value found; "" when not set */
    char expected[128]; /* what would be accepted; "" when no single answer */
    char key[400];      /* the rule's value, which the UPDATE ratchet compares (ratchet.h) */
    char *message;      /* owned (wh_malloc) */
    /* A problem's fix as data (violations.h), the values its message names;
     * owned (wh_free), NULL when none. */
    struct wh_suggestion *suggest;
};

/* Every finding, in the order found. Owned by the caller once filled;
 * wh_validation_free() frees items and messages. Start zeroed. */
struct wh_validation {
    struct wh_group_finding *items;
    size_t n, cap;
};

/* wh_validate_raycluster that also fills report (may be NULL) with the
 * findings of every worker group. The decision is the same either way. */
WH_NODISCARD enum wh_err wh_validate_raycluster_report(const struct wh_review *rv,
                                                       const struct wh_state *st,
                                                       struct wh_decision *d,
                                                       struct wh_validation *report, char *errbuf);
void wh_validation_free(struct wh_validation *v); /* v is left zeroed; NULL-safe */

/* Number of problems (not warnings) about group index in v. */
size_t wh_validation_problems(const struct wh_validation *v, int index);

#endif
