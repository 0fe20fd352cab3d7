/* fuzz_http.c: libFuzzer harness for the request checks in front of the
 * engine (src/shell/http/httpreq.c): the raw request target, the framing headers
 * and the routing of the decoded path.
 *
 * The input is a raw HTTP request. It is split the way libmicrohttpd splits
 * it (request line, header lines up to the blank line, "Name: value"), the
 * path is percent-decoded and cut at its first NUL as libmicrohttpd hands it
 * to the server, and the harness aborts when a verdict is wrong:
 *   - a target accepted whose decoded path holds a control byte (the server
 *     would route "/healthz%00x" as "/healthz");
 *   - framing accepted although an independent count finds two different
 *     Content-Length values, Content-Length beside Transfer-Encoding, or a
 *     transfer coding other than one "chunked"; or framing refused although
 *     that count finds none of these and every length is a plain number;
 *   - a route other than OTHER for a path that is not exactly that route
 *     (every row of the route table, wh/routes.h).
 *
 * Build and run (clang only), as fuzz_review.c explains, with the target
 * fuzz_http and the corpus tests/fuzz/http-corpus:
 *   build-fuzz/tests/fuzz/fuzz_http /tmp/http-corpus tests/fuzz/http-corpus \
 *       -dict=tests/fuzz/http.dict -max_len=4096 -max_total_time=180
 * The same function is linked into fuzz_http_replay (any compiler), which
 * ctest runs over the committed corpus.
 */
#include <stdbool.h> /* bool */
#include <stdint.h>  /* uint8_t */
#include <stdio.h>   /* fprintf */
#include <stdlib.h>  /* abort */
#include <string.h>  /* memchr */
#include <strings.h> /* strncasecmp */

#include "wh/hex.h"    /* wh_hex_digit */
#include "httpreq.h"   /* wh_http_* */
#include "wh/routes.h" /* wh_route_find, wh_routes */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...)                                             \
    do {                                                             \
        if (!(cond)) {                                               \
            fprintf(stderr, "fuzz_http: check failed: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__);                            \
            fputc('\n', stderr);                                     \
            abort();                                                 \
        }                                                            \
    } while (0)

#define MAX_LINE 4096

/* The next line of [*p, end) without its CR LF (or LF); false at the end. */
static bool next_line(const char **p, const char *end, const char **line, size_t *len)
{
    if (*p >= end)
        return false;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl ? nl : end;
    *line = *p;
    *len = (size_t)(stop - *p);
    if (*len && (*line)[*len - 1] == '\r')
        (*len)--;
    *p = nl ? nl + 1 : end;
    return true;
}

/* The path as the server's handler sees it: the target up to '?',
 * percent-decoded; *had_control when a decoded byte is a control byte. */
static void decode_path(const char *t, size_t len, char *out, bool *had_control)
{
    size_t o = 0;
    *had_control = false;
    for (size_t i = 0; i < len && t[i] != '?'; i++) {
        unsigned char c = (unsigned char)t[i];
        int hi = i + 2 < len ? wh_hex_digit(t[i + 1]) : -1;
        int lo = i + 2 < len ? wh_hex_digit(t[i + 2]) : -1;
        if (c == '%' && hi >= 0 && lo >= 0) {
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        }
        if (c < 0x20 || c == 0x7f)
            *had_control = true;
        out[o++] = (char)c;
    }
    out[o] = '\0'; /* a decoded NUL cuts it here too, as in libmicrohttpd */
}

static bool is_digits(const char *v, size_t len)
{
    if (!len || len > 18)
        return false;
    for (size_t i = 0; i < len; i++)
        if (v[i] < '0' || v[i] > '9')
            return false;
    return true;
}

/* The framing facts, counted apart from httpreq.c. */
struct count {
    unsigned lengths, codings;
    bool bad_length, distinct_lengths, bad_coding;
    bool spaced_name; /* white space before a colon (RFC 9112 section 5.1) */
    char first[19];
};

static void trim(const char **v, size_t *len)
{
    while (*len && (**v == ' ' || **v == '\t'))
        (*v)++, (*len)--;
    while (*len && ((*v)[*len - 1] == ' ' || (*v)[*len - 1] == '\t'))
        (*len)--;
}

static void count_header(struct count *k, const char *name, size_t nlen, const char *v, size_t vlen)
{
    trim(&v, &vlen);
    if (nlen && (name[nlen - 1] == ' ' || name[nlen - 1] == '\t'))
        k->spaced_name = true;
    while (nlen && (name[nlen - 1] == ' ' || name[nlen - 1] == '\t'))
        nlen--; /* the name libmicrohttpd's lookups would not match */
    if (nlen == 14 && !strncasecmp(name, "content-length", 14)) {
        if (!is_digits(v, vlen)) {
            k->bad_length = true;
        } else {
            /* compare as numbers: leading zeros make equal values */
            while (vlen > 1 && *v == '0')
                v++, vlen--;
            if (!k->lengths || k->bad_length) {
                memcpy(k->first, v, vlen);
                k->first[vlen] = '\0';
            } else if (strlen(k->first) != vlen || memcmp(k->first, v, vlen)) {
                k->distinct_lengths = true;
            }
        }
        k->lengths++;
    } else if (nlen == 17 && !strncasecmp(name, "transfer-encoding", 17)) {
        if (k->codings || vlen != 7 || strncasecmp(v, "chunked", 7))
            k->bad_coding = true;
        k->codings++;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size, *line;
    size_t len;
    if (!next_line(&p, end, &line, &len) || len >= MAX_LINE)
        return 0;
    /* Request line: METHOD SP target SP version. */
    const char *sp1 = memchr(line, ' ', len);
    if (!sp1)
        return 0;
    const char *target = sp1 + 1;
    const char *sp2 = memchr(target, ' ', len - (size_t)(target - line));
    size_t tlen = sp2 ? (size_t)(sp2 - target) : len - (size_t)(target - line);
    char path[MAX_LINE + 1];
    bool had_control;
    decode_path(target, tlen, path, &had_control);
    const char *target_problem = wh_http_target_problem(target, tlen);
    CHECK(target_problem || !had_control, "target \"%.*s\" accepted with a control byte", (int)tlen,
          target);

    /* Judged against the route table itself (wh/routes.h), so that a route
     * added there is fuzzed without a second list to keep (a list here
     * lacked /debug/slices, and every run crashed on it within seconds). */
    enum wh_mpath route = wh_route_find(path);
    CHECK(route == WH_MPATH_OTHER || (route < WH_MPATH__COUNT && wh_routes[route].path &&
                                      !strcmp(wh_routes[route].path, path)),
          "path \"%s\" routed to %d", path, (int)route);

    struct wh_http_framing f;
    wh_http_framing_init(&f);
    struct count k;
    memset(&k, 0, sizeof(k));
    while (next_line(&p, end, &line, &len) && len) {
        const char *colon = memchr(line, ':', len);
        if (!colon || colon == line)
            return 0; /* libmicrohttpd answers this itself */
        size_t nlen = (size_t)(colon - line);
        wh_http_framing_add(&f, line, nlen, colon + 1, len - nlen - 1);
        count_header(&k, line, nlen, colon + 1, len - nlen - 1);
    }
    const char *problem = wh_http_framing_problem(&f);
    bool ambiguous = k.distinct_lengths || (k.lengths && k.codings) || k.bad_coding || k.spaced_name;
    CHECK(!ambiguous || problem, "ambiguous framing accepted (%u lengths, %u codings)", k.lengths,
          k.codings);
    CHECK(ambiguous || k.bad_length || !problem, "plain framing refused: %s", problem);
    return 0;
}
