/* reqmem.c: arenas per request, bound to the handling thread (see reqmem.h). */
#include "wh/reqmem.h"

#include <pthread.h>   /* pthread_mutex_t */
#include <stdatomic.h> /* atomic_size_t */
#include <stdbool.h>   /* bool */
#include <stdlib.h>    /* malloc, realloc, free */
#include <string.h>    /* memcpy */
#include <sys/mman.h>  /* mmap, mremap, munmap */

#include "wh/clock.h" /* wh_clock_ms */
#include "wh/mem.h"   /* wh_mem_install */

/* Chunks this large are mapped, so that they are unmapped on reset: the
 * server's malloc keeps up to 32 MiB of freed heap (memtune.c). */
#define MAP_MIN ((size_t)256 * 1024)

struct wh_reqmem {
    struct wh_reqmem_opts o;
    atomic_size_t held;
    atomic_llong last_put_ms;
    atomic_bool kept;     /* some pooled arena keeps chunks */
    pthread_mutex_t lock; /* the pool */
    struct wh_arena **pool;
    unsigned n_pool;
};

static _Thread_local struct wh_arena *bound;

/* ---- the heap of util, core and cJSON ----------------------------------- */

static void *rm_malloc(size_t n)
{
    return bound ? wh_arena_alloc(bound, n) : malloc(n);
}

static void rm_free(void *p)
{
    /* Blocks of the arena go with it, and so does any address inside one
     * (mem.h: wh_jparse carves nodes out of blocks); anything else came
     * from malloc (before the binding, or from a thread with none). */
    if (bound && wh_arena_owns(bound, p))
        return;
    free(p);
}

static void *rm_realloc(void *p, size_t n)
{
    if (bound && (!p || wh_arena_owns(bound, p)))
        return wh_arena_realloc(bound, p, n);
    return realloc(p, n);
}

/* A block of the bound arena goes with it at wh_reqmem_put(). */
static bool rm_bulk(const void *p)
{
    return bound && wh_arena_owns(bound, p);
}

void wh_reqmem_install(void)
{
    static bool installed;
    if (installed)
        return;
    installed = true;
    struct wh_mem_hooks h = {rm_malloc, rm_realloc, rm_free, rm_bulk};
    wh_mem_install(&h);
}

struct wh_arena *wh_reqmem_bind(struct wh_arena *a)
{
    struct wh_arena *before = bound;
    bound = a;
    return before;
}

/* ---- chunks, charged to the total --------------------------------------- */

static void trim_pool(struct wh_reqmem *rm)
{
    pthread_mutex_lock(&rm->lock);
    for (unsigned i = 0; i < rm->n_pool; i++)
        wh_arena_trim(rm->pool[i]);
    atomic_store(&rm->kept, false);
    pthread_mutex_unlock(&rm->lock);
}

static bool charge(struct wh_reqmem *rm, size_t n)
{
    size_t after = atomic_fetch_add(&rm->held, n) + n;
    if (after <= rm->o.total_budget)
        return true;
    atomic_fetch_sub(&rm->held, n);
    return false;
}

/* Chunks kept by idle arenas must not cost a request its answer. */
static bool charge_total(struct wh_reqmem *rm, size_t n)
{
    return charge(rm, n) || (atomic_load(&rm->kept) && (trim_pool(rm), charge(rm, n)));
}

static void *chunk_alloc(void *ctx, size_t n)
{
    struct wh_reqmem *rm = ctx;
    if (!charge_total(rm, n))
        return NULL;
    void *p;
    if (n >= MAP_MIN) {
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            p = NULL;
    } else {
        p = malloc(n);
    }
    if (!p)
        atomic_fetch_sub(&rm->held, n);
    return p;
}

static void chunk_free(void *ctx, void *p, size_t n)
{
    struct wh_reqmem *rm = ctx;
    if (n >= MAP_MIN)
        munmap(p, n);
    else
        free(p);
    atomic_fetch_sub(&rm->held, n);
}

/* ---- the pool ------------------------------------------------------------ */

struct wh_reqmem *wh_reqmem_new(const struct wh_reqmem_opts *opts)
{
    struct wh_reqmem *rm = calloc(1, sizeof(*rm));
    if (!rm)
        return NULL;
    if (opts)
        rm->o = *opts;
    if (!rm->o.request_budget)
        rm->o.request_budget = WH_REQMEM_REQUEST_DEFAULT;
    if (!rm->o.total_budget)
        rm->o.total_budget = WH_REQMEM_TOTAL_DEFAULT;
    if (!rm->o.pool_max)
        rm->o.pool_max = 64;
    rm->pool = calloc(rm->o.pool_max, sizeof(*rm->pool));
    if (!rm->pool) {
        free(rm);
        return NULL;
    }
    atomic_init(&rm->held, 0);
    atomic_init(&rm->last_put_ms, 0);
    atomic_init(&rm->kept, false);
    pthread_mutex_init(&rm->lock, NULL);
    return rm;
}

void wh_reqmem_free(struct wh_reqmem *rm)
{
    if (!rm)
        return;
    for (unsigned i = 0; i < rm->n_pool; i++)
        wh_arena_free(rm->pool[i]);
    free(rm->pool);
    pthread_mutex_destroy(&rm->lock);
    free(rm);
}

