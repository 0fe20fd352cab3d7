/* test_mhderr.c: the session marks of mhderr.c outlive no session.
 *
 * The marks are keyed by the session's address, and a freed session's
 * address may be a new session's next: the interposed gnutls_deinit must
 * give back every mark of the session it frees, and a mark given back late
 * (after the free) must not take another session's. A session left marked
 * would make its address's next session pass libmicrohttpd's own error
 * answers through unrewritten, and a table left full would stop the
 * rewriting on every session (mhderr.h). The table holds 4096 marks; the
 * filler "sessions" below are addresses in an array, which mark and unmark
 * only compare, never read; only the real sessions are freed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <gnutls/gnutls.h>

#include "mhd/mhderr.h"

#define MARKS 4096 /* MARKS_MAX of mhderr.c */

static char fillers[MARKS + 1][16];
static int filler_marks[MARKS + 1];

static gnutls_session_t filler(int i)
{
    return (gnutls_session_t)(void *)fillers[i];
}

static gnutls_session_t real_session(void)
{
    gnutls_session_t s = NULL;
    assert_int_equal(gnutls_init(&s, GNUTLS_SERVER), GNUTLS_E_SUCCESS);
    return s;
}

/* Marks fillers from..to-1, each a slot of the table. */
static void fill(int from, int to)
{
    for (int i = from; i < to; i++) {
        filler_marks[i] = wh_mhderr_mark(filler(i));
        assert_true(filler_marks[i] > 0);
    }
}

static void unfill(int from, int to)
{
    for (int i = from; i < to; i++)
        wh_mhderr_unmark(filler(i), filler_marks[i]);
}

/* A session freed while marked (a request libmicrohttpd never completed)
 * gives its slot back: with every other slot taken, a new mark finds it. */
static void test_freed_session_gives_back_its_mark(void **unused)
{
    (void)unused;
    gnutls_session_t s = real_session();
    int m = wh_mhderr_mark(s);
    assert_true(m > 0);
    fill(0, MARKS - 1); /* the table is full */
    int over = wh_mhderr_mark(filler(MARKS - 1));
    assert_int_equal(over, -1);
    wh_mhderr_unmark(filler(MARKS - 1), over);

    gnutls_deinit(s); /* without its unmark */
    int again = wh_mhderr_mark(filler(MARKS - 1));
    assert_int_equal(again, m); /* the slot s held */
    wh_mhderr_unmark(filler(MARKS - 1), again);
    unfill(0, MARKS - 1);
}

/* A mark given back after its session was freed, when another session has
 * its slot since, leaves that session's mark alone. */
static void test_late_unmark_keeps_another_sessions_mark(void **unused)
{
    (void)unused;
    gnutls_session_t s = real_session();
    int m = wh_mhderr_mark(s);
    assert_true(m > 0);
    gnutls_deinit(s);
    fill(0, MARKS);         /* one filler takes s's slot */
    wh_mhderr_unmark(s, m); /* late */
    int over = wh_mhderr_mark(filler(MARKS));
    assert_int_equal(over, -1); /* still full: no filler lost its mark */
    wh_mhderr_unmark(filler(MARKS), over);
    unfill(0, MARKS);
}

/* Several marks of one session (answers queued one after another on a
 * keep-alive connection, one left out) all go with the session. */
static void test_freed_session_gives_back_every_mark(void **unused)
{
    (void)unused;
    gnutls_session_t s = real_session();
    int a = wh_mhderr_mark(s), b = wh_mhderr_mark(s);
    assert_true(a > 0 && b > 0 && a != b);
    fill(0, MARKS - 2);
    gnutls_deinit(s);
    int x = wh_mhderr_mark(filler(MARKS - 2)), y = wh_mhderr_mark(filler(MARKS - 1));
    assert_true(x > 0 && y > 0);
    assert_true((x == a && y == b) || (x == b && y == a));
    wh_mhderr_unmark(filler(MARKS - 2), x);
    wh_mhderr_unmark(filler(MARKS - 1), y);
    unfill(0, MARKS - 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_freed_session_gives_back_its_mark),
        cmocka_unit_test(test_late_unmark_keeps_another_sessions_mark),
        cmocka_unit_test(test_freed_session_gives_back_every_mark),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
