/* test_nswin.c: Events per namespace and window (nswin.h): the limit per
 * namespace, a new window once one is over, and the table's bound: more
 * namespaces than slots share one more window instead of taking a running
 * one's slot, so taking turns never starts a count afresh. The clock is
 * stepped by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "nswin.h"
#include "testutil.h"

#define WINDOW 60000L
#define T0 1000000L

/* Offers of namespace key at now until one is refused: how many passed
 * (at most WH_EVENTS_PER_NAMESPACE + 1 tries). */
static long fill(struct wh_nswin *w, uint64_t key, long now)
{
    long n = 0;
    while (n <= WH_EVENTS_PER_NAMESPACE && wh_nswin_admit(w, key, now, WINDOW))
        n++;
    return n;
}

static void test_limit_and_window(void **st)
{
    (void)st;
    static struct wh_nswin w;
    memset(&w, 0, sizeof(w));
    assert_int_equal(fill(&w, 7, T0), WH_EVENTS_PER_NAMESPACE);
    assert_false(wh_nswin_admit(&w, 7, T0 + WINDOW - 1, WINDOW));
    /* Another namespace has its own count. */
    assert_int_equal(fill(&w, 8, T0 + 10), WH_EVENTS_PER_NAMESPACE);
    /* The window over: afresh. */
    assert_int_equal(fill(&w, 7, T0 + WINDOW), WH_EVENTS_PER_NAMESPACE);
}

/* Every slot's window running: namespace after namespace shares one more
 * window, and no running count is lost (the table used to hand the slot
 * whose window began first to the next namespace, whose count then began
 * afresh each time the namespaces took turns). */
static void test_full_table_keeps_counts(void **st)
{
    (void)st;
    static struct wh_nswin w;
    memset(&w, 0, sizeof(w));
    for (uint64_t k = 1; k <= WH_EVENTS_NAMESPACES; k++)
        assert_int_equal(fill(&w, k, T0 + (long)k), WH_EVENTS_PER_NAMESPACE);
    long now = T0 + 1000;
    assert_int_equal(fill(&w, 1000, now), WH_EVENTS_PER_NAMESPACE); /* the overflow */
    assert_int_equal(fill(&w, 1001, now), 0);                       /* shares it */
    for (uint64_t k = 1; k <= WH_EVENTS_NAMESPACES; k++)
        assert_false(wh_nswin_admit(&w, k, now, WINDOW));
}

/* Taking turns over more namespaces than slots, all within one window:
 * at most (slots + 1) x the limit pass in all. */
static void test_bound_over_many_namespaces(void **st)
{
    (void)st;
    static struct wh_nswin w;
    memset(&w, 0, sizeof(w));
    long passed = 0;
    for (int round = 0; round < 5; round++)
        for (uint64_t k = 1; k <= 3 * WH_EVENTS_NAMESPACES; k++)
            passed += fill(&w, k, T0 + round * 100 + (long)k % 50);
    assert_int_equal(passed, (WH_EVENTS_NAMESPACES + 1) * WH_EVENTS_PER_NAMESPACE);
}

/* Once windows are over, a new namespace takes the slot whose window began
 * first among them; a running one keeps its own. */
static void test_over_slot_reused(void **st)
{
    (void)st;
    static struct wh_nswin w;
    memset(&w, 0, sizeof(w));
    for (uint64_t k = 1; k <= WH_EVENTS_NAMESPACES; k++)
        assert_true(wh_nswin_admit(&w, k, T0 + (long)k, WINDOW));
    /* Namespace 2 is at its limit in a window that still runs at the end. */
    assert_int_equal(fill(&w, 2, T0 + 2), WH_EVENTS_PER_NAMESPACE - 1);
    /* Windows of 1..WH_EVENTS_NAMESPACES began at T0 + k: at T0 + WINDOW + 1
     * only 1's is over. */
    long now = T0 + WINDOW + 1;
    assert_int_equal(fill(&w, 5000, now), WH_EVENTS_PER_NAMESPACE); /* 1's slot */
    assert_int_equal(fill(&w, 5001, now), WH_EVENTS_PER_NAMESPACE); /* the overflow */
    /* 1 lost its slot; its window was over, so nothing is lost. The
     * overflow is spent: refused. */
    assert_false(wh_nswin_admit(&w, 1, now, WINDOW));
    /* Namespace 2's window ends at T0 + 2 + WINDOW: its count holds until then. */
    assert_false(wh_nswin_admit(&w, 2, T0 + WINDOW + 1, WINDOW));
    assert_true(wh_nswin_admit(&w, 2, T0 + WINDOW + 2, WINDOW));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_and_window),
        cmocka_unit_test(test_full_table_keeps_counts),
        cmocka_unit_test(test_bound_over_many_namespaces),
        cmocka_unit_test(test_over_slot_reused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
