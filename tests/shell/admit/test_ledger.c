/* test_ledger.c: reservations, marks, confirmation, expiry and per-group
 * locking of the legacy-index ledger. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "ledger.h"

static atomic_long fake_now;
static long fake_clock(void)
{
    return atomic_load(&fake_now);
}

struct collect {
    size_t n;
    char labels[64][64];
    long ids[64];
};

static int collect_fn(void *arg, const struct wh_pod_rec *pod)
{
    struct collect *c = arg;
    assert_true(c->n < 64);
    strncpy(c->labels[c->n], pod->replica_label, 63);
    c->ids[c->n] = pod->worker_id;
    c->n++;
    return 0;
}

static void test_reserve_and_visit(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN];
    struct wh_ledger *lg = wh_ledger_new(NULL);
    assert_non_null(lg);
    struct wh_ledger_group *g;
    assert_int_equal(wh_ledger_lock(lg, "ns", "c", "workers", &g, errbuf), WH_OK);
    assert_int_equal(wh_ledger_reserve(g, 0, 3, 6, 2, errbuf), WH_OK);
    assert_int_equal(wh_ledger_reserve(g, 1, 0, 0, 2, errbuf), WH_OK);
    assert_int_equal(wh_ledger_reserve(g, 1, 0, 0, 2, errbuf), WH_OK); /* refresh, not a second */
    struct collect c = {0};
    assert_int_equal(wh_ledger_each(g, collect_fn, &c), 0);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.labels[0], "workers-0");
    assert_int_equal(c.ids[0], 6); /* host 3 x 2 TPU containers */
    assert_string_equal(c.labels[1], "workers-1");
    assert_int_equal(c.ids[1], 0);

    /* A live cached pod with the same ids hides the reservation. */
    assert_true(wh_ledger_mark(g, "workers-0", 6));
    assert_false(wh_ledger_mark(g, "workers-0", 7));
    assert_false(wh_ledger_mark(g, "other-0", 6));
    assert_false(wh_ledger_mark(g, "workers-0x", 6));
    memset(&c, 0, sizeof(c));
    wh_ledger_each(g, collect_fn, &c);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.labels[0], "workers-1");
    wh_ledger_clear_marks(g);
    memset(&c, 0, sizeof(c));
    wh_ledger_each(g, collect_fn, &c);
    assert_int_equal(c.n, 2);
    wh_ledger_unlock(g);
    assert_int_equal(wh_ledger_pending(lg), 2);

    /* Confirmation by the watch drops the reservation. */
    assert_false(wh_ledger_confirm(lg, "ns", "c", "workers", "workers-0", 3));
    assert_false(wh_ledger_confirm(lg, "other", "c", "workers", "workers-0", 6));
    assert_true(wh_ledger_confirm(lg, "ns", "c", "workers", "workers-0", 6));
    assert_int_equal(wh_ledger_pending(lg), 1);
    assert_true(wh_ledger_confirm(lg, "ns", "c", "workers", "workers-1", 0));
    assert_int_equal(wh_ledger_pending(lg), 0);
    /* The idle, empty entry is gone. */
    assert_int_equal(wh_ledger_groups(lg), 0);
    wh_ledger_free(lg);
}

static void test_expiry_waits_for_a_healthy_watch(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN];
    atomic_store(&fake_now, 1000);
    struct wh_ledger_opts o = {.ttl_ms = 100, .now_ms = fake_clock};
    struct wh_ledger *lg = wh_ledger_new(&o);
    struct wh_ledger_group *g;
    assert_int_equal(wh_ledger_lock(lg, "ns", "c", "g", &g, errbuf), WH_OK);
    assert_int_equal(wh_ledger_reserve(g, 0, 0, 0, 1, errbuf), WH_OK);
    wh_ledger_unlock(g);

    /* Watch down: nothing expires however long it takes. */
    atomic_store(&fake_now, 100000);
    wh_ledger_sweep(lg);
    assert_int_equal(wh_ledger_pending(lg), 1);

    /* Watch back (resynced at 100000): the pod had ttl to show up since. */
    wh_ledger_set_fresh_since(lg, 100000);
    atomic_store(&fake_now, 100099);
    wh_ledger_sweep(lg);
    assert_int_equal(wh_ledger_pending(lg), 1);
    atomic_store(&fake_now, 100100);
    assert_int_equal(wh_ledger_lock(lg, "ns", "c", "g", &g, errbuf), WH_OK);
    struct collect c = {0};
    wh_ledger_each(g, collect_fn, &c);
    assert_int_equal(c.n, 0); /* expired on lock */
    wh_ledger_unlock(g);
    assert_int_equal(wh_ledger_pending(lg), 0);
    assert_int_equal(wh_ledger_groups(lg), 0);

    /* Reserved while healthy: expires ttl after the reservation. */
    assert_int_equal(wh_ledger_lock(lg, "ns", "c", "g", &g, errbuf), WH_OK);
    assert_int_equal(wh_ledger_reserve(g, 0, 1, 1, 1, errbuf), WH_OK);
    wh_ledger_unlock(g);
    atomic_store(&fake_now, 100150);
    wh_ledger_sweep(lg);
    assert_int_equal(wh_ledger_pending(lg), 1);
    atomic_store(&fake_now, 100200);
    wh_ledger_sweep(lg);
    assert_int_equal(wh_ledger_pending(lg), 0);
    assert_int_equal(wh_ledger_groups(lg), 0);
    wh_ledger_free(lg);
}

