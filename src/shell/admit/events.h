/* events.h: Kubernetes Events on the workload that owns a warned pod
 * (docs/troubleshooting.md, "Events on the workload").
 *
 * A serving thread offers a warning (wh_events_offer: a short mutex
 * section, never a wait on the network); one worker thread posts it to the
 * API server (RBAC: create events, core API group), in the namespace of the
 * request that warned (admit.c offers nothing else). Rate-limited: one Event
 * per (namespace, kind, name, reason) per window, the warnings in between
 * counted into the next Event's count; at most WH_EVENTS_PER_NAMESPACE
 * Events per namespace per window (a table of WH_EVENTS_NAMESPACES, the
 * namespaces beyond it sharing one more window: nswin.h), the rest counted
 * as limited; a bounded queue, and an offer
 * that finds it full is dropped and counted. A failed POST is counted, not
 * retried; after a 429 (POST or GET) the worker waits out Retry-After, at
 * most WH_EVENTS_BACKOFF_MAX_MS, before its next request. Nothing here can
 * delay or fail an admission.
 *
 * The uid a pod names for its Job or JobSet is the pod's word: the worker
 * checks it with a GET of the workload (RBAC: get jobs, jobsets). Another
 * uid, or no such workload (404): no Event (logged event_owner_mismatch,
 * counted unverified); the GET not answered: the Event without uid.
 *
 * A LeaderWorkerSet's pods carry no uid of it: the worker reads it with a
 * GET of the LeaderWorkerSet (RBAC: get leaderworkersets), kept
 * WH_EVENTS_UID_TTL_MS in a table of WH_EVENTS_UIDS (uidcache.h; a
 * recreated LWS is named with the old uid until then). No such LWS (404):
 * no Event (event_owner_mismatch, unverified; not kept). A refused or
 * failed GET posts the Event without a uid (logged: event_uid_unknown).
 *
 * Memory: the queue and the window table are allocated once by
 * wh_events_new (never from a request's arena); an offer copies what it
 * keeps. Thread-safe.
 */
#ifndef WH_EVENTS_H
#define WH_EVENTS_H

#include "wh/decision.h" /* struct wh_event_subject, struct wh_event_note */
#include "wh/kube.h"     /* struct wh_kube */
#include "wh/metrics.h"  /* struct wh_mevents */

#define WH_EVENTS_WINDOW_MS 60000L      /* one Event per object and reason per minute */
#define WH_EVENTS_QUEUE 64              /* Events waiting for the worker */
#define WH_EVENTS_PER_NAMESPACE 30      /* Events of one namespace per window */
#define WH_EVENTS_NAMESPACES 128        /* namespaces whose counts are kept */
#define WH_EVENTS_POST_TIMEOUT_MS 2000L /* one POST, at most */
#define WH_EVENTS_GET_TIMEOUT_MS 2000L  /* one GET of a LeaderWorkerSet, at most */
#define WH_EVENTS_BACKOFF_MAX_MS 2000L  /* the longest Retry-After waited out */
#define WH_EVENTS_UIDS 256              /* LeaderWorkerSet uids remembered */
#define WH_EVENTS_UID_TTL_MS 60000L     /* ... each for a minute, then read again */
#define WH_EVENTS_IDLE_MS 60000L        /* the worker's idle wait, renewed */

struct wh_events_opts {
    long window_ms;       /* 0: WH_EVENTS_WINDOW_MS */
    const char *instance; /* reportingInstance (the holder name) */
};

struct wh_events;

/* Takes kube (freed with the recorder, or here on failure). NULL with a
 * reason in errbuf. */
struct wh_events *wh_events_new(struct wh_kube *kube, const struct wh_events_opts *o, char *errbuf);
/* Stops the worker (a GET or POST in flight ends within its timeout; a
 * Retry-After wait at once), drops what is queued. NULL-safe. */
void wh_events_free(struct wh_events *e);

/* Offer one warning about s; never blocks on anything but a short mutex. */
void wh_events_offer(struct wh_events *e, const struct wh_event_subject *s,
                     const struct wh_event_note *n);

void wh_events_stats(struct wh_events *e, struct wh_mevents *st);

#endif
