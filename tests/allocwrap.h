/* allocwrap.h: counting and failing heap allocations, for the OOM sweep and
 * the benchmark.
 *
 * A program that uses this links with
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=strdup,--wrap=strndup
 * so that every allocation made by code linked statically into it (the
 * engine, the test) goes through the counters below, and calls
 * wh_allocwrap_install() before creating any cJSON value so that cJSON (a
 * shared library, not reached by --wrap) allocates through them too. Works
 * with static binaries and without LD_PRELOAD. Not thread-safe: the counters
 * are plain globals, which is fine for single-threaded tests and benchmarks.
 */
#ifndef WH_ALLOCWRAP_H
#define WH_ALLOCWRAP_H

#include <stddef.h> /* size_t */

struct wh_alloc_stats {
    unsigned long allocs;   /* successful malloc/calloc/strdup/realloc(NULL, n) */
    unsigned long reallocs; /* successful realloc of an existing block */
    unsigned long frees;    /* free of a non-NULL pointer */
    unsigned long attempts; /* every allocation attempt, failed ones included */
    long live;              /* allocs - frees: blocks currently outstanding */
};

/* Route cJSON's allocations through the counting wrappers. */
void wh_allocwrap_install(void);
/* Reset the counters (live included; use before a measured run). */
void wh_allocwrap_reset(void);
/* Snapshot of the counters. */
struct wh_alloc_stats wh_allocwrap_stats(void);
/* Make allocation attempt number n (1-based, counted from now) fail; with
 * sticky, every attempt from n on fails. n == 0 disables failures. */
void wh_allocwrap_fail_at(unsigned long n, int sticky);
/* True when some attempt failed since the last wh_allocwrap_fail_at(). */
int wh_allocwrap_failed(void);

#endif
