/* utf8.c: UTF-8 validation and character-boundary cuts (RFC 3629). */
#include "wh/utf8.h"

#include <stdint.h> /* uint64_t */
#include <string.h> /* memcpy, strnlen */

size_t wh_utf8_char_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0)
        return 0;
    if (u[0] < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (u[0] >= 0xC2 && u[0] <= 0xDF) {
        len = 2;
    } else if (u[0] >= 0xE0 && u[0] <= 0xEF) {
        len = 3;
        if (u[0] == 0xE0)
            lo = 0xA0; /* overlong */
        else if (u[0] == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (u[0] >= 0xF0 && u[0] <= 0xF4) {
        len = 4;
        if (u[0] == 0xF0)
            lo = 0x90; /* overlong */
        else if (u[0] == 0xF4)
            hi = 0x8F; /* past U+10FFFF */
    } else {
        return 0; /* continuation byte, C0, C1 or F5..FF */
    }
    if (n < len || u[1] < lo || u[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (u[i] < 0x80 || u[i] > 0xBF)
            return 0;
    return len;
}

bool wh_utf8_is_ascii(const char *s, size_t n)
{
    uint64_t any = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        any |= w;
    }
    for (; i < n; i++)
        any |= (unsigned char)s[i];
    return !(any & 0x8080808080808080ULL);
}

/* Bytes a character whose first byte is c claims (0: c cannot start one). */
static size_t claimed_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
}

/* Start of the character that s[0..n) ends inside of, or n when the last
 * character is complete (or the bytes there are not UTF-8 at all). */
static size_t cut_point(const char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0)
        return n;
    size_t start = i - 1;
    size_t want = claimed_len((unsigned char)s[start]);
    return want > n - start ? start : n;
}

size_t wh_utf8_cut(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    if (n < max || s[max] == '\0')
        return n;
    return cut_point(s, max);
}

void wh_utf8_trim_cut(char *buf, size_t size)
{
    if (size == 0)
        return;
    size_t n = strnlen(buf, size - 1);
    buf[cut_point(buf, n)] = '\0';
}
