/* utf8.h: UTF-8 facts every answer relies on (valid JSON in valid UTF-8).
 * Pure functions over borrowed bytes; nothing is allocated. */
#ifndef WH_UTF8_H
#define WH_UTF8_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

/* Length (1-4) of the well-formed UTF-8 character at s[0..n), or 0 when the
 * bytes there are not one (a stray continuation byte, an overlong form, a
 * surrogate, past U+10FFFF, or cut short by n). */
size_t wh_utf8_char_len(const char *s, size_t n);

/* True when no byte of s[0..n) is 0x80 or above: the bytes are UTF-8 as
 * they are, with nothing to validate (a word at a time). */
bool wh_utf8_is_ascii(const char *s, size_t n);

/* Length of the longest prefix of the string s that is at most max bytes and
 * does not end inside a character: printf("%.*s", (int)wh_utf8_cut(s, 64), s)
 * instead of "%.64s", which can cut a character in half. Stops at the NUL. */
size_t wh_utf8_cut(const char *s, size_t max);

/* Shorten the NUL-terminated text in buf (at most size bytes, NUL included)
 * so that it does not end inside a character: for text that snprintf cut at
 * size - 1 bytes. */
void wh_utf8_trim_cut(char *buf, size_t size);

#endif /* WH_UTF8_H */
