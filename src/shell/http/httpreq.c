/* httpreq.c: request checks made before libmicrohttpd reads a body (see
 * httpreq.h). */
#include "httpreq.h"

#include <stdbool.h> /* bool */
#include <string.h>  /* memset, strlen */
#include <strings.h> /* strncasecmp */

#include "wh/hex.h" /* wh_hex_digit */

void wh_http_framing_init(struct wh_http_framing *f)
{
    memset(f, 0, sizeof(*f));
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Trim optional white space around a header value. */
static void trim(const char **v, size_t *len)
{
    while (*len && is_ows(**v))
        (*v)++, (*len)--;
    while (*len && is_ows((*v)[*len - 1]))
        (*len)--;
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && !strncasecmp(name, want, len);
}

/* A Content-Length value: 1 to 18 digits and nothing else (18 digits never
 * overflow; no request body comes near). */
static bool read_length(const char *v, size_t len, unsigned long long *out)
{
    if (!len || len > 18)
        return false;
    unsigned long long n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        n = n * 10 + (unsigned long long)(v[i] - '0');
    }
    *out = n;
    return true;
}

static void fail(struct wh_http_framing *f, const char *why)
{
    if (!f->problem)
        f->problem = why;
}

void wh_http_framing_add(struct wh_http_framing *f, const char *name, size_t name_len,
                         const char *value, size_t value_len)
{
    trim(&value, &value_len);
    /* libmicrohttpd 0.9.75 keeps white space before the colon in the name
     * ("Content-Length " for "Content-Length : 34") and then ignores the
     * header for framing, where a proxy may use it: RFC 9112 section 5.1
     * requires a 400. Named like libmicrohttpd (case-insensitive) once
     * trimmed, so the framing counts stay right. */
    size_t bare = name_len;
    while (bare && is_ows(name[bare - 1]))
        bare--;
    if (bare != name_len)
        fail(f, "white space between a header name and its colon (RFC 9112, section 5.1)");
    name_len = bare;
    if (name_is(name, name_len, "Content-Length")) {
        unsigned long long n = 0;
        if (!read_length(value, value_len, &n))
            fail(f, "Content-Length is not a decimal number of bytes");
        else if (f->n_length && n != f->length)
            fail(f, "two different Content-Length headers");
        if (!f->n_length++)
            f->length = n;
    } else if (name_is(name, name_len, "Transfer-Encoding")) {
        /* Only a single "chunked": anything else (gzip, "gzip, chunked",
         * chunked twice) has a body length libmicrohttpd cannot find. */
        if (f->n_coding++ || !name_is(value, value_len, "chunked"))
            fail(f, "unsupported Transfer-Encoding (only a single \"chunked\" is accepted)");
    }
}

const char *wh_http_framing_problem(struct wh_http_framing *f)
{
    if (f->n_length && f->n_coding)
        fail(f, "Content-Length together with Transfer-Encoding");
    return f->problem;
}

static bool is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

const char *wh_http_target_problem(const char *raw, size_t len)
{
    for (size_t i = 0; i < len && raw[i] != '?'; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (is_control(c))
            return "control character in the request path";
        if (c == '%' && i + 2 < len) {
            int hi = wh_hex_digit(raw[i + 1]), lo = wh_hex_digit(raw[i + 2]);
            if (hi >= 0 && lo >= 0 && is_control((unsigned char)(hi * 16 + lo)))
                return "percent-encoded control character (such as %00) in the request path";
        }
    }
    return NULL;
}