struct wh_arena *wh_reqmem_get(struct wh_reqmem *rm)
{
    struct wh_arena *a = NULL;
    pthread_mutex_lock(&rm->lock);
    if (rm->n_pool)
        a = rm->pool[--rm->n_pool];
    pthread_mutex_unlock(&rm->lock);
    if (a)
        return a;
    struct wh_arena_opts ao = {.first_chunk = WH_REQMEM_FIRST_CHUNK,
                               .budget = rm->o.request_budget,
                               .retain = WH_REQMEM_RETAIN,
                               .chunk_alloc = chunk_alloc,
                               .chunk_free = chunk_free,
                               .ctx = rm};
    return wh_arena_new(&ao);
}

void wh_reqmem_put(struct wh_reqmem *rm, struct wh_arena *a)
{
    if (!a)
        return;
    wh_arena_reset(a);
    pthread_mutex_lock(&rm->lock);
    bool kept = rm->n_pool < rm->o.pool_max;
    if (kept)
        rm->pool[rm->n_pool++] = a;
    atomic_store(&rm->kept, true);
    pthread_mutex_unlock(&rm->lock);
    atomic_store(&rm->last_put_ms, wh_clock_ms());
    if (!kept)
        wh_arena_free(a);
}

void wh_reqmem_trim_idle(struct wh_reqmem *rm, long idle_ms)
{
    if (atomic_load(&rm->kept) && wh_clock_ms() - atomic_load(&rm->last_put_ms) >= idle_ms)
        trim_pool(rm);
}

size_t wh_reqmem_held(const struct wh_reqmem *rm)
{
    return atomic_load(&((struct wh_reqmem *)rm)->held);
}

/* ---- bodies, charged as they arrive -------------------------------------- */

static bool share_charge(struct wh_reqmem_share *sh, size_t n)
{
    if (!sh)
        return true;
    size_t after = atomic_fetch_add(&sh->held, n) + n;
    if (!sh->cap || after <= sh->cap)
        return true;
    atomic_fetch_sub(&sh->held, n);
    return false;
}

static void share_refund(struct wh_reqmem_share *sh, size_t n)
{
    if (sh)
        atomic_fetch_sub(&sh->held, n);
}

static size_t pages(size_t n)
{
    return (n + 4095) & ~(size_t)4095;
}

/* The buffer resized from b->cap to cap bytes (mapped from MAP_MIN on, so
 * that it goes back to the system when freed and grows without a copy);
 * NULL, b untouched, when the system refuses. */
static char *body_resize(struct wh_reqmem_body *b, size_t cap)
{
    if (cap < MAP_MIN)
        return realloc(b->data, cap);
    if (b->cap >= MAP_MIN) {
        void *q = mremap(b->data, b->cap, cap, MREMAP_MAYMOVE);
        return q == MAP_FAILED ? NULL : q;
    }
    void *q = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED)
        return NULL;
    if (b->len)
        memcpy(q, b->data, b->len + 1);
    free(b->data);
    return q;
}

enum wh_reqmem_refusal wh_reqmem_body_add(struct wh_reqmem *rm, struct wh_reqmem_body *b,
                                          const char *p, size_t n, size_t limit)
{
    if (atomic_load(&b->shed))
        return WH_REQMEM_SHED;
    /* Charged for the bytes it holds (and its NUL), not for the buffer's
     * capacity: steps ahead of the bytes are mapped from MAP_MIN on, so
     * their pages are not touched before bytes arrive. */
    size_t more = n + (b->data ? 0 : 1);
    if (!share_charge(b->share, more))
        return WH_REQMEM_OVER_SHARE;
    if (!charge_total(rm, more)) {
        share_refund(b->share, more);
        return WH_REQMEM_OVER_TOTAL;
    }
    size_t need = b->len + n + 1;
    if (need > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : WH_REQMEM_BODY_STEP;
        if (cap > limit + 1)
            cap = limit + 1;
        if (cap < need)
            cap = need;
        if (cap >= MAP_MIN)
            cap = pages(cap);
        char *q = body_resize(b, cap);
        if (!q) {
            share_refund(b->share, more);
            atomic_fetch_sub(&rm->held, more);
            return WH_REQMEM_NO_MEMORY;
        }
        b->data = q;
        b->cap = cap;
    }
    atomic_fetch_add(&b->charged, more);
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return WH_REQMEM_TAKEN;
}

/* Give back what b is charged; each charged byte is given back once,
 * whoever (owner or shedder) takes it. */
static size_t uncharge(struct wh_reqmem *rm, struct wh_reqmem_body *b)
{
    size_t n = atomic_exchange(&b->charged, 0);
    share_refund(b->share, n);
    atomic_fetch_sub(&rm->held, n);
    return n;
}

size_t wh_reqmem_body_shed(struct wh_reqmem *rm, struct wh_reqmem_body *b)
{
    atomic_store(&b->shed, true);
    return uncharge(rm, b);
}

size_t wh_reqmem_room(const struct wh_reqmem *rm)
{
    size_t held = wh_reqmem_held(rm);
    return held < rm->o.total_budget ? rm->o.total_budget - held : 0;
}

void wh_reqmem_body_free(struct wh_reqmem *rm, struct wh_reqmem_body *b)
{
    if (b->data) {
        if (b->cap >= MAP_MIN)
            munmap(b->data, b->cap);
        else
            free(b->data);
    }
    uncharge(rm, b);
    b->data = NULL;
    b->len = b->cap = 0;
}
