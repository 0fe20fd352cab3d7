/* topology.c: topology strings and TPU generations. */
#include "wh/topology.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* snprintf, vsnprintf */
#include <string.h> /* strcmp, strncmp, strchr, memcpy */

#include "wh/podspec.h" /* WH_ANN_SLICE_TOPOLOGY */
#include "wh/utf8.h"    /* wh_utf8_cut, wh_utf8_trim_cut */

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
/* GKE machine types: 1t only for 1x1, 8t only for the single-host 2x4 (a
 * multi-host 2x4 is 2 x 4t), 4t for every slice of 4 chips or more. */
static const struct wh_tpu_vm vm_v4[] = {{4, "ct4p-hightpu-4t", NULL}, {0, NULL, NULL}};
static const struct wh_tpu_vm vm_v5e[] = {{1, "ct5lp-hightpu-1t", "1x1"},
                                          {4, "ct5lp-hightpu-4t", NULL},
                                          {8, "ct5lp-hightpu-8t", "2x4"},
                                          {0, NULL, NULL}};
static const struct wh_tpu_vm vm_v5p[] = {{4, "ct5p-hightpu-4t", NULL}, {0, NULL, NULL}};
static const struct wh_tpu_vm vm_v6e[] = {{1, "ct6e-standard-1t", "1x1"},
                                          {4, "ct6e-standard-4t", NULL},
                                          {8, "ct6e-standard-8t", "2x4"},
                                          {0, NULL, NULL}};
/* tpu7x-standard-1t (xpk) for 1x1x1 only */
static const struct wh_tpu_vm vm_tpu7x[] = {{1, "tpu7x-standard-1t", "1x1x1"},
                                            {4, "tpu7x-standard-4t", NULL},
                                            {0, NULL, NULL}};

/* The documented slice topologies of each generation (docs/workloads.md,
 * "Documented topologies", has the sources): an enumerated list and, on the
 * 3-D generations, xpk's rule (generate_tpu_topologies) for the rest: AxBxC,
 * each a multiple of 4, at most so many 4x4x4 cubes, A <= B <= C except on
 * v4. The bounds: v4 64 cubes (its 4096-chip pod), v5p 96 (the Cloud TPU v5p
 * page's largest shape, 16x16x24), TPU7x 144 (xpk's). A topology outside them
 * is warned about, never refused (a new GKE shape must not be blocked). */
static const char *const topos_cube_base[] = {"2x2x1", "2x2x2", "2x2x4", "2x4x4", NULL};
static const char *const topos_2d[] = {"1x1", "2x2",  "2x4",   "4x4", "4x8",
                                       "8x8", "8x16", "16x16", NULL};
static const char *const topos_tpu7x[] = {"1x1x1", "2x2x1", "2x2x2", "2x2x4", "2x4x4", NULL};

