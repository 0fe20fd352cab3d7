/* decision.h: what a policy (mutation or validation) decides about one
 * object, before it is written as an AdmissionReview response. Pure data. */
#ifndef WH_DECISION_H
#define WH_DECISION_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

#include "wh/buf.h" /* struct wh_buf */

/* Kubernetes shows at most ~120 characters of a warning comfortably. */
#define WH_WARNING_MAX 119
/* Largest JSON patch (its text, before base64) a mutation may answer with.
 * The API server keeps the patched object in etcd, which refuses requests
 * over 1.5 MiB; 1 MiB of patch leaves room for the pod as sent. Building
 * stops at the limit (docs/deploy.md, "Answer size"). */
#define WH_PATCH_MAX_BYTES ((size_t)1024 * 1024)
/* Longest denial message; a longer one is cut on a character boundary and
 * ends with " [message cut]". */
#define WH_MESSAGE_MAX (16 * 1024)

struct wh_decision_text; /* decision.c */

struct wh_decision {
    bool allowed;
    char *message;       /* denial message (malloc'd), NULL when allowed */
    cJSON *patch;        /* JSON array of RFC 6902 operations, NULL when none */
    size_t patch_bytes;  /* about what patch prints to (wh_patch_op counts) */
    cJSON *warnings;     /* JSON array of strings, NULL when none */
    struct wh_buf notes; /* log notes, one per line */
    /* Text that strings of patch point into (wh_decision_keep). */
    struct wh_decision_text *texts;
    /* legacy-path assignment, see struct wh_engine_result */
    bool assigned;
    long replica, host, n_hosts;
    unsigned n_tpu_containers;
    long worker_id;         /* first TPU container's TPU_WORKER_ID as assigned */
    bool state_unavailable; /* denied: the cluster state could not be trusted */
};

/* Zero d and mark it allowed. */
void wh_decision_init(struct wh_decision *d);
/* Free everything d owns; d is left initialised. NULL-safe. */
void wh_decision_free(struct wh_decision *d);

/* Make d the owner of text (a wh_malloc'd string, such as wh_buf_take's)
 * until wh_decision_free, so that the patch can point into it instead of
 * holding a copy (wh_env_set_shared). WH_ERR_NOMEM, text freed, when the
 * record of it cannot be allocated. */
WH_NODISCARD enum wh_err wh_decision_keep(struct wh_decision *d, char *text);

/* Deny with a printf-style message (cut to WH_MESSAGE_MAX bytes); replaces
 * any patch (a denial never carries a partial patch). WH_ERR_NOMEM only. */
WH_NODISCARD enum wh_err wh_decision_deny(struct wh_decision *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Add a warning, cut to WH_WARNING_MAX bytes on a character boundary. */
WH_NODISCARD enum wh_err wh_decision_warn(struct wh_decision *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Add a log note line. */
WH_NODISCARD enum wh_err wh_decision_note(struct wh_decision *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
