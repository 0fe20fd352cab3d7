/* clock.c: CLOCK_MONOTONIC in the units the shell uses. */
#include "wh/clock.h"

#include <time.h> /* clock_gettime */

long long wh_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long wh_clock_ms(void)
{
    return (long)(wh_clock_us() / 1000);
}

void wh_clock_deadline(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

bool wh_clock_wait_flag(pthread_cond_t *cv, pthread_mutex_t *mu, const bool *flag,
                        const struct timespec *until)
{
    /* 0 is a wake-up (perhaps spurious): look again; else timed out. */
    while (!*flag && pthread_cond_timedwait(cv, mu, until) == 0) {
    }
    return *flag;
}

void wh_nap_init(struct wh_nap *n)
{
    atomic_init(&n->stop, false);
    pthread_mutex_init(&n->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n->cv, &ca);
    pthread_condattr_destroy(&ca);
}

void wh_nap_destroy(struct wh_nap *n)
{
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
}

bool wh_nap(struct wh_nap *n, long ms)
{
    struct timespec ts;
    wh_clock_deadline(&ts, ms);
    pthread_mutex_lock(&n->mu);
    while (!atomic_load(&n->stop))
        if (pthread_cond_timedwait(&n->cv, &n->mu, &ts))
            break;
    pthread_mutex_unlock(&n->mu);
    return !atomic_load(&n->stop);
}

void wh_nap_stop(struct wh_nap *n)
{
    pthread_mutex_lock(&n->mu);
    atomic_store(&n->stop, true);
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
}
