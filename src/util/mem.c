/* mem.c: the redirectable heap of util and core (see mem.h). */
#include "wh/mem.h"

#include <stdlib.h> /* malloc, realloc, free */
#include <string.h> /* memcpy, memset, strlen */

#include <cjson/cJSON.h>

/* The one piece of process state below the shell: set once by the shell
 * before threads start, read-only afterwards (as cJSON's own hooks are). */
static struct wh_mem_hooks hooks = {malloc, realloc, free, NULL};

void wh_mem_install(const struct wh_mem_hooks *h)
{
    struct wh_mem_hooks libc = {malloc, realloc, free, NULL};
    hooks = h ? *h : libc;
    cJSON_Hooks ch = {hooks.malloc_fn, hooks.free_fn};
    cJSON_InitHooks(h ? &ch : NULL);
}

void *wh_malloc(size_t n)
{
    return hooks.malloc_fn(n);
}

void *wh_calloc(size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size)
        return NULL;
    void *p = hooks.malloc_fn(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *wh_realloc(void *p, size_t n)
{
    return hooks.realloc_fn(p, n);
}

void wh_free(void *p)
{
    if (p)
        hooks.free_fn(p);
}

char *wh_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = hooks.malloc_fn(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

bool wh_mem_bulk(const void *p)
{
    return p && hooks.bulk_fn && hooks.bulk_fn(p);
}
