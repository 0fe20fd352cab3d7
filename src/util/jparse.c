/* jparse.c: RFC 8259 JSON into cJSON trees (see jparse.h). */
#include "wh/jparse.h"

#include <float.h>   /* FLT_EVAL_METHOD */
#include <limits.h>  /* INT_MAX, INT_MIN */
#include <locale.h>  /* localeconv */
#include <stdbool.h> /* bool */
#include <stdint.h>  /* uint64_t, uintptr_t */
#include <stdlib.h>  /* strtod */
#include <string.h>  /* memcmp, memcpy, memset */
/* SSE2 (part of x86-64) for the string scans, except in a -DWH_PORTABLE=ON
 * build, which tests the portable twin. */
#if defined(__SSE2__) && !defined(WH_PORTABLE)
#define WH_JPARSE_SSE2 1
#include <emmintrin.h> /* _mm_* */
#else
#define WH_JPARSE_SSE2 0
#endif

#include "wh/mem.h" /* wh_malloc, wh_free, wh_mem_bulk */

/* Blocks nodes and strings are carved from when memory goes in bulk: the
 * first twice the text (a pod review has a 64-byte node every 30-40 bytes,
 * plus its strings), later ones double up to SLAB_MAX. */
#define SLAB_MIN ((size_t)1024)
#define SLAB_MAX ((size_t)64 * 1024)

typedef const unsigned char *pos;

struct jp {
    pos end;
    bool bulk;          /* carve from slabs (wh_mem_bulk) */
    unsigned char *cur; /* free bytes of the current slab */
    size_t left, slab;  /* their number; the next slab's size */
    enum wh_err err;    /* WH_ERR_INVALID or WH_ERR_NOMEM after a failure */
    pos bad;            /* the byte an invalid text fails at */
};

static pos invalid(struct jp *j, pos p)
{
    j->err = WH_ERR_INVALID;
    j->bad = p;
    return NULL;
}

static pos nomem(struct jp *j)
{
    j->err = WH_ERR_NOMEM;
    return NULL;
}

/* ---- memory ------------------------------------------------------------- */

static void *new_slab(struct jp *j, size_t n)
{
    if (n > j->slab / 4) /* a long string gets a block of its own */
        return wh_malloc(n);
    unsigned char *s = wh_malloc(j->slab);
    if (!s)
        return NULL;
    j->cur = s + n;
    j->left = j->slab - n;
    if (j->slab < SLAB_MAX)
        j->slab *= 2;
    return s;
}

/* n bytes aligned to align (a power of two): one block each from the heap,
 * or the next bytes of the current slab. */
static inline void *take(struct jp *j, size_t n, size_t align)
{
    if (!j->bulk)
        return wh_malloc(n);
    size_t pad = (size_t)(-(uintptr_t)j->cur) & (align - 1);
    if (pad + n > j->left)
        return new_slab(j, n);
    void *r = j->cur + pad;
    j->cur += pad + n;
    j->left -= pad + n;
    return r;
}

/* Give back a string block of got bytes of which used are kept (used 0: all
 * of it, it is not in the tree). */
static void give_back(struct jp *j, char *p, size_t used, size_t got)
{
    if (!j->bulk) {
        if (!used)
            wh_free(p);
    } else if ((unsigned char *)p + got == j->cur) {
        j->cur -= got - used;
        j->left += got - used;
    }
}

static inline cJSON *new_node(struct jp *j)
{
    cJSON *n = take(j, sizeof(*n), _Alignof(cJSON));
    if (n)
        memset(n, 0, sizeof(*n));
    return n;
}

/* ---- strings ------------------------------------------------------------ */

#if !WH_JPARSE_SSE2
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* Nonzero when a byte of w is '"', '\\' or below 0x20. */
static inline uint64_t word_special(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w)) & HIGHS;
}
#endif

#if WH_JPARSE_SSE2
/* Bit i set when byte i of v stops a run of plain string bytes: '"', '\\'
 * or a control character. */
static inline unsigned special16(__m128i v)
{
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                            _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                               _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v));
    return (unsigned)_mm_movemask_epi8(hit);
}

static inline __m128i load16(pos p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}
#endif

/* The first byte in [p, end) that a run of plain string bytes stops at ('"',
 * '\\' or a control character), or end: 16 bytes per test with SSE2. */
static inline pos scan(pos p, pos end)
{
#if WH_JPARSE_SSE2
    while (end - p >= 16) {
        unsigned mask = special16(load16(p));
        if (mask)
            return p + __builtin_ctz(mask);
        p += 16;
    }
#else
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        if (word_special(w))
            break;
        p += 8;
    }
