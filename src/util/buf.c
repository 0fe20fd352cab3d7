/* buf.c: bounded growable buffer. */
#include "wh/buf.h"

#include <stdarg.h>  /* va_list */
#include <stdbool.h> /* bool */
#include <stdint.h>  /* uint64_t */
#include <stdio.h>   /* vsnprintf */
#include <string.h>  /* memcpy */
#include "wh/mem.h"  /* wh_free */
/* SSE2 (part of x86-64) for the escaping scan, except in a -DWH_PORTABLE=ON
 * build, which tests the portable twin of every SIMD path. */
#if defined(__SSE2__) && !defined(WH_PORTABLE)
#define WH_BUF_SSE2 1
#include <emmintrin.h> /* _mm_* */
#else
#define WH_BUF_SSE2 0
#endif
/* The AVX2 scan of long runs is built on x86-64 by gcc and clang (function
 * target attributes) and used when the CPU has AVX2, as in b64.c. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(WH_PORTABLE)
#define WH_BUF_AVX2 1
#include <immintrin.h> /* _mm256_* */
#else
#define WH_BUF_AVX2 0
#endif

#include "wh/utf8.h" /* wh_utf8_char_len */

void wh_buf_init(struct wh_buf *b, size_t max)
{
    b->ptr = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void wh_buf_free(struct wh_buf *b)
{
    if (!b)
        return;
    wh_free(b->ptr);
    b->ptr = NULL;
    b->len = 0;
    b->cap = 0;
}

void wh_buf_reset(struct wh_buf *b)
{
    b->len = 0;
    if (b->ptr)
        b->ptr[0] = '\0';
}

/* A failed append frees the buffer, so callers can bail out with no cleanup. */
static enum wh_err fail(struct wh_buf *b, enum wh_err err)
{
    wh_buf_free(b);
    return err;
}

enum wh_err wh_buf_reserve(struct wh_buf *b, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return fail(b, WH_ERR_TOOBIG);
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return WH_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
    if (cap > b->max + 1)
        cap = b->max + 1;
    char *p = wh_realloc(b->ptr, cap);
    if (!p)
        return fail(b, WH_ERR_NOMEM);
    if (!b->ptr)
        p[0] = '\0'; /* a fresh block: keep "always NUL-terminated" (buf.h) */
    b->ptr = p;
    b->cap = cap;
    return WH_OK;
}

enum wh_err wh_buf_addn_grow(struct wh_buf *b, const void *p, size_t n)
{
    enum wh_err err = wh_buf_reserve(b, n);
    if (err)
        return err;
    if (n)
        memcpy(b->ptr + b->len, p, n);
    b->len += n;
    b->ptr[b->len] = '\0';
    return WH_OK;
}

enum wh_err wh_buf_addu(struct wh_buf *b, unsigned long v)
{
    char digits[24];
    size_t n = sizeof(digits);
    do {
        digits[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return wh_buf_addn(b, digits + n, sizeof(digits) - n);
}

enum wh_err wh_buf_vaddf(struct wh_buf *b, const char *fmt, va_list ap)
{
    char small[256];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    enum wh_err err = WH_OK;
    if (n < 0)
        err = fail(b, WH_ERR_INVALID);
    else if ((size_t)n < sizeof(small))
        err = wh_buf_addn(b, small, (size_t)n);
    else if (!(err = wh_buf_reserve(b, (size_t)n))) {
        vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
    return err;
}

enum wh_err wh_buf_addf(struct wh_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum wh_err err = wh_buf_vaddf(b, fmt, ap);
    va_end(ap);
    return err;
}

/* Bytes that JSON strings must escape: control characters, '"' and '\\'. */
static const unsigned char must_escape[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x00 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20: '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x30 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x40 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x50: '\\' */
};

/* Whether any of 8 bytes is < 0x20, '"', '\\' or not ASCII (exact; the
 * classic "has a byte less than n / equal to c" word tricks). Address lists
 * of large slices are hundreds of KiB of plain ASCII, so they are scanned a
 * word at a time. */
static bool word_needs_look(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    return (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((bs - ones) & ~bs) | w) & highs;
}

#if WH_BUF_AVX2
/* copy_plain's bulk, 32 bytes per test: stored, then judged (a signed
 * compare with 0x20 catches control characters and non-ASCII bytes). The
 * address lists of a 256-host TPU7x patch are ~400 KB of such runs: half the
 * instructions of the SSE2 loop. Returns the index of the first byte to look
 * at, or where fewer than 32 bytes remain. */
__attribute__((target("avx2"))) static size_t copy_plain_avx2(char *out, const char *s, size_t i,
                                                              size_t n)
{
    const __m256i space = _mm256_set1_epi8(0x20), quote = _mm256_set1_epi8('"'),
                  bslash = _mm256_set1_epi8('\\');
    while (i + 32 <= n) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
        _mm256_storeu_si256((__m256i *)(void *)out, v);
        __m256i look = _mm256_or_si256(_mm256_cmpgt_epi8(space, v),
                                       _mm256_or_si256(_mm256_cmpeq_epi8(v, quote),
                                                       _mm256_cmpeq_epi8(v, bslash)));
        unsigned mask = (unsigned)_mm256_movemask_epi8(look);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
        i += 32;
        out += 32;
    }
    return i;
}
#endif

/* Copy s[i..) to out up to the first byte that is not plain ASCII to copy
 * as it is (or the end); returns its index. out has room for n - i bytes.
 * Copying while scanning reads the text once: the patch of a 256-host TPU7x
 * pod is 263 KB of such runs. */
static size_t copy_plain(char *out, const char *s, size_t i, size_t n)
{
#if WH_BUF_AVX2
    if (n - i >= 64 && __builtin_cpu_supports("avx2")) { /* long runs only */
        size_t j = copy_plain_avx2(out, s, i, n);
        out += j - i;
        i = j;
    }
#endif
#if WH_BUF_SSE2
    /* 16 bytes per test (SSE2 is part of x86-64), stored before they are
     * judged (the room is there): a signed compare with 0x20 catches both
     * control characters and non-ASCII bytes. */
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        _mm_storeu_si128((__m128i *)(void *)out, v);
        __m128i look = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                    _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                 _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
        unsigned mask = (unsigned)_mm_movemask_epi8(look);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
        i += 16;
        out += 16;
    }
#else
    while (i + 16 <= n) { /* two words per test: long runs go faster */
        uint64_t w, x;
        memcpy(&w, s + i, 8);
        memcpy(&x, s + i + 8, 8);
        if (word_needs_look(w) || word_needs_look(x))
            break;
        memcpy(out, s + i, 16);
        i += 16;
        out += 16;
    }
#endif
    while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (word_needs_look(w))
            break;
        memcpy(out, &w, 8);
        i += 8;
        out += 8;
    }
    for (; i < n && (unsigned char)s[i] < 0x80 && !must_escape[(unsigned char)s[i]]; i++)
        *out++ = s[i];
    return i;
}

/* The escape of c (< 0x80, must_escape) into esc; returns its length. */
static size_t escape_of(unsigned char c, char esc[static 6])
{
    static const char hex[] = "0123456789abcdef";
    esc[0] = '\\';
    switch (c) {
    case '"': esc[1] = '"'; return 2;
    case '\\': esc[1] = '\\'; return 2;
    case '\n': esc[1] = 'n'; return 2;
    case '\r': esc[1] = 'r'; return 2;
    case '\t': esc[1] = 't'; return 2;
    case '\b': esc[1] = 'b'; return 2;
    case '\f': esc[1] = 'f'; return 2;
    default:
        memcpy(esc + 1, "u00", 3);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        return 6;
    }
}

enum wh_err wh_buf_add_json_escaped(struct wh_buf *b, const char *s, size_t n)
{
    if (n == 0)
        return wh_buf_addn(b, s, 0);
    size_t i = 0;
    while (i < n) {
        /* Room for the rest as it is (the answer is never shorter), so the
         * plain bytes go straight in; an escape may grow the buffer. */
        if (b->cap - b->len <= n - i) /* the room (and its NUL) is mostly there */
            WH_TRY(wh_buf_reserve(b, n - i));
        size_t j = copy_plain(b->ptr + b->len, s, i, n);
        b->len += j - i;
        i = j;
        if (i >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        size_t len = c >= 0x80 ? wh_utf8_char_len(s + i, n - i) : 0;
        if (len) { /* a whole character, as it is */
            memcpy(b->ptr + b->len, s + i, len);
            b->len += len;
            i += len;
            continue;
        }
        char esc[6];
        size_t elen = 6;
        if (c >= 0x80) /* not UTF-8: U+FFFD per byte, as Go's encoding/json
                        * writes it, so that every answer is valid UTF-8 */
            memcpy(esc, "\\ufffd", 6);
        else
            elen = escape_of(c, esc);
        WH_TRY(wh_buf_addn(b, esc, elen));
        i++;
    }
    b->ptr[b->len] = '\0';
    return WH_OK;
}

enum wh_err wh_buf_add_json_string(struct wh_buf *b, const char *s, size_t n)
{
    /* A patch and its answer hold ~50 short strings (keys, names, paths)
     * that need no escape: one room check and one scan each, the quotes
     * written in place; the first escape hands the rest to the general
     * loop. */
    if (b->cap - b->len <= n + 2)
        WH_TRY(wh_buf_reserve(b, n + 2));
    char *out = b->ptr + b->len;
    *out = '"';
    size_t i = copy_plain(out + 1, s, 0, n);
    b->len += 1 + i;
    if (i < n)
        WH_TRY(wh_buf_add_json_escaped(b, s + i, n - i));
    return wh_buf_addc(b, '"');
}

const char *wh_buf_ptr(const struct wh_buf *b)
{
    return b->ptr ? b->ptr : "";
}

char *wh_buf_take(struct wh_buf *b, size_t *len)
{
    char *p = b->ptr;
    if (len)
        *len = b->len;
    if (!p)
        p = wh_calloc(1, 1);
    b->ptr = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}
