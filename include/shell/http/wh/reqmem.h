/* reqmem.h: request-scoped memory for the server (shell).
 *
 * Each request takes an arena (arena.h) from a small pool once its body is
 * in and gives it back, reset, when its answer has been sent: the parsed
 * review, the decision, the answer and the log line are carved out of it,
 * and nothing is freed piece by piece. While a request is being handled its
 * arena is bound to the thread (wh_reqmem_bind), and the heap functions of
 * util, core and cJSON (installed by wh_reqmem_install, see mem.h) allocate
 * from the bound arena; with nothing bound they are the C library's.
 *
 * Why per request, from a pool: a libmicrohttpd thread serves many
 * connections between two calls for one request, so a per-thread arena
 * could not hold a body across calls, and a per-connection one would keep
 * memory in every idle kept-alive connection. A pool of reset arenas costs
 * two uncontended lock operations per request and no malloc. Measured with
 * wh-bench-engine: a 16-host review makes 1 allocation instead of 356 and
 * takes 0.019 ms instead of 0.031.
 *
 * Bodies are not in the arena: a body is read into a buffer of its own
 * (struct wh_reqmem_body) that grows in steps as its bytes arrive, charged
 * for the bytes it holds (not its buffer's steps) before they are taken,
 * so that a header block that promises 3 MiB and sends one byte is charged
 * two bytes, not 3 MiB. The body's bytes then count
 * against its request's arena too (wh_arena_hold), from the moment it is
 * handed to the arena.
 *
 * Budgets: one request (its body and its arena) never holds more than
 * request_budget bytes, and all requests together (bodies, arenas, pooled
 * arenas) never more than total_budget; the bodies of one client's requests
 * (a struct wh_reqmem_share: the server keeps one per peer address) never
 * more than that share's cap.
 * An arena that runs out fails every later allocation, and the server
 * answers that request 500 (its own budget) or 503 (the server's), never a
 * partial answer. A pooled arena keeps up to 4 MiB of chunks for the next
 * request (a steady load of large reviews maps nothing); they are freed when
 * the server is idle (wh_reqmem_trim_idle) or when a request needs the room.
 * Chunks of 256 KiB and more are mapped, so what is freed goes back to the
 * system at once.
 *
 * Ownership: the pool owns idle arenas; a request owns the arena it got
 * until wh_reqmem_put(). A block allocated through mem.h or cJSON while an
 * arena is bound belongs to that arena and dies with the request. So code
 * that runs inside a request (the admission pipeline: ledger, caches, the
 * Kubernetes client) and keeps something beyond it must allocate that with
 * the C library's malloc (the ledger and caches do), or unbind around it:
 *   struct wh_arena *req = wh_reqmem_bind(NULL); ... wh_reqmem_bind(req);
 */
#ifndef WH_REQMEM_H
#define WH_REQMEM_H

#include <stdatomic.h> /* atomic_size_t, atomic_bool */
#include <stddef.h>    /* size_t */

#include "wh/arena.h" /* struct wh_arena */

#define WH_REQMEM_REQUEST_DEFAULT ((size_t)32 * 1024 * 1024)
#define WH_REQMEM_TOTAL_DEFAULT ((size_t)128 * 1024 * 1024)
/* Each arena's first chunk (a native-index pod review fits in it) and the
 * further chunks a pooled arena keeps for the next request. */
#define WH_REQMEM_FIRST_CHUNK ((size_t)32 * 1024)
#define WH_REQMEM_RETAIN ((size_t)4 * 1024 * 1024)

struct wh_reqmem_opts {
    size_t request_budget; /* one request's arena; 0 = WH_REQMEM_REQUEST_DEFAULT */
    size_t total_budget;   /* all arenas; 0 = WH_REQMEM_TOTAL_DEFAULT */
    unsigned pool_max;     /* idle arenas kept (their first chunk); 0 = 64 */
};

struct wh_reqmem;

