/* test_arena.c: struct wh_arena (alignment, growth in place, budget, reset)
 * and the request memory of the server (reqmem: the engine's allocations go
 * to the bound arena; a review over its budget fails whole). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "wh/arena.h"
#include "wh/buf.h"
#include "wh/engine.h"
#include "wh/json.h"
#include "wh/mem.h"
#include "wh/reqmem.h"
#include "wh/state.h"

static void test_alloc_aligned_and_owned(void **unused)
{
    (void)unused;
    struct wh_arena_opts o = {.first_chunk = 1024};
    struct wh_arena *a = wh_arena_new(&o);
    assert_non_null(a);
    char *p = wh_arena_alloc(a, 3), *q = wh_arena_alloc(a, 100);
    assert_non_null(p);
    assert_non_null(q);
    assert_int_equal((uintptr_t)p % 16, 0);
    assert_int_equal((uintptr_t)q % 16, 0);
    assert_true(q >= p + 3);
    assert_true(wh_arena_owns(a, p));
    assert_true(wh_arena_owns(a, q + 99));
    int outside;
    assert_false(wh_arena_owns(a, &outside));
    /* larger than a chunk: a chunk of its own */
    char *big = wh_arena_alloc(a, 10000);
    assert_non_null(big);
    memset(big, 'x', 10000);
    assert_true(wh_arena_owns(a, big + 9999));
    assert_int_equal(wh_arena_exhausted(a), WH_ARENA_OK);
    wh_arena_free(a);
    wh_arena_free(NULL);
}

static void test_realloc_in_place_then_copy(void **unused)
{
    (void)unused;
    struct wh_arena_opts o = {.first_chunk = 4096};
    struct wh_arena *a = wh_arena_new(&o);
    char *p = wh_arena_realloc(a, NULL, 16);
    memcpy(p, "0123456789abcde", 16);
    char *g = wh_arena_realloc(a, p, 1000); /* newest block: grows in place */
    assert_ptr_equal(g, p);
    assert_string_equal(g, "0123456789abcde");
    char *other = wh_arena_alloc(a, 8);
    assert_non_null(other);
    char *moved = wh_arena_realloc(a, g, 2000); /* no longer newest: copied */
    assert_ptr_not_equal(moved, g);
    assert_string_equal(moved, "0123456789abcde");
    assert_ptr_equal(wh_arena_realloc(a, moved, 10), moved); /* shrinking keeps it */
    wh_arena_free(a);
}

static void test_budget_then_reset(void **unused)
{
    (void)unused;
    struct wh_arena_opts o = {.first_chunk = 4096, .budget = 64 * 1024};
    struct wh_arena *a = wh_arena_new(&o);
    size_t got = 0;
    while (wh_arena_alloc(a, 1000))
        got += 1000;
    assert_true(got > 32 * 1024);
    assert_true(wh_arena_held(a) <= 64 * 1024);
    assert_int_equal(wh_arena_exhausted(a), WH_ARENA_BUDGET);
    /* exhausted for good: even a small block fails until the reset */
    assert_null(wh_arena_alloc(a, 1));
    assert_null(wh_arena_realloc(a, NULL, 1));
    wh_arena_reset(a);
    assert_int_equal(wh_arena_exhausted(a), WH_ARENA_OK);
    assert_int_equal(wh_arena_held(a), 4096); /* the first chunk stays */
    assert_non_null(wh_arena_alloc(a, 1000));
    assert_null(wh_arena_alloc(a, (size_t)-1)); /* overflow is a budget failure */
    assert_int_equal(wh_arena_exhausted(a), WH_ARENA_BUDGET);
    wh_arena_free(a);
}

/* Bytes held outside the arena on its behalf (a request's body) count
 * against its budget until the reset. */