/* With sweep_ms the ledger's own thread drops what expired, with no lock
 * of the group and no wh_ledger_sweep() call; a ledger without it keeps
 * the expired reservation until someone sweeps. */
static void test_sweeper_thread(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN];
    atomic_store(&fake_now, 1000);
    struct wh_ledger_opts o = {.ttl_ms = 100, .now_ms = fake_clock, .sweep_ms = 5};
    struct wh_ledger *lg = wh_ledger_new(&o),
                     *idle = wh_ledger_new(
                         &(struct wh_ledger_opts){.ttl_ms = 100, .now_ms = fake_clock});
    assert_non_null(lg);
    assert_non_null(idle);
    struct wh_ledger *both[] = {lg, idle};
    for (size_t i = 0; i < 2; i++) {
        struct wh_ledger_group *g;
        wh_ledger_set_fresh_since(both[i], 1000);
        assert_int_equal(wh_ledger_lock(both[i], "ns", "c", "g", &g, errbuf), WH_OK);
        assert_int_equal(wh_ledger_reserve(g, 0, 0, 0, 1, errbuf), WH_OK);
        wh_ledger_unlock(g);
    }
    atomic_store(&fake_now, 1200);
    for (int i = 0; i < 2000 && wh_ledger_groups(lg); i++)
        nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
    assert_int_equal(wh_ledger_pending(lg), 0);
    assert_int_equal(wh_ledger_groups(lg), 0);
    assert_int_equal(wh_ledger_pending(idle), 1);
    wh_ledger_free(lg); /* stops the thread */
    wh_ledger_free(idle);
}

/* Fed by a watch, reservations expire by what the watch has delivered, not
 * by the clock: a silent stream may be holding the reserved pod back. */
static void test_expiry_follows_what_the_watch_heard(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN];
    atomic_store(&fake_now, 1000);
    struct wh_ledger_opts o = {.ttl_ms = 100, .now_ms = fake_clock};
    struct wh_ledger *lg = wh_ledger_new(&o);
    wh_ledger_set_fresh_since(lg, 500);
    wh_ledger_set_heard(lg, 900); /* the LIST */
    struct wh_ledger_group *g;
    assert_int_equal(wh_ledger_lock(lg, "ns", "c", "g", &g, errbuf), WH_OK);
    assert_int_equal(wh_ledger_reserve(g, 0, 0, 0, 1, errbuf), WH_OK);
    wh_ledger_unlock(g);
    atomic_store(&fake_now, 100000); /* long silence */
    wh_ledger_sweep(lg);
    assert_int_equal(wh_ledger_pending(lg), 1);
    wh_ledger_set_heard(lg, 1099); /* not yet a TTL after the reservation */
    wh_ledger_sweep(lg);
    assert_int_equal(wh_ledger_pending(lg), 1);
    wh_ledger_set_heard(lg, 1100);
    wh_ledger_sweep(lg);
    assert_int_equal(wh_ledger_pending(lg), 0);
    wh_ledger_free(lg);
}

static void test_standalone_never_expires_and_drop_cluster(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN];
    atomic_store(&fake_now, 0);
    struct wh_ledger_opts o = {.ttl_ms = -1, .now_ms = fake_clock, .max_per_group = 3};
    struct wh_ledger *lg = wh_ledger_new(&o);
    wh_ledger_set_fresh_since(lg, 0);
    struct wh_ledger_group *g;
    assert_int_equal(wh_ledger_lock(lg, "ns", "c", "a", &g, errbuf), WH_OK);
    for (long h = 0; h < 3; h++)
        assert_int_equal(wh_ledger_reserve(g, 0, h, h, 1, errbuf), WH_OK);
    assert_int_equal(wh_ledger_reserve(g, 0, 3, 3, 1, errbuf), WH_ERR_TOOBIG);
    assert_non_null(strstr(errbuf, "ns/c/a"));
    wh_ledger_unlock(g);
    assert_int_equal(wh_ledger_lock(lg, "ns", "c", "b", &g, errbuf), WH_OK);
    assert_int_equal(wh_ledger_reserve(g, 0, 0, 0, 1, errbuf), WH_OK);
    wh_ledger_unlock(g);
    assert_int_equal(wh_ledger_lock(lg, "ns", "other", "a", &g, errbuf), WH_OK);
    assert_int_equal(wh_ledger_reserve(g, 0, 0, 0, 1, errbuf), WH_OK);
    wh_ledger_unlock(g);
    atomic_store(&fake_now, 1L << 40);
    wh_ledger_sweep(lg);
    assert_int_equal(wh_ledger_pending(lg), 5);
    assert_int_equal(wh_ledger_groups(lg), 3);
    assert_int_equal(wh_ledger_drop_cluster(lg, "ns", "c"), WH_OK);
    assert_int_equal(wh_ledger_pending(lg), 1);
    assert_int_equal(wh_ledger_groups(lg), 1);
    wh_ledger_free(lg);
}

