/* clock.h: the monotonic clock of the shell (never used by the engine), and
 * a sleep that shutdown can cut short.
 *
 * struct wh_nap is embedded by its owner (no allocation): wh_nap_init()
 * before the threads that sleep on it start, wh_nap_destroy() after they
 * have been joined.
 */
#ifndef WH_CLOCK_H
#define WH_CLOCK_H

#include <pthread.h>   /* pthread_mutex_t, pthread_cond_t */
#include <stdatomic.h> /* atomic_bool */
#include <stdbool.h>   /* bool */

/* Microseconds / milliseconds since an arbitrary start, never going back. */
long long wh_clock_us(void);
long wh_clock_ms(void);

struct wh_nap {
    atomic_bool stop; /* set for good by wh_nap_stop(); may be polled (wh_kube takes it) */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* waits on CLOCK_MONOTONIC */
};

void wh_nap_init(struct wh_nap *n);
void wh_nap_destroy(struct wh_nap *n);
/* Sleep up to ms; false when stopped (at once if already). */
bool wh_nap(struct wh_nap *n, long ms);
/* Wake every sleeper; every later wh_nap() returns false at once. */
void wh_nap_stop(struct wh_nap *n);

#endif
