/* violations.h: the problems a policy found, each keyed by its rule, the
 * part it is about and its value, so that the UPDATE ratchet (ratchet.h)
 * can compare an object's problems with oldObject's. Pure; memory through
 * mem.h. */
#ifndef WH_VIOLATIONS_H
#define WH_VIOLATIONS_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/err.h" /* enum wh_err, WH_NODISCARD */

/* Longest message of a violation kept (a warning cuts it shorter; a
 * denial naming the problems an update adds shows it whole). */
#define WH_VIOLATION_MESSAGE_MAX 1024

/* A denial's fix as data (issue 34, "Denials whose fix works"): a few
 * alternatives, each a set of edits that change together (chips per pod with
 * the host count that goes with them). Every value is one the next check
 * accepts for the object's topology; the message names the same values,
 * written from the same numbers. Applying the edits of one option to the
 * object answers that denial (tests/render/test_suggestions.py applies every
 * option of every denial of the test corpora). */
#define WH_SUGGEST_OPTIONS 4
#define WH_SUGGEST_EDITS 4

enum wh_edit_kind {
    WH_EDIT_NUMBER, /* set the number at pointer */
    WH_EDIT_STRING, /* set the string at pointer */
    /* The chips per pod of the pod template at pointer: google.com/tpu of
     * its TPU containers (requests and limits), number in all, split evenly
     * over them. */
    WH_EDIT_CHIPS,
};

struct wh_edit {
    enum wh_edit_kind kind;
    char field[200];   /* the field as the message names it */
    char pointer[200]; /* RFC 6901 pointer into the object judged */
    long number;       /* WH_EDIT_NUMBER, WH_EDIT_CHIPS */
    char text[64];     /* WH_EDIT_STRING */
};

struct wh_suggestion_option {
    size_t n;
    struct wh_edit edits[WH_SUGGEST_EDITS]; /* changed together */
};

/* Plain data, no pointers: copied with memcpy. */
struct wh_suggestion {
    size_t n;                                                /* 0: no fix as data */
    struct wh_suggestion_option options[WH_SUGGEST_OPTIONS]; /* alternatives */
};

/* Add an edit to option o of s (the option counts up to it); false, s
 * unchanged, when past WH_SUGGEST_OPTIONS or WH_SUGGEST_EDITS. text is for
 * WH_EDIT_STRING. */
bool wh_suggest_edit(struct wh_suggestion *s, size_t o, enum wh_edit_kind kind, const char *field,
                     const char *pointer, long number, const char *text);

/* A wh_malloc'd copy of s, or NULL when s is NULL or has no option (and on
 * allocation failure, which *nomem says). Freed with wh_free. */
struct wh_suggestion *wh_suggestion_dup(const struct wh_suggestion *s, bool *nomem);

/* One problem a policy found. */
struct wh_violation {
    const char *rule; /* the rule's message format: static text, the same for any value */
    char *part;       /* what it is about (group, replicated job, field); owned */
    char *value;      /* the values of the fields the rule reads; owned */
    char *message;    /* the problem as a person reads it; owned */
    struct wh_suggestion *suggest; /* its fix as data; owned (wh_free), NULL when none */
};

/* Owned by the caller; wh_violations_free() frees items. Start zeroed. */
struct wh_violations {
    struct wh_violation *items;
    size_t n, cap;
};

/* Append a copy of part, value and message. WH_ERR_NOMEM only. */
WH_NODISCARD enum wh_err wh_violations_add(struct wh_violations *v, const char *rule,
                                           const char *part, const char *value, const char *message);
/* The same with the problem's fix (copied; NULL or empty: none). */
WH_NODISCARD enum wh_err wh_violations_add_fix(struct wh_violations *v, const char *rule,
                                               const char *part, const char *value,
                                               const char *message, const struct wh_suggestion *fix);
void wh_violations_free(struct wh_violations *v); /* v is left zeroed; NULL-safe */

#endif
