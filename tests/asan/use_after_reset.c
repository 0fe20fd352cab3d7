/* use_after_reset.c: a block read after its arena was reset must be reported
 * by AddressSanitizer (src/util/arena.c poisons what a reset releases).
 *
 *   use_after_reset arena|reqmem|control
 *
 * arena: a block of a bare arena, read after wh_arena_reset; reqmem: a
 * request arena's block (one in a further chunk, as a large review's),
 * read after wh_reqmem_put; control: the same, read before, which must pass
 * (so that the other two fail for the use after reset, nothing else). Built
 * and run only in an ASan build (tests/asan/CMakeLists.txt). */
#include <stdio.h>  /* printf */
#include <string.h> /* memset, strcmp */

#include "wh/arena.h"  /* wh_arena_new, wh_arena_alloc, wh_arena_reset */
#include "wh/reqmem.h" /* wh_reqmem_new, wh_reqmem_get, wh_reqmem_put */

static volatile char sink;

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "control";
    bool control = !strcmp(mode, "control");
    if (!strcmp(mode, "arena") || control) {
        struct wh_arena *a = wh_arena_new(NULL);
        char *p = a ? wh_arena_alloc(a, 100) : NULL;
        if (!p)
            return 2;
        memset(p, 'x', 100);
        if (control)
            sink = p[50];
        wh_arena_reset(a);
        if (!control)
            sink = p[50]; /* reported: use-after-poison */
        wh_arena_free(a);
    }
    if (!strcmp(mode, "reqmem") || control) {
        struct wh_reqmem *rm = wh_reqmem_new(NULL);
        struct wh_arena *a = rm ? wh_reqmem_get(rm) : NULL;
        char *p = a ? wh_arena_alloc(a, 200 * 1024) : NULL; /* past the first chunk */
        if (!p)
            return 2;
        memset(p, 'x', 200 * 1024);
        if (control)
            sink = p[1000];
        wh_reqmem_put(rm, a);
        if (!control)
            sink = p[1000]; /* reported: use-after-poison */
        wh_reqmem_free(rm);
    }
    printf("%s: no report\n", mode);
    return 0;
}
