/* b64.c: base64 encode/decode into a wh_buf. */
#include "wh/b64.h"

#include <stdbool.h> /* bool */
#include <stdint.h>  /* uint16_t, uint32_t, uint64_t */
#include <string.h>  /* memcpy */

/* The AVX-512 VBMI and AVX2 encoders are built on x86-64 by gcc and clang
 * (function target attributes) and used when the CPU has them; elsewhere,
 * and in a -DWH_PORTABLE=ON build, the portable one. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(WH_PORTABLE)
#define WH_B64_AVX2 1
#include <immintrin.h> /* _mm256_* */
#else
#define WH_B64_AVX2 0
#endif

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Every 12-bit value as its two base64 characters, computed by the
 * compiler: the encoder then does two lookups per 3 bytes instead of four.
 * (Patches of the largest slices are several hundred KiB.) */
#define B64_CHAR(x)                   \
    (char)((x) < 26    ? 'A' + (x)    \
           : (x) < 52  ? 'a' + (x)-26 \
           : (x) < 62  ? '0' + (x)-52 \
           : (x) == 62 ? '+'          \
                       : '/')
#define B64_P1(i) {B64_CHAR((i) >> 6), B64_CHAR((i)&63)},
#define B64_P4(i) B64_P1(i) B64_P1((i) + 1) B64_P1((i) + 2) B64_P1((i) + 3)
#define B64_P16(i) B64_P4(i) B64_P4((i) + 4) B64_P4((i) + 8) B64_P4((i) + 12)
#define B64_P64(i) B64_P16(i) B64_P16((i) + 16) B64_P16((i) + 32) B64_P16((i) + 48)
#define B64_P256(i) B64_P64(i) B64_P64((i) + 64) B64_P64((i) + 128) B64_P64((i) + 192)
#define B64_P1024(i) B64_P256(i) B64_P256((i) + 256) B64_P256((i) + 512) B64_P256((i) + 768)
static const char pairs[4096][2] = {B64_P1024(0) B64_P1024(1024) B64_P1024(2048) B64_P1024(3072)};

/* The bytes of in[i..n) onto out + o, the padded tail included; returns
 * the new o. */
static size_t encode_scalar(const unsigned char *in, size_t i, size_t n, char *out, size_t o)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* 6 bytes to 8 letters per step: one load (8 bytes, 6 used, so it stops
     * 2 bytes short of the end), four lookups, one store. About 1.5x the
     * 3-byte loop below on a 300 KB patch. */
    for (; i + 8 <= n; i += 6, o += 8) {
        uint64_t v;
        memcpy(&v, in + i, 8);
        v = __builtin_bswap64(v); /* the bytes in reading order, from the top */
        uint16_t p0, p1, p2, p3;
        memcpy(&p0, pairs[v >> 52], 2);
        memcpy(&p1, pairs[v >> 40 & 4095], 2);
        memcpy(&p2, pairs[v >> 28 & 4095], 2);
        memcpy(&p3, pairs[v >> 16 & 4095], 2);
        uint64_t w = (uint64_t)p0 | (uint64_t)p1 << 16 | (uint64_t)p2 << 32 | (uint64_t)p3 << 48;
        memcpy(out + o, &w, 8);
    }
#endif
    for (; i + 2 < n; i += 3, o += 4) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        memcpy(out + o, pairs[v >> 12], 2);
        memcpy(out + o + 2, pairs[v & 4095], 2);
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        out[o++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
        out[o++] = '=';
    }
    return o;
}

#if WH_B64_AVX2
/* 24 bytes to 32 letters per step with AVX2, the whole 3-byte groups of the
 * input but the last few; returns how many bytes it took (a multiple of 24).
 * Each 128-bit half does 12 bytes as four 32-bit lanes:
 *  1. a shuffle puts the group a b c of a lane in the byte order b a c b,
 *     so its 16-bit halves hold a:b and b:c;
 *  2. two masks and two 16-bit multiplies move the four 6-bit fields to the
 *     bottom of the lane's four bytes (a>>2, (a&3)<<4|b>>4, ..., c&63);
 *  3. each field becomes its letter by adding the offset of its range of
 *     the alphabet ('A'+, 'a'-26+, '0'-52+, '+', '/'), looked up by a
 *     shuffle from a code made of two compares.
 * The 350 KB answer of a 256-host TPU7x pod spent 14% of the server's CPU
 * in the portable loop; this one is about 4x faster (263 KB: 71 -> 18 us). */