/* Many threads each take the lowest free host of a 16-host slice under the
 * group lock: every slice ends with 16 distinct hosts. */
#define HOSTS 16
#define THREADS 64

struct race {
    struct wh_ledger *lg;
    pthread_barrier_t *start;
    const char *group;
    atomic_int errors;
};

struct used {
    long replica_hosts[THREADS / HOSTS + 1][HOSTS];
};

static int used_fn(void *arg, const struct wh_pod_rec *pod)
{
    struct used *u = arg;
    long r = atol(strrchr(pod->replica_label, '-') + 1);
    long h = pod->worker_id / pod->n_tpu_containers;
    if (r < 0 || r > THREADS / HOSTS || h < 0 || h >= HOSTS || u->replica_hosts[r][h]++)
        return 1; /* out of range or duplicate: make the test fail */
    return 0;
}

static void *racer(void *arg)
{
    struct race *rc = arg;
    char errbuf[WH_ERRBUF_LEN];
    pthread_barrier_wait(rc->start);
    struct wh_ledger_group *g;
    if (wh_ledger_lock(rc->lg, "ns", "c", rc->group, &g, errbuf)) {
        atomic_fetch_add(&rc->errors, 1);
        return NULL;
    }
    struct used u;
    memset(&u, 0, sizeof(u));
    wh_ledger_clear_marks(g);
    if (wh_ledger_each(g, used_fn, &u))
        atomic_fetch_add(&rc->errors, 1);
    long pick_r = -1, pick_h = -1;
    for (long r = 0; r <= THREADS / HOSTS && pick_r < 0; r++)
        for (long h = 0; h < HOSTS && pick_r < 0; h++)
            if (!u.replica_hosts[r][h]) {
                pick_r = r;
                pick_h = h;
            }
    if (pick_r < 0 || wh_ledger_reserve(g, pick_r, pick_h, pick_h * 2, 2, errbuf))
        atomic_fetch_add(&rc->errors, 1);
    wh_ledger_unlock(g);
    return NULL;
}

static void test_concurrent_reservations_unique(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN];
    for (int round = 0; round < 50; round++) {
        struct wh_ledger_opts o = {.ttl_ms = -1};
        struct wh_ledger *lg = wh_ledger_new(&o);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, THREADS);
        struct race rcs[2] = {{.lg = lg, .start = &start, .group = "g1"},
                              {.lg = lg, .start = &start, .group = "g2"}};
        pthread_t th[THREADS];
        for (int i = 0; i < THREADS; i++)
            assert_int_equal(pthread_create(&th[i], NULL, racer, &rcs[i % 2]), 0);
        for (int i = 0; i < THREADS; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&start);
        assert_int_equal(atomic_load(&rcs[0].errors) + atomic_load(&rcs[1].errors), 0);
        assert_int_equal(wh_ledger_pending(lg), THREADS);
        /* Each group: 32 reservations = 2 full replicas of 16 distinct hosts. */
        for (int k = 0; k < 2; k++) {
            struct wh_ledger_group *g;
            assert_int_equal(wh_ledger_lock(lg, "ns", "c", rcs[k].group, &g, errbuf), WH_OK);
            struct used u;
            memset(&u, 0, sizeof(u));
            assert_int_equal(wh_ledger_each(g, used_fn, &u), 0);
            for (int r = 0; r < 2; r++)
                for (int h = 0; h < HOSTS; h++)
                    assert_int_equal(u.replica_hosts[r][h], 1);
            wh_ledger_unlock(g);
        }
        wh_ledger_free(lg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_and_visit),
        cmocka_unit_test(test_expiry_waits_for_a_healthy_watch),
        cmocka_unit_test(test_expiry_follows_what_the_watch_heard),
        cmocka_unit_test(test_sweeper_thread),
        cmocka_unit_test(test_standalone_never_expires_and_drop_cluster),
        cmocka_unit_test(test_concurrent_reservations_unique),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
