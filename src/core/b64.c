/* b64.c: base64 encode/decode into a wh_buf. */
#include "wh/b64.h"

#include <stdint.h> /* uint32_t */

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

enum wh_err wh_b64_encode(struct wh_buf *b, const void *data, size_t n)
{
    const unsigned char *in = data;
    enum wh_err err = wh_buf_reserve(b, (n + 2) / 3 * 4);
    if (err)
        return err;
    char *out = b->ptr + b->len;
    size_t i = 0, o = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        out[o++] = alphabet[v >> 6 & 63];
        out[o++] = alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        out[o++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
        out[o++] = '=';
    }
    b->len += o;
    b->ptr[b->len] = '\0';
    return WH_OK;
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