static void test_hold_outside(void **unused)
{
    (void)unused;
    struct wh_arena_opts o = {.first_chunk = 4096, .budget = 64 * 1024};
    struct wh_arena *a = wh_arena_new(&o);
    assert_true(wh_arena_hold(a, 40 * 1024));
    assert_null(wh_arena_alloc(a, 30 * 1024)); /* 4 + 40 + 30 KiB > 64 KiB */
    assert_int_equal(wh_arena_exhausted(a), WH_ARENA_BUDGET);
    wh_arena_reset(a);
    assert_non_null(wh_arena_alloc(a, 30 * 1024)); /* the hold went with the reset */
    assert_false(wh_arena_hold(a, 40 * 1024));
    assert_int_equal(wh_arena_exhausted(a), WH_ARENA_BUDGET);
    wh_arena_reset(a);
    assert_false(wh_arena_hold(a, (size_t)-1));
    wh_arena_free(a);
}

/* A body grows in steps as it arrives, each charged to the total and to
 * the client's share before it is allocated; a refused step appends
 * nothing; freeing gives every byte back. */
static void test_body_steps(void **unused)
{
    (void)unused;
    struct wh_reqmem_opts ro = {.request_budget = 1 << 20, .total_budget = 1 << 20};
    struct wh_reqmem *rm = wh_reqmem_new(&ro);
    struct wh_reqmem_share sh = {.cap = 600 * 1024};
    struct wh_reqmem_body b = {.share = &sh};
    static char chunk[1000];
    memset(chunk, 'x', sizeof(chunk));
    assert_int_equal(wh_reqmem_body_add(rm, &b, chunk, 1, 3u << 20), WH_REQMEM_TAKEN);
    assert_int_equal(b.cap, WH_REQMEM_BODY_STEP); /* one byte holds one step, not 3 MiB */
    /* ... and is charged for what it holds (the byte and the NUL), not the step */
    assert_int_equal(wh_reqmem_held(rm), 2);
    assert_int_equal(atomic_load(&sh.held), 2);
    size_t len = 1;
    enum wh_reqmem_refusal r;
    while ((r = wh_reqmem_body_add(rm, &b, chunk, sizeof(chunk), 3u << 20)) == WH_REQMEM_TAKEN) {
        len += sizeof(chunk);
        assert_true(b.cap <= 2 * (len + 1) + WH_REQMEM_BODY_STEP); /* steps, never ahead */
    }
    assert_int_equal(r, WH_REQMEM_OVER_SHARE);
    assert_int_equal(b.len, len);
    assert_int_equal(atomic_load(&sh.held), len + 1);
    assert_true(atomic_load(&sh.held) <= sh.cap && sh.cap - atomic_load(&sh.held) < sizeof(chunk));
    /* Shed from another thread: its charge is given back at once, and it
     * takes no more bytes; freeing it later gives nothing back twice. */
    assert_int_equal(wh_reqmem_body_shed(rm, &b), len + 1);
    assert_int_equal(wh_reqmem_held(rm), 0);
    assert_int_equal(atomic_load(&sh.held), 0);
    assert_int_equal(wh_reqmem_body_add(rm, &b, chunk, 1, 3u << 20), WH_REQMEM_SHED);
    assert_int_equal(b.data[len], '\0');
    wh_reqmem_body_free(rm, &b);
    assert_int_equal(wh_reqmem_held(rm), 0);
    assert_int_equal(atomic_load(&sh.held), 0);
    /* the last step stops at the limit + 1 (its Content-Length) */
    atomic_store(&b.shed, false);
    assert_int_equal(wh_reqmem_body_add(rm, &b, chunk, 1000, 1000), WH_REQMEM_TAKEN);
    assert_int_equal(b.cap, 1001);
    wh_reqmem_body_free(rm, &b);
    /* the server's total refuses too */
    struct wh_reqmem_body big = {0};
    static char mb[300 * 1024];
    assert_int_equal(wh_reqmem_body_add(rm, &big, mb, sizeof(mb), 3u << 20), WH_REQMEM_TAKEN);
    assert_int_equal(wh_reqmem_body_add(rm, &big, mb, sizeof(mb), 3u << 20), WH_REQMEM_TAKEN);
    assert_int_equal(wh_reqmem_body_add(rm, &big, mb, sizeof(mb), 3u << 20), WH_REQMEM_TAKEN);
    assert_int_equal(wh_reqmem_body_add(rm, &big, mb, sizeof(mb), 3u << 20), WH_REQMEM_OVER_TOTAL);
    assert_int_equal(big.len, 3 * sizeof(mb));
    assert_int_equal(wh_reqmem_room(rm), (1u << 20) - 3 * sizeof(mb) - 1);
    wh_reqmem_body_free(rm, &big);
    assert_int_equal(wh_reqmem_held(rm), 0);
    wh_reqmem_free(rm);
}

