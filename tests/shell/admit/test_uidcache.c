/* test_uidcache.c: the Events worker's table of looked-up uids: found while
 * fresh, forgotten once expired (a recreated object's new uid is read
 * again), refusals remembered, bounded by replacing the oldest. The clock
 * is stepped by hand (uidcache.h takes it from the caller). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "uidcache.h"

static void test_found_until_expired(void **st)
{
    (void)st;
    struct wh_uidcache *c = wh_uidcache_new(8, 1000);
    assert_non_null(c);
    char uid[WH_UIDCACHE_UID_MAX] = "untouched";
    assert_false(wh_uidcache_find(c, "team-a", "lws-a", 0, uid));
    assert_string_equal(uid, "untouched");
    wh_uidcache_put(c, "team-a", "lws-a", "uid-1", 100);
    assert_true(wh_uidcache_find(c, "team-a", "lws-a", 100, uid));
    assert_string_equal(uid, "uid-1");
    assert_true(wh_uidcache_find(c, "team-a", "lws-a", 1099, uid));
    /* Same name in another namespace, another name in the same: not it. */
    assert_false(wh_uidcache_find(c, "team-b", "lws-a", 200, uid));
    assert_false(wh_uidcache_find(c, "team-a", "lws-b", 200, uid));
    /* ttl after it was stored: gone, so a recreated LWS is read again. */
    assert_false(wh_uidcache_find(c, "team-a", "lws-a", 1100, uid));
    assert_int_equal(wh_uidcache_len(c), 0);
    wh_uidcache_put(c, "team-a", "lws-a", "uid-2", 1200);
    assert_true(wh_uidcache_find(c, "team-a", "lws-a", 1300, uid));
    assert_string_equal(uid, "uid-2");
    /* A clock behind the entry (never, it is monotonic) does not keep it. */
    assert_false(wh_uidcache_find(c, "team-a", "lws-a", 1199, uid));
    wh_uidcache_free(c);
}

static void test_refusal_remembered_and_replaced(void **st)
{
    (void)st;
    struct wh_uidcache *c = wh_uidcache_new(8, 1000);
    char uid[WH_UIDCACHE_UID_MAX] = "x";
    wh_uidcache_put(c, "ns", "denied", "", 0);
    assert_true(wh_uidcache_find(c, "ns", "denied", 999, uid));
    assert_string_equal(uid, "");
    /* A later answer replaces the entry (one entry per object). */
    wh_uidcache_put(c, "ns", "denied", "uid-9", 500);
    assert_int_equal(wh_uidcache_len(c), 1);
    assert_true(wh_uidcache_find(c, "ns", "denied", 1400, uid));
    assert_string_equal(uid, "uid-9");
    wh_uidcache_free(c);
}

static void test_bounded_oldest_replaced(void **st)
{
    (void)st;
    struct wh_uidcache *c = wh_uidcache_new(4, 100000);
    char name[32], uid[WH_UIDCACHE_UID_MAX], want[32];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "lws-%d", i);
        snprintf(want, sizeof(want), "uid-%d", i);
        wh_uidcache_put(c, "ns", name, want, i);
        assert_true(wh_uidcache_len(c) <= 4);
    }
    assert_int_equal(wh_uidcache_len(c), 4);
    /* The four newest are kept, the older six were replaced. */
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "lws-%d", i);
        snprintf(want, sizeof(want), "uid-%d", i);
        bool found = wh_uidcache_find(c, "ns", name, 10, uid);
        assert_int_equal(found, i >= 6);
        if (found)
            assert_string_equal(uid, want);
    }
    wh_uidcache_free(c);
}

static void test_too_long_not_stored(void **st)
{
    (void)st;
    struct wh_uidcache *c = wh_uidcache_new(4, 1000);
    char longer[WH_UIDCACHE_NAME_MAX + 1], uid[WH_UIDCACHE_UID_MAX];
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    wh_uidcache_put(c, "ns", longer, "uid", 0);
    wh_uidcache_put(c, longer + 100, "n", "uid", 0); /* a namespace of 154 bytes */
    char long_uid[WH_UIDCACHE_UID_MAX + 1];
    memset(long_uid, 'u', sizeof(long_uid) - 1);
    long_uid[sizeof(long_uid) - 1] = '\0';
    wh_uidcache_put(c, "ns", "n", long_uid, 0);
    assert_int_equal(wh_uidcache_len(c), 0);
    assert_false(wh_uidcache_find(c, "ns", "n", 0, uid));
    assert_null(wh_uidcache_new(0, 1000));
    assert_null(wh_uidcache_new(4, 0));
    wh_uidcache_free(c);
    wh_uidcache_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found_until_expired),
        cmocka_unit_test(test_refusal_remembered_and_replaced),
        cmocka_unit_test(test_bounded_oldest_replaced),
        cmocka_unit_test(test_too_long_not_stored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
