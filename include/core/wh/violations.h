/* violations.h: the problems a policy found, each keyed by its rule, the
 * part it is about and its value, so that the UPDATE ratchet (ratchet.h)
 * can compare an object's problems with oldObject's. Pure; memory through
 * mem.h. */
#ifndef WH_VIOLATIONS_H
#define WH_VIOLATIONS_H

#include <stddef.h> /* size_t */

#include "wh/err.h" /* enum wh_err, WH_NODISCARD */

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

#endif