static const struct wh_tpu_gen_info gens[] = {
    {WH_GEN_V4, "v4", labels_v4, 3, 2, 1, vm_v4, topos_cube_base, 64, false},
    {WH_GEN_V5E, "v5e", labels_v5e, 2, 1, 1, vm_v5e, topos_2d, 0, false},
    {WH_GEN_V5P, "v5p", labels_v5p, 3, 2, 1, vm_v5p, topos_cube_base, 96, true},
    {WH_GEN_V6E, "v6e", labels_v6e, 2, 1, 1, vm_v6e, topos_2d, 0, false},
    {WH_GEN_TPU7X, "tpu7x", labels_tpu7x, 3, 2, 2, vm_tpu7x, topos_tpu7x, 144, true},
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

void wh_tpu_gen_topologies(const struct wh_tpu_gen_info *g, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (const char *const *t = g ? g->topologies : NULL; t && *t && len < n; t++)
        len += (size_t)snprintf(out + len, n - len, "%s%s", len ? ", " : "", *t);
    if (g && g->cubes_max && len < n)
        snprintf(out + len, n - len,
                 ", or AxBxC%s with each a multiple of 4, up to %d cubes of 4x4x4 (%d chips)",
                 g->cubes_sorted ? " (A <= B <= C)" : " in any order", g->cubes_max,
                 g->cubes_max * 64);
    wh_utf8_trim_cut(out, n);
}

/* True when t is one of the 3-D shapes of g's cube rule (wh_tpu_gen_info). */
static bool cube_rule(const struct wh_tpu_gen_info *g, const struct wh_topology *t)
{
    if (!g->cubes_max || t->ndims != 3)
        return false;
    long cubes = 1;
    for (int i = 0; i < 3; i++) {
        if (t->dims[i] % 4)
            return false;
        cubes *= t->dims[i] / 4;
    }
    if (g->cubes_sorted && (t->dims[0] > t->dims[1] || t->dims[1] > t->dims[2]))
        return false;
    return cubes <= g->cubes_max;
}

/* True when a and b are the same topology as parsed (so "02x2" is "2x2"). */
static bool same_topology(const struct wh_topology *a, const struct wh_topology *b)
{
    return a->ndims == b->ndims && a->dims[0] == b->dims[0] && a->dims[1] == b->dims[1] &&
           a->dims[2] == b->dims[2];
}

bool wh_tpu_gen_documented(const struct wh_tpu_gen_info *g, const struct wh_topology *t)
{
    char why[WH_ERRBUF_LEN];
    for (const char *const *s = g ? g->topologies : NULL; s && *s; s++) {
        struct wh_topology d;
        if (!wh_topology_parse(*s, &d, why) && same_topology(&d, t))
            return true;
    }
    return g && t && cube_rule(g, t);
}

bool wh_tpu_topology_undocumented(const struct wh_tpu_gen_info *g, const struct wh_topology *t,
                                  const char *topology, const char *field, char *out, size_t n,
                                  char *brief, size_t nb)
{
    if (!g || !t || !t->ndims || t->ndims != g->dims || wh_tpu_gen_documented(g, t))
        return false;
    char list[256];
    wh_tpu_gen_topologies(g, list, sizeof(list));
    snprintf(out, n,
             "%s is \"%.*s\", a topology no documented %s node pool has (documented: %s); "
             "check it: unless GKE makes a node pool of this shape, the pods stay Pending (a "
             "warning, not a refusal, so that a new GKE shape is not blocked)",
             field, (int)wh_utf8_cut(topology, 64), topology, g->name, list);
    wh_utf8_trim_cut(out, n);
    snprintf(brief, nb, "%s topology %.*s is no documented GKE shape: its pods may stay Pending",
             g->name, (int)wh_utf8_cut(topology, 20), topology);
    wh_utf8_trim_cut(brief, nb);
    return true;
}

/* Step d (n dims) to its next permutation in lexicographic order; false
 * after the last (the std::next_permutation algorithm). */
static bool next_order(long *d, int n)
{
    int i = n - 2;
    while (i >= 0 && d[i] >= d[i + 1])
        i--;
    if (i < 0)
        return false;
    int j = n - 1;
    while (d[j] <= d[i])
        j--;
    long x = d[i];
    d[i] = d[j];
    d[j] = x;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) {
        x = d[a];
        d[a] = d[b];
        d[b] = x;
    }
    return true;
}

/* The orders of subslice c (n dims) that fit parent p dimension by
 * dimension, smallest first (so A <= B <= C leads), as "\"2x2x4\" or
 * \"2x4x2\"" into out; false when none does. */
static bool fitting_orders(const long *c, const long *p, int n, char *out, size_t len)
{
    long d[3];
    memcpy(d, c, sizeof(long) * (size_t)n);
    for (int i = 1; i < n; i++) /* sort ascending: the first order */
        for (int j = i; j > 0 && d[j - 1] > d[j]; j--) {
            long x = d[j];
            d[j] = d[j - 1];
            d[j - 1] = x;
        }
    size_t at = 0;
    out[0] = '\0';
    do {
        bool fits = true;
        for (int i = 0; i < n; i++)
            fits &= d[i] <= p[i];
        if (!fits || at >= len)
            continue;
        at += (size_t)snprintf(out + at, len - at, "%s\"%ld", at ? " or " : "", d[0]);
        for (int i = 1; i < n && at < len; i++)
            at += (size_t)snprintf(out + at, len - at, "x%ld", d[i]);
        if (at < len)
            at += (size_t)snprintf(out + at, len - at, "\"");
    } while (next_order(d, n));
    return at > 0;
}

bool wh_subslice_fits(const char *subslice, const char *parent, char *out, size_t n)
{
    if (wh_topology_is_subset(subslice, parent))
        return true;
    long c[3], p[3];
    int nc = split_dims(subslice, c, 3), np = split_dims(parent, p, 3);
    char orders[128] = "", fix[256] = "";
    if (nc >= 2 && nc == np && fitting_orders(c, p, nc, orders, sizeof(orders)))
        snprintf(fix, sizeof(fix),
                 "; the topology names the chips along the pool's axes, in their order, so write "
                 "the same shape as %s",
                 orders);
    snprintf(out, n,
             "subslice \"%.*s\" is not smaller than parent \"%.*s\"; the annotation %s must "
             "fit inside the node pool topology dimension by dimension%s",
             (int)wh_utf8_cut(subslice, 64), subslice, (int)wh_utf8_cut(parent, 64), parent,
             WH_ANN_SLICE_TOPOLOGY, fix);
    wh_utf8_trim_cut(out, n);
    return false;
}

