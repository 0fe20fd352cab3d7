/* hash.c: FNV-1a. */
#include "wh/hash.h"

uint32_t wh_hash_str(uint32_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return (h ^ 0xffu) * 16777619u;
}
