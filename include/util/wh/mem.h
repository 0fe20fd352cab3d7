/* mem.h: the heap of util and core, which a shell may redirect.
 *
 * Every block util and core allocate (wh_buf, decisions, patches, answers)
 * comes from wh_malloc/wh_calloc/wh_realloc/wh_strdup and goes back through
 * wh_free, never free(). By default these are the C library's. A shell that
 * wants request-scoped memory installs its own functions once, before any
 * thread starts, with wh_mem_install(); it also points cJSON at them, so the
 * parsed tree follows the same rule (the server routes all of a request's
 * blocks to the request's arena; see reqmem.h). The core never sees an
 * arena, a thread or a lock: it stays a pure function of its input.
 */
#ifndef WH_MEM_H
#define WH_MEM_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

struct wh_mem_hooks {
    void *(*malloc_fn)(size_t n);
    void *(*realloc_fn)(void *p, size_t n);
    void (*free_fn)(void *p);
    /* Optional (NULL: never). True when the block p goes back with all the
     * memory it came from at once (a request's arena, reset after the
     * answer), so freeing what hangs off it piece by piece is wasted work.
     * Such memory must also take free_fn of any address inside a block it
     * handed out as a no-op: wh_jparse (jparse.h) carves a tree's nodes
     * out of larger blocks then, and cJSON_Delete frees them one by one. */
    bool (*bulk_fn)(const void *p);
};

/* Install h for util, core and cJSON; NULL restores the C library's. Not
 * thread-safe: call before starting threads. */
void wh_mem_install(const struct wh_mem_hooks *h);

void *wh_malloc(size_t n);
void *wh_calloc(size_t n, size_t size);
void *wh_realloc(void *p, size_t n);
void wh_free(void *p); /* NULL-safe */
char *wh_strdup(const char *s);
/* The installed bulk_fn: may the structure rooted at p, built with these
 * functions under the same installation and thread binding, be left to its
 * memory's bulk release? false with the C library's heap. See
 * wh_json_delete (json.h). */
bool wh_mem_bulk(const void *p);

#endif /* WH_MEM_H */
