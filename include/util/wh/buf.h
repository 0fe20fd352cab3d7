/* buf.h: a bounded growable byte buffer for all text output.
 *
 * A buffer is created with a hard maximum size; appends past it fail with
 * WH_ERR_TOOBIG. On ANY failed append the buffer frees its memory and stays
 * usable as an empty buffer, so error paths need no cleanup beyond
 * wh_buf_free(). The contents are always NUL-terminated (the NUL is not
 * counted in len and not counted against the maximum).
 *
 * The struct is public so it can live on the stack; use the API, not the
 * fields. Ownership: the buffer owns its memory until wh_buf_take() hands it
 * to the caller (who frees it with wh_free()). wh_buf_ptr() is borrowed and
 * invalid after the next append.
 */
#ifndef WH_BUF_H
#define WH_BUF_H

#include <stdarg.h> /* va_list */
#include <stddef.h> /* size_t */
#include <string.h> /* memcpy, strlen */

#include "wh/err.h" /* enum wh_err */

struct wh_buf {
    char *ptr;
    size_t len;
    size_t cap;
    size_t max;
};

/* Initialise an empty buffer that may grow to max bytes. Allocates nothing. */
void wh_buf_init(struct wh_buf *b, size_t max);
/* Release the memory; the buffer is empty and reusable. NULL-safe. */
void wh_buf_free(struct wh_buf *b);
/* Empty the buffer but keep its memory. */
void wh_buf_reset(struct wh_buf *b);

/* The out-of-line part of the appends below: grow (or fail), then append. */
WH_NODISCARD enum wh_err wh_buf_addn_grow(struct wh_buf *b, const void *p, size_t n);

/* Appends are inline: nearly all of them fit in the memory the buffer has
 * (the answer of a review makes thousands), and a call per byte showed in
 * the server's profile. cap > len whenever ptr is set, and cap <= max + 1,
 * so "fits with its NUL" also means "within max". */
WH_NODISCARD static inline enum wh_err wh_buf_addn(struct wh_buf *b, const void *p, size_t n)
{
    if (n >= b->cap - b->len) /* cap 0 (no memory yet): always */
        return wh_buf_addn_grow(b, p, n);
    if (n)
        memcpy(b->ptr + b->len, p, n);
    b->len += n;
    b->ptr[b->len] = '\0';
    return WH_OK;
}

WH_NODISCARD static inline enum wh_err wh_buf_add(struct wh_buf *b, const char *s)
{
    return wh_buf_addn(b, s, strlen(s));
}

WH_NODISCARD static inline enum wh_err wh_buf_addc(struct wh_buf *b, char c)
{
    if (b->cap - b->len < 2)
        return wh_buf_addn_grow(b, &c, 1);
    b->ptr[b->len++] = c;
    b->ptr[b->len] = '\0';
    return WH_OK;
}
WH_NODISCARD enum wh_err wh_buf_addf(struct wh_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append the decimal digits of v (cheaper than addf on hot paths). */
WH_NODISCARD enum wh_err wh_buf_addu(struct wh_buf *b, unsigned long v);
/* va_list form of wh_buf_addf. */
WH_NODISCARD enum wh_err wh_buf_vaddf(struct wh_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Append s as the body of a JSON string (escaped, without the quotes). Bytes
 * that are not UTF-8 become U+FFFD (one per byte), so the text is always
 * valid JSON in valid UTF-8. */
WH_NODISCARD enum wh_err wh_buf_add_json_escaped(struct wh_buf *b, const char *s, size_t n);
/* The same between quotes: a whole JSON string. */
WH_NODISCARD enum wh_err wh_buf_add_json_string(struct wh_buf *b, const char *s, size_t n);
/* Drop the bytes after the first len (len <= wh_buf_len(b)); the memory stays. */
static inline void wh_buf_truncate(struct wh_buf *b, size_t len)
{
    if (b->ptr && len < b->len) {
        b->len = len;
        b->ptr[len] = '\0';
    }
}
/* Make sure n more bytes fit without reallocation. */
WH_NODISCARD enum wh_err wh_buf_reserve(struct wh_buf *b, size_t n);

/* Borrowed NUL-terminated contents ("" when empty); valid until the next change. */
const char *wh_buf_ptr(const struct wh_buf *b);
static inline size_t wh_buf_len(const struct wh_buf *b)
{
    return b->len;
}

/* Hand the bytes to the caller (wh_free() them); the buffer becomes empty.
 * Returns a malloc'd "" for an empty buffer; NULL only on OOM. */
char *wh_buf_take(struct wh_buf *b, size_t *len);

#endif /* WH_BUF_H */
