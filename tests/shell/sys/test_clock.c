/* test_clock.c: the shell's monotonic deadlines and the flag wait that the
 * watcher threads (slice check, certificate poll) sleep in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "testutil.h"
#include "wh/clock.h"

static long long ns_of(const struct timespec *ts)
{
    return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ns_of(&ts);
}

/* Every ms from 0 to 3 s in steps that cross a second boundary of the
 * nanoseconds at some point whatever the time now: the deadline is
 * normalised (0 <= tv_nsec < 1e9) and lies ms after the call. */
static void test_deadline(void **st)
{
    (void)st;
    for (long ms = 0; ms <= 3000; ms += 7) {
        long long before = now_ns();
        struct timespec ts;
        wh_clock_deadline(&ts, ms);
        long long after = now_ns();
        assert_true(ts.tv_nsec >= 0);
        assert_true(ts.tv_nsec < 1000000000L);
        long long at = ns_of(&ts);
        if (at < before + ms * 1000000LL || at > after + ms * 1000000LL)
            fail_msg("deadline for %ld ms is %lld ns after the call (expected %lld)", ms,
                     at - before, ms * 1000000LL);
    }
}

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool flag;
};

static void waiter_init(struct waiter *w)
{
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    w->flag = false;
}

static void waiter_destroy(struct waiter *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* A flag already set returns at once, however far the deadline. */
static void test_wait_flag_set(void **st)
{
    (void)st;
    struct waiter w;
    waiter_init(&w);
    w.flag = true;
    struct timespec until;
    wh_clock_deadline(&until, 600000);
    pthread_mutex_lock(&w.mu);
    assert_true(wh_clock_wait_flag(&w.cv, &w.mu, &w.flag, &until));
    pthread_mutex_unlock(&w.mu);
    waiter_destroy(&w);
}

/* Nobody sets the flag: false, and not before the deadline. */
static void test_wait_flag_times_out(void **st)
{
    (void)st;
    struct waiter w;
    waiter_init(&w);
    struct timespec until;
    wh_clock_deadline(&until, 50);
    pthread_mutex_lock(&w.mu);
    assert_false(wh_clock_wait_flag(&w.cv, &w.mu, &w.flag, &until));
    pthread_mutex_unlock(&w.mu);
    assert_true(now_ns() >= ns_of(&until));
    waiter_destroy(&w);
}

/* A wake-up without the flag (as a spurious one) waits again; the flag set
 * later ends the wait with true long before the deadline. */
static void *wake_twice(void *arg)
{
    struct waiter *w = arg;
    pthread_mutex_lock(&w->mu); /* the waiter is in pthread_cond_timedwait */
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    struct timespec pause = {0, 20 * 1000000L};
    nanosleep(&pause, NULL);
    pthread_mutex_lock(&w->mu);
    w->flag = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void test_wait_flag_woken(void **st)
{
    (void)st;
    struct waiter w;
    waiter_init(&w);
    struct timespec until;
    wh_clock_deadline(&until, 600000);
    pthread_mutex_lock(&w.mu);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, wake_twice, &w), 0);
    assert_true(wh_clock_wait_flag(&w.cv, &w.mu, &w.flag, &until));
    pthread_mutex_unlock(&w.mu);
    pthread_join(th, NULL);
    assert_true(now_ns() < ns_of(&until));
    waiter_destroy(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_wait_flag_set),
        cmocka_unit_test(test_wait_flag_times_out),
        cmocka_unit_test(test_wait_flag_woken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
