/* text.h: short text written into a fixed array without printf, for the
 * per-request path (printf's format parsing showed in the server's
 * profile: ~10k instructions per /mutate request). Pure; nothing is
 * allocated.
 *
 * The text is cut, as snprintf cuts it, at the array's size less one byte
 * (byte-wise: a UTF-8 character may be split, as with snprintf), and is
 * always NUL-terminated. */
#ifndef WH_TEXT_H
#define WH_TEXT_H

#include <stddef.h> /* size_t */

/* Writes into out[cap] (cap >= 1); the fields are the API's. */
struct wh_text {
    char *out;
    size_t len, cap; /* len < cap: the bytes written before the NUL */
};

/* Start an empty text in out[cap]. */
void wh_text_init(struct wh_text *t, char *out, size_t cap);
/* Append n bytes of s (what fits). */
void wh_text_addn(struct wh_text *t, const char *s, size_t n);
/* Append the string s (what fits). */
void wh_text_add(struct wh_text *t, const char *s);
/* Append the decimal digits of v, "-" first below zero ("%ld"). */
void wh_text_addl(struct wh_text *t, long v);

#endif /* WH_TEXT_H */