static void *refuse(void *ctx, size_t n)
{
    size_t *left = ctx;
    if (n > *left)
        return NULL;
    *left -= n;
    return malloc(n);
}

static void give_back(void *ctx, void *p, size_t n)
{
    *(size_t *)ctx += n;
    free(p);
}

static void test_chunk_source_refuses(void **unused)
{
    (void)unused;
    size_t left = 8192;
    struct wh_arena_opts o = {.first_chunk = 4096,
                              .chunk_alloc = refuse,
                              .chunk_free = give_back,
                              .ctx = &left};
    struct wh_arena *a = wh_arena_new(&o);
    assert_non_null(a);
    assert_null(wh_arena_alloc(a, 6000));
    assert_int_equal(wh_arena_exhausted(a), WH_ARENA_REFUSED);
    wh_arena_free(a);
    assert_int_equal(left, 8192); /* every chunk went back */
}

/* Chunks kept by a reset serve the next use without the chunk source; a
 * trim gives them back. */
static void test_retain_and_trim(void **unused)
{
    (void)unused;
    size_t left = 1 << 20;
    struct wh_arena_opts o = {.first_chunk = 4096,
                              .retain = 64 * 1024,
                              .chunk_alloc = refuse,
                              .chunk_free = give_back,
                              .ctx = &left};
    struct wh_arena *a = wh_arena_new(&o);
    for (int i = 0; i < 20; i++)
        assert_non_null(wh_arena_alloc(a, 1000));
    size_t after_first = left;
    wh_arena_reset(a);
    assert_int_equal(left, after_first); /* kept, not given back */
    for (int i = 0; i < 20; i++)
        assert_non_null(wh_arena_alloc(a, 1000));
    assert_int_equal(left, after_first); /* the same use again: nothing new */
    wh_arena_reset(a);
    wh_arena_trim(a);
    assert_int_equal(left, (1 << 20) - 4096); /* only the first chunk is held */
    /* a chunk over retain is never kept */
    assert_non_null(wh_arena_alloc(a, 100 * 1024));
    wh_arena_reset(a);
    assert_int_equal(left, (1 << 20) - 4096);
    wh_arena_free(a);
    assert_int_equal(left, 1 << 20);
}

#define REVIEW                                                                                  \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"        \
    "\"uid\":\"u1\",\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"namespace\":\"ns\"," \
    "\"object\":{\"metadata\":{\"generateName\":\"c-g-worker-\",\"namespace\":\"ns\","          \
    "\"labels\":{\"ray.io/cluster\":\"c\",\"ray.io/group\":\"g\","                              \
    "\"ray.io/worker-group-replica-index\":\"0\",\"ray.io/replica-host-index\":\"1\"}},"        \
    "\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v6e-slice\","   \
    "\"cloud.google.com/gke-tpu-topology\":\"4x4\"},\"containers\":[{\"name\":\"w\","           \
    "\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}}}]}}}}"

/* The server's way: the engine's blocks all come from the bound arena, and
 * a budget too small for the review fails the review, at every size. */
