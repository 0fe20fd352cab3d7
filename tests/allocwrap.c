/* allocwrap.c: see allocwrap.h. */
#include "allocwrap.h"

#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy, strlen */

#include <cjson/cJSON.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static struct wh_alloc_stats stats;
static unsigned long fail_n, seen;
static int fail_sticky, failed;

/* Count one attempt; true when this one must fail. */
static int must_fail(void)
{
    stats.attempts++;
    if (!fail_n)
        return 0;
    seen++;
    if (seen == fail_n || (fail_sticky && seen > fail_n)) {
        failed = 1;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    if (must_fail())
        return NULL;
    void *p = __real_malloc(n);
    if (p) {
        stats.allocs++;
        stats.live++;
    }
    return p;
}

void *__wrap_calloc(size_t n, size_t m)
{
    if (must_fail())
        return NULL;
    void *p = __real_calloc(n, m);
    if (p) {
        stats.allocs++;
        stats.live++;
    }
    return p;
}

void *__wrap_realloc(void *old, size_t n)
{
    if (must_fail())
        return NULL;
    void *p = __real_realloc(old, n);
    if (p) {
        if (old) {
            stats.reallocs++;
        } else {
            stats.allocs++;
            stats.live++;
        }
    }
    return p;
}

void __wrap_free(void *p)
{
    if (!p)
        return;
    stats.frees++;
    stats.live--;
    __real_free(p);
}

char *__wrap_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = __wrap_malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

char *__wrap_strdup(const char *s)
{
    return __wrap_strndup(s, strlen(s));
}

void wh_allocwrap_install(void)
{
    cJSON_Hooks hooks = {.malloc_fn = __wrap_malloc, .free_fn = __wrap_free};
    cJSON_InitHooks(&hooks);
}

void wh_allocwrap_reset(void)
{
    memset(&stats, 0, sizeof(stats));
}

struct wh_alloc_stats wh_allocwrap_stats(void)
{
    return stats;
}

void wh_allocwrap_fail_at(unsigned long n, int sticky)
{
    fail_n = n;
    fail_sticky = sticky;
    seen = 0;
    failed = 0;
}

int wh_allocwrap_failed(void)
{
    return failed;
}
