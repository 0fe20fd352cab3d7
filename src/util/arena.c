/* arena.c: bump allocator with a budget (see arena.h). */
#include "wh/arena.h"

#include <stdint.h> /* uintptr_t */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy */

/* Under AddressSanitizer a reset poisons what it releases, so that a block
 * used after the reset of its arena (a request's data after its answer) is
 * reported as a use after poison instead of reading the next request's. */
#if defined(__SANITIZE_ADDRESS__)
#define WH_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WH_ARENA_ASAN 1
#endif
#endif
#ifdef WH_ARENA_ASAN
#include <sanitizer/asan_interface.h> /* ASAN_POISON_MEMORY_REGION, ASAN_UNPOISON_MEMORY_REGION */
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define ALIGN 16
#define FIRST_CHUNK_DEFAULT ((size_t)32 * 1024)
/* Chunks double up to this, then grow by it (a 46 MB answer takes a few
 * dozen chunks, not thousands). */
#define CHUNK_STEP_MAX ((size_t)8 * 1024 * 1024)

/* Every block is preceded by its size, so realloc knows what to copy. */
struct block {
    size_t size;
    size_t pad_; /* keeps the payload 16-byte aligned */
};

struct chunk {
    struct chunk *prev;
    size_t size; /* whole chunk, header included */
    size_t used; /* payload bytes handed out */
    size_t pad_;
    unsigned char data[];
};

struct wh_arena {
    struct wh_arena_opts o;
    struct chunk *cur; /* newest chunk; the first one is at the end of prev */
    struct chunk *first;
    struct chunk *spare; /* kept by a reset for the next request (opts.retain) */
    size_t spare_bytes;
    struct block *last; /* newest block, may grow in place */
    size_t held, peak;
    size_t outside; /* bytes its owner holds on its behalf (wh_arena_hold) */
    enum wh_arena_end end;
};

