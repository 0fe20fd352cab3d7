/* events.h: Kubernetes Events on the workload that owns a warned pod
 * (docs/troubleshooting.md, "Events on the workload").
 *
 * A serving thread offers a warning (wh_events_offer: a short mutex
 * section, never a wait on the network); one worker thread posts it to the
 * API server (RBAC: create events, core API group). Rate-limited: one Event
 * per (namespace, kind, name, reason) per window, the warnings in between
 * counted into the next Event's count; a bounded queue, and an offer that
 * finds it full is dropped and counted. A failed POST is counted, not
 * retried. Nothing here can delay or fail an admission.
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
#define WH_EVENTS_POST_TIMEOUT_MS 2000L /* one POST, at most */

struct wh_events_opts {
    long window_ms;       /* 0: WH_EVENTS_WINDOW_MS */
    const char *instance; /* reportingInstance (the holder name) */
};

struct wh_events;

/* Takes kube (freed with the recorder, or here on failure). NULL with a
 * reason in errbuf. */
struct wh_events *wh_events_new(struct wh_kube *kube, const struct wh_events_opts *o, char *errbuf);
/* Stops the worker (a POST in flight ends within its timeout), drops what is
 * queued. NULL-safe. */
void wh_events_free(struct wh_events *e);

/* Offer one warning about s; never blocks on anything but a short mutex. */
void wh_events_offer(struct wh_events *e, const struct wh_event_subject *s,
                     const struct wh_event_note *n);

void wh_events_stats(struct wh_events *e, struct wh_mevents *st);

#endif
