/* term.h: text from others (pod names, env values, an API server's error
 * body) made safe to show on a terminal: nothing in it can move the cursor,
 * clear the screen, set the window title, hide or reorder what follows.
 *
 * Written as a visible escape: C0 controls and DEL (\n, \r, \t, else \xHH),
 * every byte that is not part of a UTF-8 character (\xHH), the C1 controls
 * U+0080..U+009F (terminals take U+009B as CSI) and the characters that
 * break lines or reorder text (U+2028, U+2029, the bidirectional marks and
 * overrides U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) as \u{HHHH};
 * the backslash doubled, so that an escape cannot be forged. Everything
 * else, UTF-8 included, is kept. Pure; appends to a wh_buf.
 */
#ifndef WH_TERM_H
#define WH_TERM_H

#include <stddef.h> /* size_t */

#include "wh/buf.h" /* struct wh_buf */
#include "wh/err.h" /* enum wh_err */

/* Append s[0..n) escaped as above. WH_ERR_NOMEM / WH_ERR_TOOBIG (buf.h). */
WH_NODISCARD enum wh_err wh_term_escape(struct wh_buf *b, const char *s, size_t n);
/* The length wh_term_escape would append for s[0..n). */
size_t wh_term_escaped_len(const char *s, size_t n);

/* Append the JSON text json[0..n) (valid UTF-8, as wh_json_write writes it)
 * with DEL and the characters above inside its strings written as \u00HH /
 * \uHHHH (C0 controls are escaped by every JSON writer already): the same
 * JSON value, safe on a terminal. Bytes that are not UTF-8 become \ufffd. */
WH_NODISCARD enum wh_err wh_term_json(struct wh_buf *b, const char *json, size_t n);

#endif /* WH_TERM_H */