__attribute__((target("avx2"))) static size_t encode_avx2(const unsigned char *in, size_t n,
                                                          char *out)
{
    const __m256i spread = _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10, 1, 0,
                                            2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    const __m256i mask_ac = _mm256_set1_epi32(0x0fc0fc00), mask_bd = _mm256_set1_epi32(0x003f03f0);
    const __m256i mul_ac = _mm256_set1_epi32(0x04000040), mul_bd = _mm256_set1_epi32(0x01000010);
    const __m256i offsets = _mm256_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                             '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                             '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0, 'a' - 26,
                                             '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                             '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                             '+' - 62, '/' - 63, 'A', 0, 0);
    size_t i = 0, o = 0;
    /* The second load reads 16 bytes from i + 12: stop 4 bytes early. */
    for (; i + 28 <= n; i += 24, o += 32) {
        __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(
                                                (const __m128i *)(const void *)(in + i))),
                                            _mm_loadu_si128(
                                                (const __m128i *)(const void *)(in + i + 12)),
                                            1);
        v = _mm256_shuffle_epi8(v, spread);
        __m256i ac = _mm256_mulhi_epu16(_mm256_and_si256(v, mask_ac), mul_ac);
        __m256i bd = _mm256_mullo_epi16(_mm256_and_si256(v, mask_bd), mul_bd);
        __m256i idx = _mm256_or_si256(ac, bd);
        /* code: 0 for a-z (26..51), 1..10 digits, 11 '+', 12 '/', 13 A-Z */
        __m256i code = _mm256_subs_epu8(idx, _mm256_set1_epi8(51));
        __m256i upper = _mm256_cmpgt_epi8(_mm256_set1_epi8(26), idx);
        code = _mm256_or_si256(code, _mm256_and_si256(upper, _mm256_set1_epi8(13)));
        __m256i letters = _mm256_add_epi8(idx, _mm256_shuffle_epi8(offsets, code));
        _mm256_storeu_si256((__m256i *)(void *)(out + o), letters);
    }
    return i;
}
#endif

#if WH_B64_AVX2
/* 48 bytes to 64 letters per step with AVX-512 VBMI, while 64 bytes can be
 * loaded; returns how many bytes it took (a multiple of 48). Each 32-bit
 * lane gets the bytes b a c b of one group (a byte permute), so that its
 * low half is a:b and its high half b:c; one multishift then takes each
 * 6-bit field (bits 10, 4, 22 and 16 of the lane) into a byte, and a second
 * byte permute, which reads only the low 6 bits of each index, looks the
 * letters up in the 64-byte alphabet. Three instructions per 48 bytes
 * where the AVX2 loop needs about ten per 24: the 263 KB patch of a 256-host
 * TPU7x pod took 240k instructions in the AVX2 loop. */
#define LANE(k) 3 * (k) + 1, 3 * (k), 3 * (k) + 2, 3 * (k) + 1
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static size_t
encode_vbmi(const unsigned char *in, size_t n, char *out)
{
    static const unsigned char groups[64] = {LANE(0),  LANE(1),  LANE(2),  LANE(3),
                                             LANE(4),  LANE(5),  LANE(6),  LANE(7),
                                             LANE(8),  LANE(9),  LANE(10), LANE(11),
                                             LANE(12), LANE(13), LANE(14), LANE(15)};
    const __m512i spread = _mm512_loadu_si512((const void *)groups);
    const __m512i letters = _mm512_loadu_si512((const void *)alphabet);
    /* Per 64-bit word (two lanes): the bit offsets of the four fields of
     * the first lane, then those of the second (+32). */
    const __m512i fields = _mm512_set1_epi64(0x3036242a1016040aLL);
    size_t i = 0, o = 0;
    for (; i + 64 <= n; i += 48, o += 64) {
        __m512i v = _mm512_loadu_si512((const void *)(in + i));
        v = _mm512_permutexvar_epi8(spread, v);
        v = _mm512_multishift_epi64_epi8(fields, v);
        _mm512_storeu_si512((void *)(out + o), _mm512_permutexvar_epi8(v, letters));
    }
    return i;
}
#undef LANE
#endif

/* Append the encoding of n bytes; vector: the AVX-512 VBMI or AVX2 loops
 * may take the bulk, where the CPU has them. */
static enum wh_err encode(struct wh_buf *b, const void *data, size_t n, bool vector)
{
    const unsigned char *in = data;
    enum wh_err err = wh_buf_reserve(b, (n + 2) / 3 * 4);
    if (err)
        return err;
    char *out = b->ptr + b->len;
    size_t i = 0;
#if WH_B64_AVX2
    if (vector && __builtin_cpu_supports("avx512vbmi"))
        i = encode_vbmi(in, n, out);
    if (vector && __builtin_cpu_supports("avx2"))
        i += encode_avx2(in + i, n - i, out + i / 3 * 4);
#else
    (void)vector;
#endif
    b->len += encode_scalar(in, i, n, out, i / 3 * 4);
    b->ptr[b->len] = '\0';
    return WH_OK;
}

enum wh_err wh_b64_encode(struct wh_buf *b, const void *data, size_t n)
{
    return encode(b, data, n, true);
}

enum wh_err wh_b64_encode_portable(struct wh_buf *b, const void *data, size_t n)
{
    return encode(b, data, n, false);
}

static int decode_char(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

enum wh_err wh_b64_decode(struct wh_buf *b, const char *text, size_t n)
{
    while (n > 0 && text[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return WH_ERR_INVALID;
    enum wh_err err = wh_buf_reserve(b, n / 4 * 3 + 2);
    if (err)
        return err;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = decode_char((unsigned char)text[i]);
        if (v < 0)
            return WH_ERR_INVALID;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            b->ptr[b->len++] = (char)(acc >> bits & 0xff);
        }
    }
    b->ptr[b->len] = '\0';
    return WH_OK;
}