bool wh_tpu_gen_has_vm(const struct wh_tpu_gen_info *g, long chips)
{
    for (const struct wh_tpu_vm *v = g ? g->vms : NULL; v && v->chips; v++)
        if (v->chips == chips)
            return true;
    return false;
}

/* True when VM v makes a slice of topology t. */
static bool vm_serves(const struct wh_tpu_vm *v, const struct wh_topology *t)
{
    if (v->chips > t->chips || t->chips % v->chips)
        return false;
    struct wh_topology only;
    char why[WH_ERRBUF_LEN];
    if (!v->only)
        return true;
    if (wh_topology_parse(v->only, &only, why))
        return false;
    return same_topology(&only, t);
}

bool wh_tpu_gen_fits(const struct wh_tpu_gen_info *g, const struct wh_topology *t, long chips)
{
    for (const struct wh_tpu_vm *v = g ? g->vms : NULL; v && v->chips; v++)
        if (v->chips == chips && vm_serves(v, t))
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
    for (const struct wh_tpu_vm *v = g->vms; v->chips && len < n; v++)
        len += (size_t)snprintf(out + len, n - len, "%s%ld", len ? ", " : "", v->chips);
}

size_t wh_tpu_gen_fit_list(const struct wh_tpu_gen_info *g, const struct wh_topology *t,
                           struct wh_tpu_fit *out, size_t max)
{
    size_t n = 0;
    for (const struct wh_tpu_vm *v = g && t && t->ndims ? g->vms : NULL; v && v->chips && n < max;
         v++)
        if (vm_serves(v, t))
            out[n++] = (struct wh_tpu_fit){v->chips, t->chips / v->chips, v->machine};
    return n;
}

void wh_tpu_fits_text(const struct wh_tpu_fit *f, size_t n, const char *hosts_field,
                      long hosts_plus, char *out, size_t len)
{
    size_t l = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && l < len; i++) {
        l += (size_t)snprintf(out + l, len - l, "%s%ld", i ? (hosts_field ? ", or " : ", ") : "",
                              f[i].chips);
        if (hosts_field && l < len)
            l += (size_t)snprintf(out + l, len - l, " with %s %ld", hosts_field,
                                  f[i].hosts + hosts_plus);
    }
    wh_utf8_trim_cut(out, len);
}

/* For the fits of a topology: "4 chips per pod (4 VMs of ct6e-standard-4t)
 * or 8 (1 VM of ct6e-standard-8t)" in how. */
static void fit_how(const struct wh_tpu_fit *f, size_t n, char *how, size_t nhow)
{
    size_t lh = 0;
    how[0] = '\0';
    for (size_t i = 0; i < n && lh < nhow; i++)
        lh += (size_t)snprintf(how + lh, nhow - lh, "%s%ld%s (%ld VM%s of %s)", i ? " or " : "",
                               f[i].chips, i ? "" : " chips per pod", f[i].hosts,
                               f[i].hosts == 1 ? "" : "s", f[i].machine);
}

/* The documented topologies of g that VMs of chips chips make, ", "-joined
 * into out (n bytes); false when there is none. */
