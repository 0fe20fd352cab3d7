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
#include <time.h>      /* struct timespec */

/* Microseconds / milliseconds since an arbitrary start, never going back. */
long long wh_clock_us(void);
long wh_clock_ms(void);

/* *ts = now + ms on CLOCK_MONOTONIC: the absolute deadline that
 * pthread_cond_timedwait() takes for a condition variable set to that clock
 * (pthread_condattr_setclock). ms >= 0. */
void wh_clock_deadline(struct timespec *ts, long ms);

/* With mu held: wait on cv (a CLOCK_MONOTONIC one) until *flag is true or
 * the deadline until passes; returns *flag. Spurious wake-ups wait again.
 * *flag is read under mu only. */
bool wh_clock_wait_flag(pthread_cond_t *cv, pthread_mutex_t *mu, const bool *flag,
                        const struct timespec *until);

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
