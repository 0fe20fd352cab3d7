/* arena.h: a bump allocator for everything one request makes.
 *
 * A request's body, its parsed review, the decision and the answer are
 * carved out of a few chunks and released all at once by wh_arena_reset():
 * no per-object free, no malloc per JSON node. Blocks are 16-byte aligned;
 * wh_arena_realloc() grows the newest block in place (how wh_buf and the
 * response grow without copies).
 *
 * The arena is a budget as well: it never holds more than opts.budget bytes
 * of chunks, and a chunk source that refuses (a server-wide limit, or no
 * memory) ends it the same way. After the first refusal every allocation
 * fails, so a request that ran out can never finish with a partial answer:
 * wh_arena_exhausted() says why, and the shell answers 500/503 instead.
 *
 * Chunks come from opts.chunk_alloc/chunk_free (malloc/free when NULL), so a
 * shell can charge them to a shared limit and map large ones so that they go
 * back to the system on reset. Ownership: the arena owns every block; a
 * block is valid until the next wh_arena_reset()/wh_arena_free(). Not
 * thread-safe: one request, one thread at a time.
 */
#ifndef WH_ARENA_H
#define WH_ARENA_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

struct wh_arena_opts {
    size_t first_chunk; /* kept across resets; 0 = 32 KiB */
    size_t budget;      /* most bytes of chunks in use at once; 0 = no limit */
    size_t retain;      /* bytes of further chunks a reset keeps for reuse */
    /* NULL for malloc/free. chunk_alloc returns NULL to refuse. */
    void *(*chunk_alloc)(void *ctx, size_t n);
    void (*chunk_free)(void *ctx, void *p, size_t n);
    void *ctx;
};

enum wh_arena_end {
    WH_ARENA_OK,      /* every allocation so far succeeded */
    WH_ARENA_BUDGET,  /* a block would have put the arena over its budget */
    WH_ARENA_REFUSED, /* the chunk source refused (shared limit, no memory) */
};

struct wh_arena;

/* NULL on OOM. Allocates the first chunk. */
struct wh_arena *wh_arena_new(const struct wh_arena_opts *opts);
/* Free every chunk and the arena. NULL-safe. */
void wh_arena_free(struct wh_arena *a);
/* Release every block and clear the exhausted state; keep the first chunk,
 * and further chunks up to opts.retain bytes for the next use (a server
 * that answers the same large review again then maps nothing). */
void wh_arena_reset(struct wh_arena *a);
/* Free the chunks a reset kept (when the server goes idle). */
void wh_arena_trim(struct wh_arena *a);

/* n bytes, 16-byte aligned, or NULL (exhausted from then on). */
void *wh_arena_alloc(struct wh_arena *a, size_t n);
/* Resize a block of this arena (p NULL: alloc). The newest block grows in
 * place; any other block is copied. NULL on failure, p untouched. */
void *wh_arena_realloc(struct wh_arena *a, void *p, size_t n);
/* True when p points into one of the arena's blocks. */
bool wh_arena_owns(const struct wh_arena *a, const void *p);

/* Count n bytes that the arena's owner holds outside it on its behalf (a
 * request's body, grown as it arrives) against its budget until the next
 * reset. false, and exhausted (WH_ARENA_BUDGET), when that would put the
 * arena over its budget. */
bool wh_arena_hold(struct wh_arena *a, size_t n);

enum wh_arena_end wh_arena_exhausted(const struct wh_arena *a);
size_t wh_arena_budget(const struct wh_arena *a);
/* Bytes of chunks in use now, and the most since wh_arena_new() (kept
 * chunks not counted). */
size_t wh_arena_held(const struct wh_arena *a);
size_t wh_arena_peak(const struct wh_arena *a);

#endif /* WH_ARENA_H */
