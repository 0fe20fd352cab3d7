/* term.c: terminal-safe text (see wh/term.h). */
#include "wh/term.h"

#include <stdbool.h> /* bool */
#include <stdio.h>   /* snprintf */

#include "wh/utf8.h" /* wh_utf8_char_len */

/* What is at s[i]: *len bytes, and whether they must be escaped; *cp is the
 * code point of an escaped character (-1: a byte that is no character). */
static bool unsafe_at(const char *s, size_t n, size_t i, size_t *len, long *cp)
{
    unsigned char c = (unsigned char)s[i];
    *len = 1;
    if (c < 0x80) {
        *cp = c;
        return c < 0x20 || c == 0x7f || c == '\\';
    }
    size_t l = wh_utf8_char_len(s + i, n - i);
    if (!l) {
        *cp = -1;
        return true;
    }
    *len = l;
    const unsigned char *u = (const unsigned char *)s + i;
    if (l == 2) {
        *cp = ((long)(u[0] & 0x1f) << 6) | (u[1] & 0x3f);
        return *cp <= 0x9f; /* C1 */
    }
    if (l == 3) {
        *cp = ((long)(u[0] & 0x0f) << 12) | ((long)(u[1] & 0x3f) << 6) | (u[2] & 0x3f);
        return *cp == 0x200e || *cp == 0x200f || (*cp >= 0x2028 && *cp <= 0x202e) ||
               (*cp >= 0x2066 && *cp <= 0x2069);
    }
    return false;
}

/* The text escape of an unsafe character into out (room for 24). */
static size_t text_escape(const char *s, size_t i, long cp, char *out)
{
    if (cp == '\\')
        return (size_t)snprintf(out, 24, "\\\\");
    if (cp == '\n' || cp == '\r' || cp == '\t')
        return (size_t)snprintf(out, 24, "\\%c", cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't');
    if (cp < 0 || cp < 0x80)
        return (size_t)snprintf(out, 24, "\\x%02x", (unsigned char)s[i]);
    return (size_t)snprintf(out, 24, "\\u{%04lx}", cp);
}

enum wh_err wh_term_escape(struct wh_buf *b, const char *s, size_t n)
{
    size_t run = 0, i = 0;
    while (i < n) {
        size_t len;
        long cp;
        if (!unsafe_at(s, n, i, &len, &cp)) {
            i += len;
            continue;
        }
        char esc[24];
        size_t el = text_escape(s, i, cp, esc);
        WH_TRY(wh_buf_addn(b, s + run, i - run));
        WH_TRY(wh_buf_addn(b, esc, el));
        i += len;
        run = i;
    }
    return wh_buf_addn(b, s + run, n - run);
}

size_t wh_term_escaped_len(const char *s, size_t n)
{
    size_t out = 0, i = 0;
    while (i < n) {
        size_t len;
        long cp;
        char esc[24];
        out += unsafe_at(s, n, i, &len, &cp) ? text_escape(s, i, cp, esc) : len;
        i += len;
    }
    return out;
}

enum wh_err wh_term_json(struct wh_buf *b, const char *json, size_t n)
{
    size_t run = 0, i = 0;
    while (i < n) {
        size_t len;
        long cp;
        /* A backslash or a C0 byte of a JSON text is its own escaping or
         * cannot be there: kept as it is. */
        if (!unsafe_at(json, n, i, &len, &cp) || (cp >= 0 && cp < 0x7f)) {
            i += len;
            continue;
        }
        char esc[24];
        snprintf(esc, sizeof(esc), "\\u%04lx", cp < 0 ? 0xfffdL : cp);
        WH_TRY(wh_buf_addn(b, json + run, i - run));
        WH_TRY(wh_buf_addn(b, esc, 6));
        i += len;
        run = i;
    }
    return wh_buf_addn(b, json + run, n - run);
}
