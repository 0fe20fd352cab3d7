/* topology.c: topology strings and TPU generations. */
#include "wh/topology.h"

#include <string.h> /* strncmp, strchr */

#include "wh/utf8.h" /* wh_utf8_cut */

/* Parse one decimal part [p, end); false on anything but digits. */
static bool parse_part(const char *p, const char *end, long *out)
{
    if (p == end || end - p > 9)
        return false;
    long v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return true;
}

/* Split s on 'x' into up to max parts; returns the part count or -1. */
static int split_dims(const char *s, long *dims, int max)
{
    int n = 0;
    const char *p = s;
    for (;;) {
        const char *x = strchr(p, 'x');
        const char *end = x ? x : p + strlen(p);
        if (n == max || !parse_part(p, end, &dims[n]))
            return -1;
        n++;
        if (!x)
            return n;
        p = x + 1;
    }
}

enum wh_err wh_topology_parse(const char *s, struct wh_topology *t, char *errbuf)
{
    long dims[3];
    if (!s || !*s)
        return wh_fail(errbuf, WH_ERR_INVALID, "topology is empty");
    int n = split_dims(s, dims, 3);
    if (n < 2)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "topology \"%.*s\" is not of the form AxB or AxBxC with whole numbers",
                       (int)wh_utf8_cut(s, 64), s);
    long chips = 1;
    for (int i = 0; i < n; i++) {
        if (dims[i] <= 0)
            return wh_fail(errbuf, WH_ERR_INVALID, "topology \"%.*s\" has a zero dimension",
                           (int)wh_utf8_cut(s, 64), s);
        chips *= dims[i];
        if (chips > WH_TOPOLOGY_MAX_CHIPS)
            return wh_fail(errbuf, WH_ERR_INVALID, "topology \"%.*s\" has more than %ld chips",
                           (int)wh_utf8_cut(s, 64), s, WH_TOPOLOGY_MAX_CHIPS);
    }
    t->ndims = n;
    t->dims[0] = dims[0];
    t->dims[1] = dims[1];
    t->dims[2] = n == 3 ? dims[2] : 1;
    t->chips = chips;
    return WH_OK;
}

long wh_topology_hosts(const struct wh_topology *t, long chips_per_host)
{
    if (chips_per_host <= 0)
        return 1;
    long hosts = t->chips / chips_per_host;
    return hosts > 1 ? hosts : 1;
}

bool wh_topology_is_subset(const char *child, const char *parent)
{
    long c[3], p[3];
    int nc = split_dims(child, c, 3), np = split_dims(parent, p, 3);
    if (nc < 1 || nc != np)
        return false;
    for (int i = 0; i < nc; i++)
        if (c[i] > p[i])
            return false;
    return true;
}

static const struct {
    const char *prefix;
    enum wh_tpu_gen gen;
} gens[] = {
    {"tpu-v4-", WH_GEN_V4},   {"tpu-v5-lite-", WH_GEN_V5E}, {"tpu-v5p-", WH_GEN_V5P},
    {"tpu-v6e-", WH_GEN_V6E}, {"tpu7x", WH_GEN_TPU7X},
};

enum wh_tpu_gen wh_tpu_gen_from_accelerator(const char *accel)
{
    if (!accel)
        return WH_GEN_UNKNOWN;
    for (size_t i = 0; i < sizeof(gens) / sizeof(gens[0]); i++)
        if (!strncmp(accel, gens[i].prefix, strlen(gens[i].prefix)))
            return gens[i].gen;
    return WH_GEN_UNKNOWN;
}

int wh_tpu_gen_dims(enum wh_tpu_gen gen)
{
    switch (gen) {
    case WH_GEN_V5E:
    case WH_GEN_V6E: return 2;
    case WH_GEN_V4:
    case WH_GEN_V5P:
    case WH_GEN_TPU7X: return 3;
    default: return 0;
    }
}

const char *wh_tpu_gen_name(enum wh_tpu_gen gen)
{
    switch (gen) {
    case WH_GEN_V4: return "v4";
    case WH_GEN_V5E: return "v5e";
    case WH_GEN_V5P: return "v5p";
    case WH_GEN_V6E: return "v6e";
    case WH_GEN_TPU7X: return "tpu7x";
    default: return "unknown";
    }
}

bool wh_is_tpu7x(const char *accel)
{
    return accel && !strncmp(accel, "tpu7x", 5);
}