static bool topologies_of(const struct wh_tpu_gen_info *g, long chips, char *out, size_t n)
{
    size_t len = 0;
    char why[WH_ERRBUF_LEN];
    out[0] = '\0';
    for (const char *const *t = g->topologies; *t && len < n; t++) {
        struct wh_topology d;
        if (!wh_topology_parse(*t, &d, why) && wh_tpu_gen_fits(g, &d, chips))
            len += (size_t)snprintf(out + len, n - len, "%s%s", len ? ", " : "", *t);
    }
    wh_utf8_trim_cut(out, n);
    return len > 0;
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

/* Chips that no VM of g has, or none that makes topology t. On a topology
 * some VM makes, the valid values are that topology's, each with the host
 * count that changes with it (p->fits): a VM the generation has may still
 * not make t (TPU7x's 1-chip VM makes 1x1x1 only). */
static bool chips_fail(struct wh_shape_problem *p, const struct wh_tpu_shape *s,
                       const struct wh_tpu_gen_info *g, const struct wh_topology *t)
{
    char how[256], vals[512], list[256];
    bool has_vm = wh_tpu_gen_has_vm(g, s->chips);
    p->n_fits = wh_tpu_gen_fit_list(g, t, p->fits, WH_TPU_FITS_MAX);
    if (!p->n_fits && (!t->ndims || !has_vm)) {
        vm_list(g, vals, sizeof(vals));
        return shape_fail(p, WH_RULE_CHIPS_PER_VM,
                          "%s is %ld per pod, but no %s VM has %ld chips (%s \"%s\"); valid "
                          "values: %s (one VM's chips per pod)",
                          s->chips_field, s->chips, g->name, s->chips, s->accel_field, s->accel,
                          vals);
    }
    if (!p->n_fits) {
        bool some = topologies_of(g, s->chips, list, sizeof(list));
        if (!some)
            wh_tpu_gen_topologies(g, list, sizeof(list));
        return shape_fail(p, WH_RULE_CHIPS_PER_VM,
                          "%s is %ld per pod, but no %s VM makes topology %s (%s); valid "
                          "topologies%s: %s",
                          s->chips_field, s->chips, g->name, s->topology, s->topo_field,
                          some ? " for these chips per pod" : "", list);
    }
    fit_how(p->fits, p->n_fits, how, sizeof(how));
    wh_tpu_fits_text(p->fits, p->n_fits, s->hosts_field, s->hosts_plus, vals, sizeof(vals));
    char novm[160] = "";
    if (!has_vm)
        snprintf(novm, sizeof(novm), "no %s VM has %ld chips, and ", g->name, s->chips);
    return shape_fail(p, WH_RULE_CHIPS_PER_VM,
                      "%s is %ld per pod, but %s%s topology %s takes %s; valid values: %s (%sthe "
                      "topology is %s)",
                      s->chips_field, s->chips, novm, g->name, s->topology, how, vals,
                      s->hosts_field ? "change both together; " : "", s->topo_field);
}

bool wh_tpu_shape_check(const struct wh_tpu_shape *s, struct wh_topology *topo,
                        const struct wh_tpu_gen_info **gen, struct wh_shape_problem *p)
{
    p->rule = NULL;
    p->text[0] = '\0';
    p->n_fits = 0;
    topo->ndims = 0;
    *gen = NULL;
    if (s->accel && *s->accel && !(*gen = wh_tpu_gen_find(s->accel)))
        return shape_fail(p, WH_RULE_ACCELERATOR,
                          "%s is \"%.*s\", not a GKE TPU accelerator; valid values: %s",
                          s->accel_field, (int)wh_utf8_cut(s->accel, 64), s->accel,
                          wh_tpu_accelerators());
    char why[WH_ERRBUF_LEN], list[256];
    wh_tpu_gen_topologies(*gen, list, sizeof(list));
    if (s->topology && *s->topology && wh_topology_parse(s->topology, topo, why)) {
        topo->ndims = 0;
        return shape_fail(p, WH_RULE_TOPOLOGY_FORM, "%s is \"%.*s\": %s; valid values: %s",
                          s->topo_field, (int)wh_utf8_cut(s->topology, 64), s->topology, why,
                          *gen ? list : "AxB (v5e, v6e) or AxBxC (v4, v5p, tpu7x)");
    }
    const struct wh_tpu_gen_info *g = *gen;
    if (g && topo->ndims && topo->ndims != g->dims)
        return shape_fail(p, WH_RULE_TOPOLOGY_DIMS,
                          "%s is \"%s\", a %d-D topology, but %s (%s \"%s\") slices are %d-D; "
                          "valid values: %s",
                          s->topo_field, s->topology, topo->ndims, g->name, s->accel_field,
                          s->accel, g->dims, list);
    /* Chips that do not divide the topology's are the callers' divisor rule,
     * which names the topology too. */
    bool divides = !topo->ndims || (s->chips <= topo->chips && topo->chips % s->chips == 0);
    if (g && s->chips > 0 && divides &&
        (topo->ndims ? !wh_tpu_gen_fits(g, topo, s->chips) : !wh_tpu_gen_has_vm(g, s->chips)))
        return chips_fail(p, s, g, topo);
    return true;
}

bool wh_is_tpu7x(const char *accel)
{
    return accel && !strncmp(accel, "tpu7x", 5);
}
