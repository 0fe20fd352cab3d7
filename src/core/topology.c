/* topology.c: topology strings and TPU generations. */
#include "wh/topology.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* snprintf, vsnprintf */
#include <string.h> /* strcmp, strncmp, strchr */

#include "wh/utf8.h" /* wh_utf8_cut, wh_utf8_trim_cut */

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

/* docs/workloads.md, "TPU generations", has each value's source. */
static const char *const labels_v4[] = {"tpu-v4-podslice", NULL};
static const char *const labels_v5e[] = {"tpu-v5-lite-podslice", "tpu-v5-lite-device", NULL};
static const char *const labels_v5p[] = {"tpu-v5p-slice", NULL};
static const char *const labels_v6e[] = {"tpu-v6e-slice", NULL};
static const char *const labels_tpu7x[] = {"tpu7x", NULL};
static const long vm_4[] = {4, 0};
static const long vm_1_4_8[] = {1, 4, 8, 0};
static const long vm_tpu7x[] = {1, 4, 0}; /* tpu7x-standard-4t; -1t for 1x1x1 */

#define TOPOS_2D "1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16"

static const struct wh_tpu_gen_info gens[] = {
    {WH_GEN_V4, "v4", labels_v4, 3, 2, 1, vm_4,
     "2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4, 4x4x8, 4x8x8, 8x8x8 and larger AxBxC"},
    {WH_GEN_V5E, "v5e", labels_v5e, 2, 1, 1, vm_1_4_8, TOPOS_2D},
    {WH_GEN_V5P, "v5p", labels_v5p, 3, 2, 1, vm_4,
     "2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4 and larger AxBxC up to 16x16x24"},
    {WH_GEN_V6E, "v6e", labels_v6e, 2, 1, 1, vm_1_4_8, TOPOS_2D},
    {WH_GEN_TPU7X, "tpu7x", labels_tpu7x, 3, 2, 2, vm_tpu7x,
     "2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4, 4x4x8, 4x8x8, 8x8x8, 8x8x16, 8x16x16"},
};
#define N_GENS (sizeof(gens) / sizeof(gens[0]))

const struct wh_tpu_gen_info *wh_tpu_gen_find(const char *accel)
{
    for (size_t i = 0; accel && *accel && i < N_GENS; i++)
        for (const char *const *l = gens[i].labels; *l; l++)
            if (!strcmp(accel, *l))
                return &gens[i];
    return NULL;
}

const struct wh_tpu_gen_info *wh_tpu_gen_info(enum wh_tpu_gen gen)
{
    for (size_t i = 0; i < N_GENS; i++)
        if (gens[i].gen == gen)
            return &gens[i];
    return NULL;
}

const char *wh_tpu_accelerators(void)
{
    return "tpu-v4-podslice, tpu-v5-lite-podslice, tpu-v5-lite-device, tpu-v5p-slice, "
           "tpu-v6e-slice, tpu7x";
}

bool wh_tpu_gen_has_vm(const struct wh_tpu_gen_info *g, long chips)
{
    for (const long *c = g ? g->chips_per_vm : NULL; c && *c; c++)
        if (*c == chips)
            return true;
    return false;
}

enum wh_tpu_gen wh_tpu_gen_from_accelerator(const char *accel)
{
    const struct wh_tpu_gen_info *g = wh_tpu_gen_find(accel);
    return g ? g->gen : WH_GEN_UNKNOWN;
}

int wh_tpu_gen_dims(enum wh_tpu_gen gen)
{
    const struct wh_tpu_gen_info *g = wh_tpu_gen_info(gen);
    return g ? g->dims : 0;
}

const char *wh_tpu_gen_name(enum wh_tpu_gen gen)
{
    const struct wh_tpu_gen_info *g = wh_tpu_gen_info(gen);
    return g ? g->name : "unknown";
}

static void vm_list(const struct wh_tpu_gen_info *g, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (const long *c = g->chips_per_vm; *c && len < n; c++)
        len += (size_t)snprintf(out + len, n - len, "%s%ld", len ? ", " : "", *c);
}

static bool shape_fail(struct wh_shape_problem *p, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool shape_fail(struct wh_shape_problem *p, const char *rule, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->text, sizeof(p->text), fmt, ap);
    va_end(ap);
    wh_utf8_trim_cut(p->text, sizeof(p->text));
    p->rule = rule;
    return false;
}

bool wh_tpu_shape_check(const struct wh_tpu_shape *s, struct wh_topology *topo,
                        const struct wh_tpu_gen_info **gen, struct wh_shape_problem *p)
{
    p->rule = NULL;
    p->text[0] = '\0';
    topo->ndims = 0;
    *gen = NULL;
    if (s->accel && *s->accel && !(*gen = wh_tpu_gen_find(s->accel)))
        return shape_fail(p, WH_RULE_ACCELERATOR,
                          "%s is \"%.*s\", not a GKE TPU accelerator; valid values: %s",
                          s->accel_field, (int)wh_utf8_cut(s->accel, 64), s->accel,
                          wh_tpu_accelerators());
    char why[WH_ERRBUF_LEN];
    if (s->topology && *s->topology && wh_topology_parse(s->topology, topo, why)) {
        topo->ndims = 0;
        return shape_fail(p, WH_RULE_TOPOLOGY_FORM, "%s is \"%.*s\": %s; valid values: %s",
                          s->topo_field, (int)wh_utf8_cut(s->topology, 64), s->topology, why,
                          *gen ? (*gen)->topologies : "AxB (v5e, v6e) or AxBxC (v4, v5p, tpu7x)");
    }
    const struct wh_tpu_gen_info *g = *gen;
    if (g && topo->ndims && topo->ndims != g->dims)
        return shape_fail(p, WH_RULE_TOPOLOGY_DIMS,
                          "%s is \"%s\", a %d-D topology, but %s (%s \"%s\") slices are %d-D; "
                          "valid values: %s",
                          s->topo_field, s->topology, topo->ndims, g->name, s->accel_field,
                          s->accel, g->dims, g->topologies);
    char vms[48];
    /* Chips that do not divide the topology's are the callers' divisor rule,
     * which names the topology too. */
    bool divides = !topo->ndims || (s->chips <= topo->chips && topo->chips % s->chips == 0);
    if (g && s->chips > 0 && divides && !wh_tpu_gen_has_vm(g, s->chips)) {
        vm_list(g, vms, sizeof(vms));
        return shape_fail(p, WH_RULE_CHIPS_PER_VM,
                          "%s is %ld per pod, but no %s VM has %ld chips (%s \"%s\"); valid "
                          "values: %s (one VM's chips per pod)",
                          s->chips_field, s->chips, g->name, s->chips, s->accel_field, s->accel,
                          vms);
    }
    return true;
}

bool wh_is_tpu7x(const char *accel)
{
    return accel && !strncmp(accel, "tpu7x", 5);
}
