/* nswin.h: how many Events each namespace has had in its current window,
 * for events.c's limit of WH_EVENTS_PER_NAMESPACE a window (events.h).
 *
 * A table of WH_EVENTS_NAMESPACES namespaces, each keyed by a hash of its
 * name (never 0), its window started by its first Event. A namespace not
 * in the table takes a free slot, or else the one whose window began first
 * among those whose window is over; while every slot's window still runs,
 * the namespaces that find none share one more window (the overflow) with
 * the same limit. A running count is never dropped: forgetting one (the
 * table used to give a new namespace the slot whose window began first,
 * over or not) let WH_EVENTS_NAMESPACES + 1 namespaces that take turns
 * each start afresh, again and again. So at most WH_EVENTS_NAMESPACES + 1
 * windows' worth of Events are queued per window length, however many
 * namespaces offer them.
 *
 * The clock is the caller's (now_ms: milliseconds of a monotonic clock);
 * nothing here reads one, so the tests step it. No allocation; not
 * thread-safe (events.c calls it under its mutex).
 */
#ifndef WH_NSWIN_H
#define WH_NSWIN_H

#include <stdbool.h> /* bool */
#include <stdint.h>  /* uint64_t */

#include "events.h" /* WH_EVENTS_NAMESPACES */

struct wh_nswin_slot {
    uint64_t key;  /* the namespace's hash; 0 free */
    long start_ms; /* when its window began */
    long n;        /* Events queued in it */
};

/* Zeroed to start (every slot free). */
struct wh_nswin {
    struct wh_nswin_slot slots[WH_EVENTS_NAMESPACES];
    struct wh_nswin_slot overflow; /* its key unused */
};

/* May one more Event of namespace key (not 0) be queued at now_ms, with
 * windows of window_ms? Counts it when so. */
bool wh_nswin_admit(struct wh_nswin *w, uint64_t key, long now_ms, long window_ms);

#endif /* WH_NSWIN_H */