#endif
    while (p < end && *p != '"' && *p != '\\' && *p >= 0x20)
        p++;
    return p;
}

/* Value of four hex digits, or -1. */
static inline long hex4(pos h)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = h[i], d = c - '0';
        if (d > 9) {
            d = (c | 0x20) - 'a';
            if (d > 5)
                return -1;
            d += 10;
        }
        v = v << 4 | (long)d;
    }
    return v;
}

/* Decode the \u escape at r (before close) into *o as UTF-8, as cJSON does:
 * a surrogate pair is one character, a lone surrogate is refused, \u0000
 * is a NUL byte. The byte after the escape, or NULL. */
static pos unicode(struct jp *j, pos r, pos close, unsigned char **o)
{
    long u = close - r >= 6 ? hex4(r + 2) : -1;
    pos after = r + 6;
    if (u < 0 || (u >= 0xDC00 && u <= 0xDFFF))
        return invalid(j, r);
    if (u >= 0xD800 && u <= 0xDBFF) {
        long lo = close - r >= 12 && r[6] == '\\' && r[7] == 'u' ? hex4(r + 8) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return invalid(j, r);
        u = 0x10000 + ((u & 0x3FF) << 10 | (lo & 0x3FF));
        after = r + 12;
    }
    unsigned char *d = *o;
    if (u < 0x80) {
        *d++ = (unsigned char)u;
    } else if (u < 0x800) {
        *d++ = (unsigned char)(0xC0 | u >> 6);
        *d++ = (unsigned char)(0x80 | (u & 0x3F));
    } else if (u < 0x10000) {
        *d++ = (unsigned char)(0xE0 | u >> 12);
        *d++ = (unsigned char)(0x80 | (u >> 6 & 0x3F));
        *d++ = (unsigned char)(0x80 | (u & 0x3F));
    } else {
        *d++ = (unsigned char)(0xF0 | u >> 18);
        *d++ = (unsigned char)(0x80 | (u >> 12 & 0x3F));
        *d++ = (unsigned char)(0x80 | (u >> 6 & 0x3F));
        *d++ = (unsigned char)(0x80 | (u & 0x3F));
    }
    *o = d;
    return after;
}

/* Decode the string bytes [r, close) (escapes included, no raw control
 * character) into o; the end of the output, or NULL. */
static unsigned char *decode(struct jp *j, pos r, pos close, unsigned char *o)
{
    for (;;) {
        pos t = scan(r, close); /* only a backslash can stop it before close */
        memcpy(o, r, (size_t)(t - r));
        o += t - r;
        r = t;
        if (r == close)
            return o;
        char c = 0;
        switch (r[1]) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case '/': c = '/'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u':
            if (!(r = unicode(j, r, close, &o)))
                return NULL;
            continue;
        default: invalid(j, r); return NULL;
        }
        *o++ = (unsigned char)c;
        r += 2;
    }
}

/* A string with escapes from p, q its first backslash (or whatever stopped
 * the scan): find the closing quote, then decode into a block as long as
 * the escaped text (no escape is shorter than what it stands for). */
static pos escaped(struct jp *j, pos p, pos q, char **out)
{
    while (q < j->end && *q == '\\') {
        if (j->end - q < 2)
            return invalid(j, j->end);
        q = scan(q + 2, j->end);
    }
    if (q == j->end || *q != '"') /* unterminated, or a raw control character */
        return invalid(j, q);
    size_t span = (size_t)(q - p);
    char *d = take(j, span + 1, 1);
    if (!d)
        return nomem(j);
    unsigned char *o = decode(j, p, q, (unsigned char *)d);
    if (!o) {
        give_back(j, d, 0, span + 1);
        return NULL;
    }
    *o = '\0';
    give_back(j, d, (size_t)(o - (unsigned char *)d) + 1, span + 1);
    *out = d;
    return q + 1;
}

/* The string whose first byte is at p (after the quote) into *out; the
 * byte after its closing quote, or NULL. */
static inline pos string(struct jp *j, pos p, char **out)
{
#if WH_JPARSE_SSE2
    /* Most keys and values end within 16 bytes: with room in the slab, the
     * bytes just tested are stored as they are (what follows the string's
     * NUL there is free space) and no memcpy is called. */
    if (j->left >= 16 && j->end - p >= 16) {
        __m128i v = load16(p);
        unsigned mask = special16(v);
        unsigned n = mask ? (unsigned)__builtin_ctz(mask) : 16;
        if (n < 16 && p[n] == '"') {
            char *d = (char *)j->cur;
            _mm_storeu_si128((__m128i *)(void *)d, v);
            d[n] = '\0';
            j->cur += n + 1;
            j->left -= n + 1;
            *out = d;
            return p + n + 1;
        }
    }
#endif
    pos q = scan(p, j->end);
    if (q == j->end || *q != '"')
        return escaped(j, p, q, out);
    size_t n = (size_t)(q - p);
    char *d = take(j, n + 1, 1);
    if (!d)
        return nomem(j);
    memcpy(d, p, n);
    d[n] = '\0';
    *out = d;
    return q + 1;
}

