/* test_b64.c: base64 (RFC 4648 §10 test vectors, decode errors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wh/b64.h"

static const char *const vectors[][2] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};
#define N_VECTORS (sizeof(vectors) / sizeof(vectors[0]))

static void test_encode_rfc4648(void **unused)
{
    (void)unused;
    for (size_t i = 0; i < N_VECTORS; i++) {
        struct wh_buf b;
        wh_buf_init(&b, 64);
        assert_int_equal(wh_b64_encode(&b, vectors[i][0], strlen(vectors[i][0])), WH_OK);
        assert_string_equal(wh_buf_ptr(&b), vectors[i][1]);
        wh_buf_free(&b);
    }
}

static void test_decode_rfc4648(void **unused)
{
    (void)unused;
    for (size_t i = 0; i < N_VECTORS; i++) {
        struct wh_buf b;
        wh_buf_init(&b, 64);
        assert_int_equal(wh_b64_decode(&b, vectors[i][1], strlen(vectors[i][1])), WH_OK);
        assert_string_equal(wh_buf_ptr(&b), vectors[i][0]);
        assert_int_equal(wh_buf_len(&b), strlen(vectors[i][0]));
        wh_buf_free(&b);
        /* padding is optional */
        size_t n = strlen(vectors[i][1]);
        while (n && vectors[i][1][n - 1] == '=')
            n--;
        wh_buf_init(&b, 64);
        assert_int_equal(wh_b64_decode(&b, vectors[i][1], n), WH_OK);
        assert_string_equal(wh_buf_ptr(&b), vectors[i][0]);
        wh_buf_free(&b);
    }
}

static void test_appends(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 64);
    assert_int_equal(wh_buf_add(&b, "x:"), WH_OK);
    assert_int_equal(wh_b64_encode(&b, "foo", 3), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), "x:Zm9v");
    wh_buf_free(&b);
}

static void test_binary_round_trip(void **unused)
{
    (void)unused;
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    for (size_t n = 0; n <= sizeof(all); n++) { /* every tail of the 6-byte loop */
        struct wh_buf enc, dec;
        wh_buf_init(&enc, 4096);
        wh_buf_init(&dec, 4096);
        assert_int_equal(wh_b64_encode(&enc, all, n), WH_OK);
        assert_int_equal(wh_buf_len(&enc), (n + 2) / 3 * 4);
        assert_int_equal(wh_b64_decode(&dec, wh_buf_ptr(&enc), wh_buf_len(&enc)), WH_OK);
        assert_int_equal(wh_buf_len(&dec), n);
        assert_memory_equal(wh_buf_ptr(&dec), all, n);
        wh_buf_free(&enc);
        wh_buf_free(&dec);
    }
    /* '+' and '/' are the last two letters of the standard alphabet */
    struct wh_buf b;
    wh_buf_init(&b, 64);
    assert_int_equal(wh_b64_encode(&b, "\xfb\xff", 2), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), "+/8=");
    wh_buf_free(&b);
}

/* Base64 one bit at a time: the slowest and plainest reading of RFC 4648 §4,
 * the judge of both encoders. */
static size_t naive_encode(const unsigned char *in, size_t n, char *out)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0, bits = n * 8;
    for (size_t bit = 0; bit < bits; bit += 6) {
        unsigned v = 0;
        for (size_t k = bit; k < bit + 6; k++)
            v = v << 1 | (k < bits ? (unsigned)(in[k / 8] >> (7 - k % 8) & 1) : 0u);
        out[o++] = abc[v];
    }
    while (o % 4)
        out[o++] = '=';
    out[o] = '\0';
    return o;
}

/* The AVX-512 VBMI loop takes 48 bytes per step while 64 can be read, the
 * AVX2 loop 24 of what is left while 28 can, the portable one the rest:
 * every length up to many steps of each, every byte value, written after a
 * prefix so that the output is not aligned. */
static void test_vector_and_portable_agree(void **unused)
{
    (void)unused;
    enum { MAX = 700 };
    static unsigned char data[MAX];
    static char want[MAX / 3 * 4 + 8];
    uint32_t x = 12345;
    for (size_t i = 0; i < MAX; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = i < 256 ? (unsigned char)(255 - i) : (unsigned char)(x >> 23);
    }
    for (size_t n = 0; n <= MAX; n++) {
        naive_encode(data, n, want);
        struct wh_buf fast, portable;
        wh_buf_init(&fast, 4096);
        wh_buf_init(&portable, 4096);
        assert_int_equal(wh_buf_add(&fast, "ab"), WH_OK);
        assert_int_equal(wh_b64_encode(&fast, data, n), WH_OK);
        assert_int_equal(wh_b64_encode_portable(&portable, data, n), WH_OK);
        assert_string_equal(wh_buf_ptr(&fast) + 2, want);
        assert_string_equal(wh_buf_ptr(&portable), want);
        wh_buf_free(&fast);
        wh_buf_free(&portable);
    }
}

static void bad(const char *text)
{
    struct wh_buf b;
    wh_buf_init(&b, 64);
    assert_int_equal(wh_b64_decode(&b, text, strlen(text)), WH_ERR_INVALID);
    wh_buf_free(&b);
}

static void test_decode_errors(void **unused)
{
    (void)unused;
    bad("Z");     /* one character cannot encode a byte */
    bad("Zm9vY"); /* 4k+1 characters */
    bad("Zm9vY===");
    bad("Zm9v!A==");
    bad("Zm 9v"); /* no white space */
    bad("Zm9v\n");
    bad("Zm=9");     /* padding only at the end */
    bad("Zm9v-_=="); /* the URL-safe alphabet is not standard base64 */
    bad("\xc3\xa9\xc3\xa9");
}

static void test_decode_bounded(void **unused)
{
    (void)unused;
    struct wh_buf b;
    wh_buf_init(&b, 2);
    assert_int_equal(wh_b64_decode(&b, "Zm9vYmFy", 8), WH_ERR_TOOBIG);
    assert_null(b.ptr);
    wh_buf_free(&b);
    wh_buf_init(&b, 2);
    assert_int_equal(wh_b64_encode(&b, "foobar", 6), WH_ERR_TOOBIG);
    wh_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_rfc4648),
        cmocka_unit_test(test_decode_rfc4648),
        cmocka_unit_test(test_appends),
        cmocka_unit_test(test_binary_round_trip),
        cmocka_unit_test(test_decode_errors),
        cmocka_unit_test(test_decode_bounded),
        cmocka_unit_test(test_vector_and_portable_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
