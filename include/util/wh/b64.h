/* b64.h: standard base64 (RFC 4648, with padding). */
#ifndef WH_B64_H
#define WH_B64_H

#include <stddef.h> /* size_t */

#include "wh/buf.h" /* struct wh_buf */

/* Append the base64 encoding of n bytes to b (with AVX2 where the CPU has
 * it). */
WH_NODISCARD enum wh_err wh_b64_encode(struct wh_buf *b, const void *data, size_t n);
/* The same bytes without vector instructions: what wh_b64_encode does on a
 * CPU without AVX2, so that tests compare the two on any machine. */
WH_NODISCARD enum wh_err wh_b64_encode_portable(struct wh_buf *b, const void *data, size_t n);
/* Append the decoding of n base64 characters (padding optional, no white
 * space) to b. WH_ERR_INVALID on a bad character or length. */
WH_NODISCARD enum wh_err wh_b64_decode(struct wh_buf *b, const char *text, size_t n);

#endif