static size_t round_up(size_t n)
{
    return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

static void *chunk_alloc(struct wh_arena *a, size_t n)
{
    return a->o.chunk_alloc ? a->o.chunk_alloc(a->o.ctx, n) : malloc(n);
}

/* The payload of a chunk: what a reset poisons. */
static size_t payload(const struct chunk *c)
{
    return c->size - sizeof(struct chunk);
}

static void chunk_free(struct wh_arena *a, struct chunk *c)
{
    UNPOISON(c->data, payload(c)); /* the memory goes back to its owner clean */
    if (a->o.chunk_free)
        a->o.chunk_free(a->o.ctx, c, c->size);
    else
        free(c);
}

struct wh_arena *wh_arena_new(const struct wh_arena_opts *opts)
{
    struct wh_arena *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    if (opts)
        a->o = *opts;
    if (!a->o.first_chunk)
        a->o.first_chunk = FIRST_CHUNK_DEFAULT;
    a->o.first_chunk = round_up(a->o.first_chunk);
    struct chunk *c = chunk_alloc(a, a->o.first_chunk);
    if (!c) {
        free(a);
        return NULL;
    }
    c->prev = NULL;
    c->size = a->o.first_chunk;
    c->used = 0;
    a->cur = a->first = c;
    a->held = a->peak = c->size;
    return a;
}

void wh_arena_reset(struct wh_arena *a)
{
    /* Newest (largest) first: what does not fit in opts.retain goes. */
    while (a->cur != a->first) {
        struct chunk *c = a->cur;
        a->cur = c->prev;
        a->held -= c->size;
        if (a->spare_bytes + c->size <= a->o.retain) {
            POISON(c->data, payload(c));
            c->prev = a->spare;
            a->spare = c;
            a->spare_bytes += c->size;
        } else {
            chunk_free(a, c);
        }
    }
    a->first->used = 0;
    POISON(a->first->data, payload(a->first));
    a->last = NULL;
    a->outside = 0;
    a->end = WH_ARENA_OK;
}

void wh_arena_trim(struct wh_arena *a)
{
    while (a->spare) {
        struct chunk *c = a->spare;
        a->spare = c->prev;
        chunk_free(a, c);
    }
    a->spare_bytes = 0;
}

void wh_arena_free(struct wh_arena *a)
{
    if (!a)
        return;
    wh_arena_reset(a);
    wh_arena_trim(a);
    chunk_free(a, a->first);
    free(a);
}

/* A kept chunk of at least min bytes, unlinked; NULL when none. */
static struct chunk *take_spare(struct wh_arena *a, size_t min, size_t max)
{
    for (struct chunk **p = &a->spare; *p; p = &(*p)->prev) {
        struct chunk *c = *p;
        if (c->size >= min && c->size <= max) {
            *p = c->prev;
            a->spare_bytes -= c->size;
            return c;
        }
    }
    return NULL;
}

static void *fail(struct wh_arena *a, enum wh_arena_end why)
{
    a->end = why;
    return NULL;
}

/* A new chunk with room for a block of need payload bytes. */
static bool grow(struct wh_arena *a, size_t need)
{
    size_t min = sizeof(struct chunk) + sizeof(struct block) + need;
    if (min < need) /* overflow */
        return fail(a, WH_ARENA_BUDGET), false;
    size_t step = a->cur->size < CHUNK_STEP_MAX ? a->cur->size * 2 : CHUNK_STEP_MAX;
    size_t size = round_up(min > step ? min : step);
    size_t used = a->held + a->outside;
    if (a->o.budget) {
        size_t left = used < a->o.budget ? a->o.budget - used : 0;
        if (min > left)
            return fail(a, WH_ARENA_BUDGET), false;
        if (size > left)
            size = left;
    }
    if (size < min) /* round_up wrapped */
        return fail(a, WH_ARENA_BUDGET), false;
    size_t max = a->o.budget ? a->o.budget - used : (size_t)-1;
    struct chunk *c = take_spare(a, min, max);
    if (c)
        size = c->size;
    else if (!(c = chunk_alloc(a, size)))
        return fail(a, WH_ARENA_REFUSED), false;
    c->prev = a->cur;
    c->size = size;
    c->used = 0;
    a->cur = c;
    a->held += size;
    if (a->held > a->peak)
        a->peak = a->held;
    return true;
}

static size_t room(const struct chunk *c)
{
    return c->size - sizeof(struct chunk) - c->used;
}

void *wh_arena_alloc(struct wh_arena *a, size_t n)
{
    if (a->end)
        return NULL;
    size_t need = round_up(n ? n : 1);
    if (need < n)
        return fail(a, WH_ARENA_BUDGET);
    if (room(a->cur) < sizeof(struct block) + need && !grow(a, need))
        return NULL;
    struct block *b = (struct block *)(a->cur->data + a->cur->used);
    UNPOISON(b, sizeof(struct block) + need);
    b->size = need;
    a->cur->used += sizeof(struct block) + need;
    a->last = b;
    return b + 1;
}

void *wh_arena_realloc(struct wh_arena *a, void *p, size_t n)
{
    if (!p)
        return wh_arena_alloc(a, n);
    if (a->end)
        return NULL;
    struct block *b = (struct block *)p - 1;
    if (n <= b->size)
        return p;
    size_t need = round_up(n);
    if (need < n)
        return fail(a, WH_ARENA_BUDGET);
    /* The newest block at the end of the current chunk grows in place. */
    if (b == a->last && (unsigned char *)p + b->size == a->cur->data + a->cur->used &&
        need - b->size <= room(a->cur)) {
        UNPOISON((unsigned char *)p + b->size, need - b->size);
        a->cur->used += need - b->size;
        b->size = need;
        return p;
    }
    void *q = wh_arena_alloc(a, n);
    if (q)
        memcpy(q, p, b->size);
    return q;
}

bool wh_arena_owns(const struct wh_arena *a, const void *p)
{
    uintptr_t x = (uintptr_t)p;
    for (const struct chunk *c = a->cur; c; c = c->prev)
        if (x >= (uintptr_t)c->data && x < (uintptr_t)(c->data + c->used))
            return true;
    return false;
}

bool wh_arena_hold(struct wh_arena *a, size_t n)
{
    if (a->end)
        return false;
    if (a->o.budget && (n > a->o.budget || a->held + a->outside > a->o.budget - n))
        return fail(a, WH_ARENA_BUDGET), false;
    a->outside += n;
    return true;
}

enum wh_arena_end wh_arena_exhausted(const struct wh_arena *a)
{
    return a->end;
}

size_t wh_arena_budget(const struct wh_arena *a)
{
    return a->o.budget;
}

size_t wh_arena_held(const struct wh_arena *a)
{
    return a->held;
}

size_t wh_arena_peak(const struct wh_arena *a)
{
    return a->peak;
}
