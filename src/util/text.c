/* text.c: short text in fixed arrays without printf (text.h). */
#include "wh/text.h"

#include <string.h> /* memcpy, strlen */

void wh_text_init(struct wh_text *t, char *out, size_t cap)
{
    t->out = out;
    t->len = 0;
    t->cap = cap;
    out[0] = '\0';
}

void wh_text_addn(struct wh_text *t, const char *s, size_t n)
{
    size_t room = t->cap - 1 - t->len;
    size_t k = n < room ? n : room;
    memcpy(t->out + t->len, s, k);
    t->len += k;
    t->out[t->len] = '\0';
}

void wh_text_add(struct wh_text *t, const char *s)
{
    wh_text_addn(t, s, strlen(s));
}

void wh_text_addl(struct wh_text *t, long v)
{
    char digits[24];
    size_t n = sizeof(digits);
    /* the magnitude as unsigned: -LONG_MIN does not fit in a long */
    unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
    do {
        digits[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        digits[--n] = '-';
    wh_text_addn(t, digits + n, sizeof(digits) - n);
}