static void test_engine_in_bound_arena(void **unused)
{
    (void)unused;
    wh_reqmem_install();
    struct wh_memstate *ms = wh_memstate_new();
    struct wh_state st = wh_memstate_view(ms);
    struct wh_reqmem_opts ro = {.request_budget = 1 << 20, .total_budget = 4 << 20};
    struct wh_reqmem *rm = wh_reqmem_new(&ro);
    struct wh_arena *a = wh_reqmem_get(rm);
    assert_non_null(a);
    char errbuf[WH_ERRBUF_LEN];
    struct wh_engine_result res;
    wh_reqmem_bind(a);
    assert_int_equal(wh_engine_review(REVIEW, strlen(REVIEW), WH_ROUTE_MUTATE, &st, &res, errbuf),
                     WH_OK);
    assert_true(wh_arena_owns(a, res.body));
    assert_non_null(strstr(res.body, "\"allowed\":true"));
    wh_engine_result_free(&res); /* frees into the arena: no-ops */
    wh_reqmem_bind(NULL);
    assert_true(wh_reqmem_held(rm) > 0);
    wh_reqmem_put(rm, a);
    /* unbound: the C library's heap, which free() takes */
    char *p = wh_strdup("x");
    free(p);
    /* every budget from 1 KiB up: a full answer or a failed arena, nothing between */
    bool answered = false;
    for (size_t budget = 1024; !answered; budget += 1024) {
        struct wh_arena_opts o = {.first_chunk = 1024, .budget = budget};
        struct wh_arena *small = wh_arena_new(&o);
        wh_reqmem_bind(small);
        enum wh_err err = wh_engine_review(REVIEW, strlen(REVIEW), WH_ROUTE_MUTATE, &st, &res,
                                           errbuf);
        bool ran_out = wh_arena_exhausted(small) != WH_ARENA_OK;
        if (!err && !ran_out) {
            assert_non_null(strstr(res.body, "\"patch\":"));
            answered = true;
        } else {
            assert_true(ran_out); /* a failure here is the arena's, never a denial */
        }
        wh_engine_result_free(&res);
        wh_reqmem_bind(NULL);
        wh_arena_free(small);
        assert_true(budget < (1 << 20));
    }
    wh_reqmem_free(rm);
    wh_memstate_free(ms);
}

/* wh_json_delete leaves a tree of the bound arena to the arena's reset and
 * frees any other (LeakSanitizer, in the sanitizer build, would report a
 * tree it skipped wrongly). */
static void test_json_delete_bulk(void **unused)
{
    (void)unused;
    wh_reqmem_install();
    cJSON *heap = cJSON_CreateObject(); /* nothing bound: the C library's */
    assert_int_equal(wh_json_set_str(heap, "k", "v"), WH_OK);
    assert_false(wh_mem_bulk(heap));
    struct wh_arena *a = wh_arena_new(NULL);
    assert_non_null(a);
    wh_reqmem_bind(a);
    cJSON *tree = cJSON_CreateArray();
    assert_int_equal(wh_json_add(tree, cJSON_CreateString("in the arena")), WH_OK);
    assert_true(wh_arena_owns(a, tree));
    assert_true(wh_mem_bulk(tree));
    assert_false(wh_mem_bulk(heap)); /* made before the binding */
    assert_false(wh_mem_bulk(NULL));
    wh_json_delete(tree);
    wh_json_delete(heap);
    wh_json_delete(NULL);
    wh_reqmem_bind(NULL);
    wh_arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_aligned_and_owned),
        cmocka_unit_test(test_realloc_in_place_then_copy),
        cmocka_unit_test(test_budget_then_reset),
        cmocka_unit_test(test_hold_outside),
        cmocka_unit_test(test_body_steps),
        cmocka_unit_test(test_chunk_source_refuses),
        cmocka_unit_test(test_retain_and_trim),
        cmocka_unit_test(test_engine_in_bound_arena),
        cmocka_unit_test(test_json_delete_bulk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
