/* engine.h: the admission engine, a pure function.
 *
 *   AdmissionReview bytes + read-only cluster state  ->  AdmissionReview bytes
 *
 * No I/O, no globals, no clock: every call is reentrant and thread-safe as
 * long as the state callbacks are. Two steps so that a shell can lock what it
 * needs between them (the server locks the worker group of a legacy-path pod
 * before deciding, then records the assignment in its ledger):
 *
 *   struct wh_review *rv;                          (review.h)
 *   if (wh_review_parse(body, len, &rv, errbuf)) -> not an AdmissionReview
 *   wh_review_info(rv)   -> kind, namespace, cluster, group, legacy?
 *   wh_engine_decide(rv, route, state, &res, errbuf)
 *   ... use res.body ...
 *   wh_engine_result_free(&res); wh_review_free(rv);
 *
 * wh_engine_review() does both steps at once.
 *
 * Memory: everything the engine allocates goes through mem.h, so a shell
 * can give a whole review one arena (the server does, see reqmem.h).
 */
#ifndef WH_ENGINE_H
#define WH_ENGINE_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/decision.h" /* struct wh_event_subject, struct wh_event_note */
#include "wh/err.h"      /* enum wh_err */
#include "wh/review.h"   /* struct wh_review */
#include "wh/state.h"    /* struct wh_state */

enum wh_route {
    WH_ROUTE_ANY,      /* route by request.kind.kind: Pod, RayCluster, Job/JobSet/LWS, else admit */
    WH_ROUTE_MUTATE,   /* /mutate: request.kind.kind must be Pod */
    WH_ROUTE_VALIDATE, /* /validate: request.kind.kind must be RayCluster */
    WH_ROUTE_MUTATE_WORKLOAD,   /* /mutate-workload: Pod of any TPU workload (workload.h) */
    WH_ROUTE_VALIDATE_WORKLOAD, /* /validate-workload: Job, JobSet, LeaderWorkerSet */
};

/* The result of one review. Every pointer is owned by the result and freed by
 * wh_engine_result_free(). Who the review was about is in wh_review_info(),
 * valid as long as the review: a shell keeps the review until the answer is
 * sent and logs from it (one parse, no copies). */
struct wh_engine_result {
    char *body; /* response AdmissionReview JSON (NUL-terminated) */
    size_t body_len;
    bool allowed;
    int code;      /* status.code of a denial (400), 0 when allowed */
    char *message; /* denial message, NULL when allowed */
    /* Denied only because the cluster state (a legacy pod's worker group)
     * could not be trusted: the object may be fine and a retry may pass. */
    bool state_unavailable;
    size_t n_ops;      /* JSON patch operations in the response */
    size_t n_warnings; /* warnings found; the answer lists WH_WARNINGS_MAX of them at most */
    /* Legacy-path assignment (for the ledger); set when the engine chose the
     * pod's replica and host from cluster state, and the request is not a
     * dry run (sideEffects: None). */
    bool assigned;
    long replica;
    long host;
    long n_hosts;
    unsigned n_tpu_containers;
    /* The TPU_WORKER_ID the engine gives the pod's first TPU container
     * (host, or host x TPU containers on TPU7x): what a watch will show and
     * what a reservation must hold to be read back as this host. */
    long worker_id;
    /* Newline-separated notes worth logging (skipped pods, ...); may be NULL. */
    char *notes;
    /* The pod path's warnings of a pod some workload's controller created,
     * for Events on that workload (subject.kind "" when none; podwarn.h). */
    struct wh_event_subject subject;
    struct wh_event_note events[WH_EVENT_NOTES_MAX];
    size_t n_events;
};

/* Decide. Fails only when the request cannot be answered at all (route/kind
 * mismatch -> WH_ERR_KIND, state callback failure, OOM); every problem in the
 * object itself is a well-formed denial in res->body. On failure res is
 * zeroed. */
WH_NODISCARD enum wh_err wh_engine_decide(const struct wh_review *rv, enum wh_route route,
                                          const struct wh_state *state,
                                          struct wh_engine_result *res, char *errbuf);

/* Parse + decide in one call. */
WH_NODISCARD enum wh_err wh_engine_review(const char *body, size_t len, enum wh_route route,
                                          const struct wh_state *state,
                                          struct wh_engine_result *res, char *errbuf);

void wh_engine_result_free(struct wh_engine_result *res); /* NULL-safe */

#endif /* WH_ENGINE_H */
