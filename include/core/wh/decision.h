/* decision.h: what a policy (mutation or validation) decides about one
 * object, before it is written as an AdmissionReview response. Pure data. */
#ifndef WH_DECISION_H
#define WH_DECISION_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

#include "wh/buf.h" /* struct wh_buf */

/* Kubernetes shows at most ~120 characters of a warning comfortably. */
#define WH_WARNING_MAX 119
/* Warnings listed in one answer; the rest are counted in one last line
 * ("and N more warnings"): the API server keeps about 4 KB of them, and
 * 16,000 warnings of a 3 MB RayCluster made a 1.3 MB answer. */
#define WH_WARNINGS_MAX 50
/* Largest JSON patch (its text, before base64) a mutation may answer with.
 * The API server keeps the patched object in etcd, which refuses requests
 * over 1.5 MiB; 1 MiB of patch leaves room for the pod as sent. Writing
 * stops at the limit, exactly (docs/deploy.md, "Answer size"). */
#define WH_PATCH_MAX_BYTES ((size_t)1024 * 1024)
/* Longest denial message; a longer one is cut on a character boundary and
 * ends with " [message cut]". */
#define WH_MESSAGE_MAX (16 * 1024)

struct wh_decision_text; /* decision.c */

/* A warning the pod path gave a controller-created pod, to be recorded as a
 * Kubernetes Event on the workload that owns the pod (docs/troubleshooting.md,
 * "Events"): at most WH_EVENT_NOTES_MAX per decision, the first of each
 * reason. Fixed-size: a shell copies them past the request's arena. */
#define WH_EVENT_NOTES_MAX 4
#define WH_EVENT_TEXT_MAX 640
struct wh_event_note {
    const char *reason;           /* static: one of workload.h's wh_pod_warnings[].reason */
    char text[WH_EVENT_TEXT_MAX]; /* "<workload> (pod ...): <what>; <fix>" */
};
/* The object such Events are about; kind "" when there is none (a pod no
 * controller created). uid "" when the pod does not name it (the pods of a
 * JobSet or LeaderWorkerSet are owned by Jobs and StatefulSets). */
struct wh_event_subject {
    char api_version[48], kind[32], ns[64], name[254], uid[64];
};

struct wh_decision {
    bool allowed;
    char *message; /* denial message (malloc'd), NULL when allowed */
    /* The RFC 6902 operations as compact JSON text, "[{...},{...}]" (a
     * whole document after every operation, patch.h), at most
     * WH_PATCH_MAX_BYTES; empty when n_ops is 0. */
    struct wh_buf patch;
    size_t n_ops;
    /* After an operation failed with WH_ERR_TOOBIG: at least how many bytes
     * the patch needed (patch.h). */
    size_t patch_need;
    /* The first name the patch would set that the API server refuses, as a
     * message (wh_malloc'd), or NULL (patch.h, names.h). */
    char *bad_name;
    /* JSON array of strings, NULL when none: the first WH_WARNINGS_MAX
     * warnings, then one "and N more" line when there were more. */
    cJSON *warnings;
    size_t n_warnings;   /* warnings asked for, listed or not */
    cJSON *more;         /* the "and N more" line (in warnings), NULL until needed */
    struct wh_buf notes; /* log notes, one per line */
    /* Texts the decision keeps for the values written from them (wh_decision_keep). */
    struct wh_decision_text *texts;
    /* legacy-path assignment, see struct wh_engine_result */
    bool assigned;
    long replica, host, n_hosts;
    unsigned n_tpu_containers;
    long worker_id;         /* first TPU container's TPU_WORKER_ID as assigned */
    bool state_unavailable; /* denied: the cluster state could not be trusted */
    struct wh_event_subject subject;
    struct wh_event_note events[WH_EVENT_NOTES_MAX];
    size_t n_events;
};

/* Zero d and mark it allowed. */
void wh_decision_init(struct wh_decision *d);
/* Free everything d owns; d is left initialised. NULL-safe. */
void wh_decision_free(struct wh_decision *d);

/* Make d the owner of text (a wh_malloc'd string, such as wh_buf_take's)
 * until wh_decision_free: values several operations write (the address lists
 * of a pod's TPU containers) are built once and kept here. WH_ERR_NOMEM,
 * text freed, when the record of it cannot be allocated. */
WH_NODISCARD enum wh_err wh_decision_keep(struct wh_decision *d, char *text);

/* Deny with a printf-style message (cut to WH_MESSAGE_MAX bytes); empties
 * the patch (a denial never carries a partial patch) and forgets bad_name
 * (which may be one of the arguments). WH_ERR_NOMEM only. */
WH_NODISCARD enum wh_err wh_decision_deny(struct wh_decision *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Add a warning, cut to WH_WARNING_MAX bytes on a character boundary; past
 * WH_WARNINGS_MAX it only counts in the last line. O(1). */
WH_NODISCARD enum wh_err wh_decision_warn(struct wh_decision *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same for a text already written: text (WH_WARNING_MAX + 1 bytes or
 * more) is cut in place to what the warning says. */
WH_NODISCARD enum wh_err wh_decision_warn_text(struct wh_decision *d, char *text);
/* Record an Event note (reason static, text cut on a character boundary);
 * a reason already recorded, or past WH_EVENT_NOTES_MAX, is ignored. */
void wh_decision_event(struct wh_decision *d, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Add a log note line. */
WH_NODISCARD enum wh_err wh_decision_note(struct wh_decision *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
