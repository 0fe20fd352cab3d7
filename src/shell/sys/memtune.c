/* memtune.c: glibc malloc settings for the server. */
#include "wh/memtune.h"

#include <malloc.h> /* mallopt */

#define MMAP_THRESHOLD (32 * 1024 * 1024)
#define TRIM_THRESHOLD (32 * 1024 * 1024)

void wh_memtune_server(void)
{
    /* Failures leave glibc's defaults, which are correct, only slower. */
    (void)mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    (void)mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD);
}
