/* arenahooks.h: wh_malloc & co. and cJSON served from one arena, as the
 * server's request memory serves them (reqmem.c), for the parser's tests,
 * fuzz harness and benchmark. Header-only (the fuzz harness and the
 * benchmark link no test library); one thread. */
#ifndef WH_ARENAHOOKS_H
#define WH_ARENAHOOKS_H

#include <stdbool.h> /* bool */
#include <stdlib.h>  /* abort */

#include "wh/arena.h" /* wh_arena_* */
#include "wh/mem.h"   /* wh_mem_install */

static struct wh_arena *wh_test_arena;

static inline void *wh_test_arena_malloc(size_t n)
{
    return wh_arena_alloc(wh_test_arena, n);
}

static inline void *wh_test_arena_realloc(void *p, size_t n)
{
    return wh_arena_realloc(wh_test_arena, p, n);
}

/* A block, or an address inside one (a carved node), goes back with the
 * arena; anything else is a bug of the code under test. */
static inline void wh_test_arena_free(void *p)
{
    if (p && !wh_arena_owns(wh_test_arena, p))
        abort();
}

static inline bool wh_test_arena_bulk(const void *p)
{
    return wh_arena_owns(wh_test_arena, p);
}

/* Route every allocation of util, core and cJSON to a (NULL: back to the C
 * library's heap). */
static inline void wh_test_arena_install(struct wh_arena *a)
{
    wh_test_arena = a;
    struct wh_mem_hooks h = {wh_test_arena_malloc, wh_test_arena_realloc, wh_test_arena_free,
                             wh_test_arena_bulk};
    wh_mem_install(a ? &h : NULL);
}

#endif