/* Point util, core and cJSON at the thread-bound arenas. Idempotent; call
 * before starting any thread that allocates through them. */
void wh_reqmem_install(void);

/* NULL on OOM. */
struct wh_reqmem *wh_reqmem_new(const struct wh_reqmem_opts *opts);
/* Every arena must have been put back. NULL-safe. */
void wh_reqmem_free(struct wh_reqmem *rm);

/* An empty arena for one request; NULL when the total budget or the
 * system refuses. Thread-safe. */
struct wh_arena *wh_reqmem_get(struct wh_reqmem *rm);
/* Give it back (reset; kept in the pool or freed). NULL-safe; thread-safe. */
void wh_reqmem_put(struct wh_reqmem *rm, struct wh_arena *a);

/* Route this thread's allocations to a (NULL: the C library) until the next
 * call. Returns the arena bound before, to restore it. */
struct wh_arena *wh_reqmem_bind(struct wh_arena *a);

/* Free the chunks pooled arenas keep for reuse (beyond their first) when no
 * request has finished for idle_ms: the memory of a burst goes back. */
void wh_reqmem_trim_idle(struct wh_reqmem *rm, long idle_ms);

/* Bytes of chunks held by all arenas (pooled ones and kept chunks included)
 * and of all bodies. */
size_t wh_reqmem_held(const struct wh_reqmem *rm);

/* One client's bodies: the bytes they hold now, against cap (0: no cap).
 * Owned by the server (one per peer address); it outlives every body
 * charged to it. */
struct wh_reqmem_share {
    atomic_size_t held;
    size_t cap;
};

/* A request body, zeroed to start. The request owns it (and data) until
 * wh_reqmem_body_free; share is borrowed. */
struct wh_reqmem_body {
    char *data;      /* len bytes and a NUL; NULL before the first byte */
    size_t len, cap; /* cap: bytes allocated */
    /* What it is charged (to the server and the share): the bytes it holds
     * and the NUL, until wh_reqmem_body_shed or _free gives them back.
     * Another thread may shed it (the server, short of memory). */
    atomic_size_t charged;
    atomic_bool shed;              /* no more bytes are taken */
    struct wh_reqmem_share *share; /* charged as well; NULL: none */
};

enum wh_reqmem_refusal {
    WH_REQMEM_TAKEN,      /* the bytes are in */
    WH_REQMEM_OVER_TOTAL, /* the step would put the server over total_budget */
    WH_REQMEM_OVER_SHARE, /* ... the client over its share's cap */
    WH_REQMEM_NO_MEMORY,  /* the system refused */
    WH_REQMEM_SHED,       /* the body was shed (wh_reqmem_body_shed) */
};

/* The step a body's buffer starts with; each later one doubles it. */
#define WH_REQMEM_BODY_STEP ((size_t)4 * 1024)

/* Append n bytes of p. The buffer grows to twice its size (at least
 * WH_REQMEM_BODY_STEP, at least what the bytes need, at most limit + 1:
 * limit is its Content-Length or the server's body limit, which the caller
 * has checked len + n against). On a refusal nothing is appended and the
 * body keeps what it had. Thread-safe across bodies. */
enum wh_reqmem_refusal wh_reqmem_body_add(struct wh_reqmem *rm, struct wh_reqmem_body *b,
                                          const char *p, size_t n, size_t limit);
/* Free the buffer and give its charge back; b is zeroed (share kept).
 * NULL-safe for b->data. */
void wh_reqmem_body_free(struct wh_reqmem *rm, struct wh_reqmem_body *b);

/* From another thread than the owner's (which keeps b and frees it as
 * usual): give back what b is charged now and refuse its later bytes, so
 * that its memory counts as free while its connection closes. Returns the
 * bytes given back. */
size_t wh_reqmem_body_shed(struct wh_reqmem *rm, struct wh_reqmem_body *b);

/* total_budget less what is held now (0 when over). */
size_t wh_reqmem_room(const struct wh_reqmem *rm);

#endif /* WH_REQMEM_H */