/* ---- numbers ------------------------------------------------------------ */

static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* strtod of the n bytes at s, with the locale's decimal point as cJSON
 * does (strtod reads it); false on OOM. */
static bool slow_double(pos s, size_t n, double *d)
{
    char small[64], *t = n < sizeof(small) ? small : wh_malloc(n + 1);
    if (!t)
        return false;
    char point = localeconv()->decimal_point[0];
    for (size_t i = 0; i < n; i++)
        t[i] = s[i] == '.' ? point : (char)s[i];
    t[n] = '\0';
    *d = strtod(t, NULL);
    if (t != small)
        wh_free(t);
    return true;
}

#define DIGIT(c) ((unsigned)(c) - '0' < 10)

/* The number at p (RFC 8259's grammar) into item; the byte after it, or
 * NULL. Up to 19 digits with a power of ten up to 22 make a double with
 * one correctly rounded operation (both operands exact: Clinger's fast
 * path); anything else goes to strtod. */
static pos number(struct jp *j, pos p, cJSON *item)
{
    pos s = p, end = j->end;
    bool neg = *p == '-';
    p += neg;
    if (p == end || !DIGIT(*p))
        return invalid(j, p);
    uint64_t m = 0;
    long nd = 0, exp10 = 0;
    if (*p == '0')
        p++;
    else
        for (; p < end && DIGIT(*p); p++, nd++)
            m = m * 10 + (unsigned)(*p - '0');
    if (p < end && *p == '.') {
        if (++p == end || !DIGIT(*p))
            return invalid(j, p);
        for (; p < end && DIGIT(*p); p++, nd++, exp10--)
            m = m * 10 + (unsigned)(*p - '0');
    }
    if (p < end && (*p | 0x20) == 'e') {
        bool eneg = ++p < end && *p == '-';
        p += p < end && (*p == '-' || *p == '+');
        if (p == end || !DIGIT(*p))
            return invalid(j, p);
        long e = 0;
        for (; p < end && DIGIT(*p); p++)
            if (e < 100000) /* far past any double's range either way */
                e = e * 10 + (*p - '0');
        exp10 += eneg ? -e : e;
    }
    if (p < end && (DIGIT(*p) || *p == '.' || *p == '-' || *p == '+' || (*p | 0x20) == 'e'))
        return invalid(j, p); /* "01", "1.2.3", "1e5e5" */
    double d;
    if (FLT_EVAL_METHOD == 0 && nd <= 19 && m <= (uint64_t)1 << 53 && exp10 >= -22 && exp10 <= 22) {
        d = exp10 < 0 ? (double)m / exact_pow10[-exp10] : (double)m * exact_pow10[exp10];
        d = neg ? -d : d;
    } else if (!slow_double(s, (size_t)(p - s), &d)) {
        return nomem(j);
    }
    item->type = cJSON_Number;
    item->valuedouble = d;
    /* cJSON's saturation */
    item->valueint = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    return p;
}

/* ---- values ------------------------------------------------------------- */

static pos skip_ws_run(pos p, pos end)
{
#if WH_JPARSE_SSE2
    /* Indentation: 16 bytes per test. */
    while (end - p >= 16) {
        __m128i v = load16(p);
        __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                                               _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                                  _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')),
                                               _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))));
        unsigned other = ~(unsigned)_mm_movemask_epi8(ws) & 0xFFFF;
        if (other)
            return p + __builtin_ctz(other);
        p += 16;
    }
#endif
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* White space is rare between tokens of the API server's compact JSON, and
 * a single space (after ':' or ',') the most common run elsewhere. */
static inline pos skip_ws(pos p, pos end)
{
    if (p<end && * p> ' ')
        return p;
    if (end - p >= 2 && *p == ' ' && p[1] > ' ')
        return p + 1;
    return skip_ws_run(p, end);
}

/* A value that is not a container, at p, into item. */
static pos scalar(struct jp *j, pos p, cJSON *item)
{
    size_t n = (size_t)(j->end - p);
    switch (*p) {
    case '"': item->type = cJSON_String; return string(j, p + 1, &item->valuestring);
    case 't':
        if (n < 4 || memcmp(p, "true", 4))
            return invalid(j, p);
        item->type = cJSON_True;
        item->valueint = 1; /* as cJSON sets it */
        return p + 4;
    case 'f':
        if (n < 5 || memcmp(p, "false", 5))
            return invalid(j, p);
        item->type = cJSON_False;
        return p + 5;
    case 'n':
        if (n < 4 || memcmp(p, "null", 4))
            return invalid(j, p);
        item->type = cJSON_NULL;
        return p + 4;
    default: return *p == '-' || DIGIT(*p) ? number(j, p, item) : invalid(j, p);
    }
}

