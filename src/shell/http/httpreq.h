/* httpreq.h: checks of an HTTP request made before libmicrohttpd reads its
 * body (shell; pure: no I/O, no globals).
 *
 * libmicrohttpd 0.9.75 accepts framing that proxies and servers disagree on
 * (two different Content-Length headers, Content-Length beside
 * Transfer-Encoding), waits for the peer to close on an unknown transfer
 * coding, takes a header with white space before its colon
 * ("Content-Length : 34") as another header, which it ignores, and routes "/healthz%00x" as "/healthz" because it cuts the
 * unescaped path at the NUL. The server feeds every request's raw URI and
 * header lines through these checks and answers a problem with 400 and
 * "Connection: close" (docs/deploy.md, "Hostile HTTP").
 */
#ifndef WH_HTTPREQ_H
#define WH_HTTPREQ_H

#include <stddef.h> /* size_t */

/* Request framing learnt from the header lines, one call per line. */
struct wh_http_framing {
    unsigned n_length;         /* Content-Length lines */
    unsigned long long length; /* the first one's value */
    unsigned n_coding;         /* Transfer-Encoding lines */
    const char *problem;       /* first problem found, static text; NULL: none */
};

void wh_http_framing_init(struct wh_http_framing *f);

/* One header line (name and value as received, not NUL-terminated). */
void wh_http_framing_add(struct wh_http_framing *f, const char *name, size_t name_len,
                         const char *value, size_t value_len);

/* After the last line: NULL when the framing is unambiguous, else why not
 * (static text for the Status message). */
const char *wh_http_framing_problem(struct wh_http_framing *f);

/* The raw request target as sent (before percent-decoding): NULL when it is
 * acceptable, else why not (static text). Refused: a NUL or another control
 * byte, raw or percent-encoded, in the path. */
const char *wh_http_target_problem(const char *raw, size_t len);

#endif /* WH_HTTPREQ_H */