static inline char closer(const cJSON *c)
{
    return c->type == cJSON_Object ? '}' : ']';
}

/* A new last child of parent (cJSON's links: first->prev is the last), and
 * for an object its key and colon, read from *p on. */
static inline cJSON *member(struct jp *j, pos *p, cJSON *parent)
{
    cJSON *n = new_node(j);
    if (!n)
        return nomem(j), NULL;
    cJSON *first = parent->child;
    if (!first) {
        parent->child = n;
        n->prev = n;
    } else {
        n->prev = first->prev;
        first->prev->next = n;
        first->prev = n;
    }
    if (parent->type != cJSON_Object)
        return n;
    pos q = skip_ws(*p, j->end);
    if (q == j->end || *q != '"')
        return invalid(j, q), NULL;
    if (!(q = string(j, q + 1, &n->string)))
        return NULL;
    q = skip_ws(q, j->end);
    if (q == j->end || *q != ':')
        return invalid(j, q), NULL;
    *p = q + 1;
    return n;
}

/* After a complete value: a comma (the next member: *item) or the closing
 * bracket of the innermost open container, which completes it in turn.
 * An open container keeps its parent in ->next, which is NULL until its
 * next sibling comes, after it closes: depth costs no stack. */
static pos next_member(struct jp *j, pos p, cJSON **parent, unsigned *depth, cJSON **item)
{
    while (*parent) {
        p = skip_ws(p, j->end);
        if (p == j->end)
            return invalid(j, p);
        if (*p == ',') {
            p++;
            return (*item = member(j, &p, *parent)) ? p : NULL;
        }
        if (*p != closer(*parent))
            return invalid(j, p);
        p++;
        cJSON *up = (*parent)->next;
        (*parent)->next = NULL;
        *parent = up;
        --*depth;
    }
    *item = NULL;
    return p;
}

/* Parse the value at p into root; the byte after it, or NULL (j->err). */
static pos parse(struct jp *j, pos p, cJSON *root)
{
    cJSON *parent = NULL, *item = root;
    unsigned depth = 0;
    while (item) {
        p = skip_ws(p, j->end);
        if (p == j->end) {
            p = invalid(j, p);
        } else if (*p != '{' && *p != '[') {
            p = scalar(j, p, item);
        } else if (depth == CJSON_NESTING_LIMIT) {
            p = invalid(j, p);
        } else {
            item->type = *p == '{' ? cJSON_Object : cJSON_Array;
            p = skip_ws(p + 1, j->end);
            if (p < j->end && *p == closer(item)) {
                p++; /* empty: complete */
            } else {
                depth++;
                item->next = parent;
                parent = item;
                item = member(j, &p, parent);
                if (item)
                    continue;
                p = NULL;
            }
        }
        if (p)
            p = next_member(j, p, &parent, &depth, &item);
        if (!p)
            break;
    }
    /* On failure, the open containers get their ->next back. */
    for (cJSON *up; parent; parent = up) {
        up = parent->next;
        parent->next = NULL;
    }
    return p;
}

static size_t first_slab(size_t len)
{
    size_t n = len < SLAB_MAX / 2 ? len * 2 : SLAB_MAX;
    return n < SLAB_MIN ? SLAB_MIN : n;
}

enum wh_err wh_jparse(const char *text, size_t len, cJSON **out, size_t *at, int *trailing)
{
    *out = NULL;
    *at = 0;
    *trailing = 0;
    pos s = (pos)text, p = s, end = s + len;
    if (len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) /* as cJSON: a BOM is no error */
        p += 3;
    cJSON *root = wh_malloc(sizeof(*root));
    if (!root)
        return WH_ERR_NOMEM;
    memset(root, 0, sizeof(*root));
    struct jp j = {.end = end, .bulk = wh_mem_bulk(root), .slab = first_slab(len)};
    p = parse(&j, p, root);
    if (p) {
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || *p == '\0'))
            p++;
        if (p < end) {
            *trailing = 1;
            invalid(&j, p);
        }
    }
    if (j.err) {
        /* Bulk memory (carved nodes included) goes back with its arena. */
        if (!j.bulk)
            cJSON_Delete(root);
        *at = j.bad ? (size_t)(j.bad - s) : 0;
        return j.err;
    }
    *out = root;
    return WH_OK;
}
