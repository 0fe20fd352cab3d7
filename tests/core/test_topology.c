/* test_topology.c: topology parsing, host counts
 * (docs/internals/reference-behaviour.md §2.3), subsets
 * (§3.3) and accelerator generations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wh/topology.h"

static struct wh_topology parse_ok(const char *s)
{
    struct wh_topology t;
    char errbuf[WH_ERRBUF_LEN];
    if (wh_topology_parse(s, &t, errbuf))
        fail_msg("topology \"%s\" refused: %s", s, errbuf);
    return t;
}

static void parse_bad(const char *s, const char *why)
{
    struct wh_topology t;
    char errbuf[WH_ERRBUF_LEN] = "";
    if (wh_topology_parse(s, &t, errbuf) != WH_ERR_INVALID)
        fail_msg("topology \"%s\" accepted", s ? s : "(null)");
    if (!strstr(errbuf, why))
        fail_msg("topology \"%s\": error \"%s\" does not mention \"%s\"", s ? s : "(null)", errbuf,
                 why);
}

static void test_parse(void **unused)
{
    (void)unused;
    struct wh_topology t = parse_ok("2x4");
    assert_int_equal(t.ndims, 2);
    assert_int_equal(t.dims[0], 2);
    assert_int_equal(t.dims[1], 4);
    assert_int_equal(t.dims[2], 1);
    assert_int_equal(t.chips, 8);
    t = parse_ok("2x2x2");
    assert_int_equal(t.ndims, 3);
    assert_int_equal(t.dims[0], 2);
    assert_int_equal(t.dims[1], 2);
    assert_int_equal(t.dims[2], 2);
    assert_int_equal(t.chips, 8);
    t = parse_ok("8x8x16");
    assert_int_equal(t.chips, 1024);
    t = parse_ok("1x1");
    assert_int_equal(t.chips, 1);
    t = parse_ok("04x4");
    assert_int_equal(t.chips, 16);
    t = parse_ok("4096x4096"); /* exactly the chip limit */
    assert_int_equal(t.chips, WH_TOPOLOGY_MAX_CHIPS);
}

static void test_parse_bad(void **unused)
{
    (void)unused;
    parse_bad(NULL, "empty");
    parse_bad("", "empty");
    parse_bad("x", "\"x\"");
    parse_bad("2x", "not of the form");
    parse_bad("x2", "not of the form");
    parse_bad("2xx2", "not of the form");
    parse_bad("8", "not of the form");
    parse_bad("0x4", "zero dimension");
    parse_bad("4x0", "zero dimension");
    parse_bad("2x2x0", "zero dimension");
    parse_bad("axb", "\"axb\"");
    parse_bad("2X4", "not of the form");
    parse_bad("2x4 ", "not of the form");
    parse_bad("2x-4", "not of the form");
    parse_bad("+2x4", "not of the form");
    parse_bad("1x2x3x4", "not of the form");
    parse_bad("1234567890x1", "not of the form"); /* a part of 10 digits */
    parse_bad("99999x99999", "more than");        /* chips overflow the limit */
    parse_bad("4097x4096", "more than");
    parse_bad("999999999x999999999x999999999", "more than");
}

static long hosts(const char *topo, long chips_per_host)
{
    struct wh_topology t = parse_ok(topo);
    return wh_topology_hosts(&t, chips_per_host);
}

static void test_hosts(void **unused)
{
    (void)unused;
    /* the examples of the reference's host count
     * (docs/internals/reference-behaviour.md §2.3) */
    assert_int_equal(hosts("2x2x1", 4), 1); /* v4 */
    assert_int_equal(hosts("2x2x2", 4), 2);
    assert_int_equal(hosts("2x2x4", 4), 4);
    assert_int_equal(hosts("2x4", 8), 1); /* v5e, v6e */
    assert_int_equal(hosts("2x4", 4), 2);
    assert_int_equal(hosts("4x4", 4), 4);
    assert_int_equal(hosts("2x2x1", 4), 1); /* tpu7x */
    assert_int_equal(hosts("2x2x2", 4), 2);
    assert_int_equal(hosts("2x2x2", 2 + 2), 2); /* two containers x 2 chips */
    /* larger and degenerate cases */
    assert_int_equal(hosts("16x16", 4), 64);
    assert_int_equal(hosts("8x8x16", 4), 256);
    assert_int_equal(hosts("2x2x1", 8), 1); /* more chips than the slice: at least 1 */
    assert_int_equal(hosts("4x4", 0), 1);   /* no chips: 1 host */
    assert_int_equal(hosts("4x4", -4), 1);
    assert_int_equal(hosts("4x4", 3), 5); /* integer division */
}

static void test_is_subset(void **unused)
{
    (void)unused;
    assert_true(wh_topology_is_subset("2x2", "4x4"));
    assert_true(wh_topology_is_subset("4x4", "4x4"));
    assert_true(wh_topology_is_subset("2x2x1", "2x2x2"));
    assert_true(wh_topology_is_subset("2x4x4", "4x4x8"));
    assert_false(wh_topology_is_subset("4x4", "2x4"));
    assert_false(wh_topology_is_subset("2x8", "4x4"));
    assert_false(wh_topology_is_subset("2x2x2", "4x4"));
    assert_false(wh_topology_is_subset("2x2", "4x4x4"));
    assert_false(wh_topology_is_subset("axb", "4x4"));
    assert_false(wh_topology_is_subset("2x2", "axb"));
    assert_false(wh_topology_is_subset("", "4x4"));
    assert_false(wh_topology_is_subset("2x2", ""));
    assert_false(wh_topology_is_subset("2x", "4x4"));
}

static void test_generations(void **unused)
{
    (void)unused;
    assert_int_equal(wh_tpu_gen_from_accelerator("tpu-v4-podslice"), WH_GEN_V4);
    assert_int_equal(wh_tpu_gen_from_accelerator("tpu-v5-lite-podslice"), WH_GEN_V5E);
    assert_int_equal(wh_tpu_gen_from_accelerator("tpu-v5-lite-device"), WH_GEN_V5E);
    assert_int_equal(wh_tpu_gen_from_accelerator("tpu-v5p-slice"), WH_GEN_V5P);
    assert_int_equal(wh_tpu_gen_from_accelerator("tpu-v6e-slice"), WH_GEN_V6E);
    assert_int_equal(wh_tpu_gen_from_accelerator("tpu7x"), WH_GEN_TPU7X);
    /* a machine type, not a label value: the table matches labels exactly */
    assert_int_equal(wh_tpu_gen_from_accelerator("tpu7x-standard-4t"), WH_GEN_UNKNOWN);
    assert_int_equal(wh_tpu_gen_from_accelerator("tpu-v6e-podslice"), WH_GEN_UNKNOWN);
    assert_int_equal(wh_tpu_gen_from_accelerator("nvidia-tesla-a100"), WH_GEN_UNKNOWN);
    assert_int_equal(wh_tpu_gen_from_accelerator(""), WH_GEN_UNKNOWN);
    assert_int_equal(wh_tpu_gen_from_accelerator(NULL), WH_GEN_UNKNOWN);
    assert_int_equal(wh_tpu_gen_dims(WH_GEN_V4), 3);
    assert_int_equal(wh_tpu_gen_dims(WH_GEN_V5E), 2);
    assert_int_equal(wh_tpu_gen_dims(WH_GEN_V5P), 3);
    assert_int_equal(wh_tpu_gen_dims(WH_GEN_V6E), 2);
    assert_int_equal(wh_tpu_gen_dims(WH_GEN_TPU7X), 3);
    assert_int_equal(wh_tpu_gen_dims(WH_GEN_UNKNOWN), 0);
    assert_string_equal(wh_tpu_gen_name(WH_GEN_V6E), "v6e");
    assert_string_equal(wh_tpu_gen_name(WH_GEN_TPU7X), "tpu7x");
    assert_string_equal(wh_tpu_gen_name(WH_GEN_UNKNOWN), "unknown");
    assert_true(wh_is_tpu7x("tpu7x"));
    assert_true(wh_is_tpu7x("tpu7x-standard-4t"));
    assert_false(wh_is_tpu7x("tpu7"));
    assert_false(wh_is_tpu7x("tpu-v6e-slice"));
    assert_false(wh_is_tpu7x(NULL));
}

/* The shape check's verdict for accel, topology topo and chips per pod, with
 * the problem text in p. */
static bool shape(const char *accel, const char *topo, long chips, struct wh_shape_problem *p)
{
    struct wh_tpu_shape s = {.accel = accel,
                             .accel_field = "accel",
                             .topology = topo,
                             .topo_field = "topo",
                             .chips = chips,
                             .chips_field = "tpu"};
    struct wh_topology t;
    const struct wh_tpu_gen_info *gen;
    return wh_tpu_shape_check(&s, &t, &gen, p);
}

static void shape_denied(const char *accel, const char *topo, long chips, const char *part)
{
    struct wh_shape_problem p;
    if (shape(accel, topo, chips, &p))
        fail_msg("%s %s with %ld chips per pod admitted", accel, topo, chips);
    assert_string_equal(p.rule, WH_RULE_CHIPS_PER_VM);
    if (!strstr(p.text, part))
        fail_msg("%s %s with %ld: \"%s\" does not mention \"%s\"", accel, topo, chips, p.text, part);
}

/* Issue 24: chips per pod depend on the topology, not only on the generation
 * (docs/workloads.md, "TPU generations"): 1-chip VMs make only 1x1, 8-chip VMs
 * only the single-host 2x4, the rest is 4-chip VMs. */
static void test_chips_per_topology(void **unused)
{
    (void)unused;
    struct wh_shape_problem p;
    const char *const two_d[] = {"tpu-v6e-slice", "tpu-v5-lite-podslice", "tpu-v5-lite-device"};
    for (size_t i = 0; i < 3; i++) {
        assert_true(shape(two_d[i], "1x1", 1, &p));
        assert_true(shape(two_d[i], "2x2", 4, &p));
        assert_true(shape(two_d[i], "2x4", 8, &p)); /* one 8t VM */
        assert_true(shape(two_d[i], "2x4", 4, &p)); /* two 4t VMs */
        assert_true(shape(two_d[i], "4x4", 4, &p));
        assert_true(shape(two_d[i], "16x16", 4, &p));
        assert_true(shape(two_d[i], NULL, 8, &p)); /* no topology: any VM of the generation */
        assert_true(shape(two_d[i], NULL, 1, &p));
        assert_false(shape(two_d[i], NULL, 2, &p));
    }
    shape_denied("tpu-v6e-slice", "4x4", 8,
                 "tpu is 8 per pod, but v6e topology 4x4 takes 4 chips per pod (4 VMs of "
                 "ct6e-standard-4t); valid values: 4 (the topology is topo)");
    shape_denied("tpu-v5-lite-podslice", "8x8", 8,
                 "v5e topology 8x8 takes 4 chips per pod (16 VMs of ct5lp-hightpu-4t); valid "
                 "values: 4");
    shape_denied("tpu-v6e-slice", "2x4", 1,
                 "tpu is 1 per pod, but v6e topology 2x4 takes 4 chips per pod (2 VMs of "
                 "ct6e-standard-4t) or 8 (1 VM of ct6e-standard-8t); valid values: 4, 8");
    shape_denied("tpu-v5-lite-podslice", "2x2", 1,
                 "v5e topology 2x2 takes 4 chips per pod (1 VM of ct5lp-hightpu-4t)");
    shape_denied("tpu-v6e-slice", "4x4", 1, "valid values: 4");
    shape_denied("tpu-v6e-slice", "4x4", 2, "no v6e VM has 2 chips"); /* no such VM at all */
    shape_denied("tpu-v6e-slice", "4x2", 8, "valid values: 4");       /* 8t is 2x4 only */
    shape_denied("tpu-v6e-slice", "1x2", 1, "no v6e VM makes topology 1x2 (topo)");
    /* only the topologies these chips make: 1x1 for the 1-chip VM, never 2x2 */
    assert_false(shape("tpu-v6e-slice", "1x2", 1, &p));
    assert_non_null(strstr(p.text, "valid topologies for these chips per pod: 1x1"));
    assert_null(strstr(p.text, "2x2"));
    assert_true(shape("tpu7x", "1x1x1", 1, &p));
    assert_true(shape("tpu7x", "2x2x1", 4, &p));
    assert_true(shape("tpu7x", "2x2x2", 4, &p));
    shape_denied("tpu7x", "2x2x2", 1,
                 "tpu7x topology 2x2x2 takes 4 chips per pod (2 VMs of tpu7x-standard-4t)");
    assert_true(shape("tpu-v5p-slice", "2x2x4", 4, &p));
    shape_denied("tpu-v5p-slice", "2x2x4", 1, "no v5p VM has 1 chips");
    /* A chip count no VM has, on a topology: that topology's values, never
     * a VM's that does not make it (issue 34, item 4). */
    shape_denied("tpu-v4-podslice", "2x2x2", 8,
                 "no v4 VM has 8 chips, and v4 topology 2x2x2 takes 4 chips per pod (2 VMs of "
                 "ct4p-hightpu-4t); valid values: 4 (the topology is topo)");
    shape_denied("tpu7x", "2x2x2", 8, "valid values: 4 (the topology is topo)");
    shape_denied("tpu-v6e-slice", NULL, 2, "valid values: 1, 4, 8 (one VM's chips per pod)");
    /* chips that do not divide the topology's: the callers' divisor rule */
    assert_true(shape("tpu-v6e-slice", "2x2", 8, &p));
    assert_true(shape("tpu-v6e-slice", "1x1", 4, &p));
    /* the table's own answer */
    const struct wh_tpu_gen_info *v6e = wh_tpu_gen_find("tpu-v6e-slice");
    struct wh_topology t = parse_ok("2x4");
    assert_true(wh_tpu_gen_fits(v6e, &t, 8));
    assert_true(wh_tpu_gen_fits(v6e, &t, 4));
    assert_false(wh_tpu_gen_fits(v6e, &t, 1));
    assert_false(wh_tpu_gen_fits(NULL, &t, 4));
    assert_true(wh_tpu_gen_has_vm(v6e, 8));
    assert_false(wh_tpu_gen_has_vm(v6e, 2));
}

/* Issue 34, item 3: each generation's documented topologies, enumerated or
 * by its cube rule (docs/workloads.md, "Documented topologies", with their
 * sources); one outside them is warned about, never refused. */
static bool documented(const char *accel, const char *topo)
{
    struct wh_topology t;
    char why[WH_ERRBUF_LEN];
    assert_int_equal(wh_topology_parse(topo, &t, why), WH_OK);
    return wh_tpu_gen_documented(wh_tpu_gen_find(accel), &t);
}

/* Issue 34, item 4 (seed 004): a TPU7x 2x2x2 group written per device,
 * with 8 chips per pod. The values named are the ones that make the
 * topology, each with the hosts that change with it, and the same values
 * as data: 1 (the 1-chip VM makes 1x1x1 only) is never one. */
static void test_chips_fix_with_hosts(void **unused)
{
    (void)unused;
    struct wh_tpu_shape s = {.accel = "tpu7x",
                             .accel_field = "accel",
                             .topology = "2x2x2",
                             .topo_field = "topo",
                             .chips = 8,
                             .chips_field = "tpu",
                             .hosts_field = "numOfHosts"};
    struct wh_topology t;
    const struct wh_tpu_gen_info *gen;
    struct wh_shape_problem p;
    assert_false(wh_tpu_shape_check(&s, &t, &gen, &p));
    assert_non_null(strstr(p.text, "valid values: 4 with numOfHosts 2 (change both together;"));
    assert_null(strstr(p.text, "valid values: 1"));
    assert_int_equal(p.n_fits, 1);
    assert_int_equal(p.fits[0].chips, 4);
    assert_int_equal(p.fits[0].hosts, 2);
    /* several: each with its hosts (an LWS leader without TPUs counts one more) */
    s = (struct wh_tpu_shape){.accel = "tpu-v6e-slice",
                              .accel_field = "accel",
                              .topology = "2x4",
                              .topo_field = "topo",
                              .chips = 2,
                              .chips_field = "tpu",
                              .hosts_field = "size",
                              .hosts_plus = 1};
    assert_false(wh_tpu_shape_check(&s, &t, &gen, &p));
    assert_non_null(strstr(p.text, "valid values: 4 with size 3, or 8 with size 2"));
    assert_int_equal(p.n_fits, 2);
    assert_int_equal(p.fits[1].chips, 8);
    assert_int_equal(p.fits[1].hosts, 1);
}

/* Every shape the sources enumerate is documented (the rule holds them all):
 * copied from docs/workloads.md, "Documented topologies". */
static void test_documented_examples(void **unused)
{
    (void)unused;
    /* v4: Ray's set (2x2x1 to 2x4x4, then A <= B <= C multiples of 4 up to
     * 12x12x16), the Cloud TPU pages' examples (8x16x16, 12x12x24, 16x16x16:
     * the 4096-chip pod) and xpk's default v4 shapes */
    static const char *const v4[] = {"2x2x1",   "2x2x2",   "2x2x4",    "2x4x4",    "4x4x4",
                                     "4x4x8",   "4x4x12",  "4x4x16",   "4x8x8",    "4x8x12",
                                     "4x8x16",  "4x12x12", "4x12x16",  "8x8x8",    "8x8x12",
                                     "8x8x16",  "8x12x12", "8x12x16",  "12x12x12", "12x12x16",
                                     "8x16x16", "4x16x16", "12x12x24", "16x16x16", NULL};
    /* v5p: the Cloud TPU v5p table, and xpk's default shape of every v5p
     * size up to the table's largest, 16x16x24 (96 cubes) */
    static const char *const v5p[] =
        {"2x2x1",    "2x2x2",    "2x2x4",    "2x4x4",    "4x4x4",    "4x4x8",    "4x4x12",
         "4x8x8",    "4x4x20",   "4x8x12",   "4x4x28",   "8x8x8",    "4x12x12",  "4x8x20",
         "4x4x44",   "8x8x12",   "4x4x52",   "4x8x28",   "4x12x20",  "8x8x16",   "4x4x68",
         "8x12x12",  "4x4x76",   "8x8x20",   "4x12x28",  "4x8x44",   "4x4x92",   "8x12x16",
         "4x20x20",  "4x8x52",   "12x12x12", "8x8x28",   "4x4x116",  "8x12x20",  "4x4x124",
         "8x16x16",  "4x12x44",  "4x8x68",   "4x20x28",  "12x12x16", "4x4x148",  "4x8x76",
         "4x12x52",  "8x16x20",  "4x4x164",  "8x12x28",  "4x4x172",  "8x8x44",   "12x12x20",
         "4x8x92",   "4x4x188",  "12x16x16", "4x28x28",  "8x20x20",  "4x12x68",  "8x8x52",
         "4x4x212",  "12x12x24", "4x20x44",  "8x16x28",  "4x12x76",  "4x8x116",  "4x4x236",
         "12x16x20", "4x4x244",  "4x8x124",  "12x12x28", "16x16x16", "4x20x52",  "8x12x44",
         "8x8x68",   "4x12x92",  "8x20x28",  "12x16x24", "4x8x148",  "12x20x20", "8x8x76",
         "4x28x44",  "8x12x52",  "16x16x20", "12x12x36", "4x8x164",  "12x16x28", "4x20x68",
         "4x8x172",  "4x12x116", "8x16x44",  "12x20x24", "4x28x52",  "8x8x92",   "4x12x124",
         "4x8x188",  "4x20x76",  "16x16x24", NULL};
    /* TPU7x: Ray's v7x list, xpk's 1x1x1 and a few of xpk's 4t shapes */
    static const char *const tpu7x[] = {"1x1x1",    "2x2x1",  "2x2x2",    "2x2x4",    "2x4x4",
                                        "4x4x4",    "4x4x8",  "4x8x8",    "8x8x8",    "8x8x16",
                                        "8x16x16",  "4x4x12", "12x12x12", "16x16x32", "16x24x24",
                                        "12x12x36", NULL};
    static const struct {
        const char *accel;
        const char *const *list;
    } sets[] = {{"tpu-v4-podslice", v4}, {"tpu-v5p-slice", v5p}, {"tpu7x", tpu7x}};
    for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
        for (const char *const *s = sets[i].list; *s; s++)
            if (!documented(sets[i].accel, *s))
                fail_msg("%s %s: not documented", sets[i].accel, *s);
}

static void test_documented_topologies(void **unused)
{
    (void)unused;
    static const struct {
        const char *accel, *topo;
        bool listed;
    } cases[] = {
        {"tpu-v4-podslice", "2x2x1", true},
        {"tpu-v4-podslice", "4x4x12", true},
        {"tpu-v4-podslice", "16x16x16", true},
        {"tpu-v4-podslice", "8x4x4", true},     /* v4: xpk makes every order */
        {"tpu-v4-podslice", "16x16x20", false}, /* 80 cubes: above the pod */
        {"tpu-v4-podslice", "4x4x6", false},
        {"tpu-v4-podslice", "2x2x3", false},
        {"tpu-v4-podslice", "4x2x2", false},
        {"tpu-v5-lite-podslice", "2x4", true},
        {"tpu-v5-lite-device", "16x16", true},
        {"tpu-v5-lite-podslice", "2x8", false},
        {"tpu-v5-lite-podslice", "4x12", false},
        {"tpu-v5p-slice", "2x2x4", true},
        {"tpu-v5p-slice", "4x4x12", true},
        {"tpu-v5p-slice", "16x16x24", true},
        {"tpu-v5p-slice", "4x4x384", true},   /* 96 cubes */
        {"tpu-v5p-slice", "4x4x388", false},  /* 97 */
        {"tpu-v5p-slice", "16x20x28", false}, /* 140 cubes: xpk's, above the page's 96 */
        {"tpu-v5p-slice", "8x4x4", false},    /* A <= B <= C */
        {"tpu-v5p-slice", "2x2x3", false},
        {"tpu-v5p-slice", "4x4x6", false},
        {"tpu-v5p-slice", "1x1x1", false},
        {"tpu-v6e-slice", "8x16", true},
        {"tpu-v6e-slice", "4x2", false},
        {"tpu7x", "1x1x1", true},
        {"tpu7x", "8x16x16", true},
        {"tpu7x", "24x24x16", false},
        {"tpu7x", "24x24x24", false}, /* 216 cubes */
        {"tpu7x", "2x2x3", false},
        {"tpu7x", "1x2x2", false},
        {"tpu7x", "02x2x1", true},
        {"tpu7x", "04x4x12", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (documented(cases[i].accel, cases[i].topo) != cases[i].listed)
            fail_msg("%s %s: documented is %d", cases[i].accel, cases[i].topo, !cases[i].listed);
    /* every entry of every list parses, has the generation's dimensions, and
     * is made by one of its VMs; so is every shape of a cube rule (multiples
     * of 4 chips, made by the 4-chip VM) */
    static const char *const accels[] = {"tpu-v4-podslice", "tpu-v5-lite-podslice", "tpu-v5p-slice",
                                         "tpu-v6e-slice", "tpu7x"};
    for (size_t i = 0; i < 5; i++) {
        const struct wh_tpu_gen_info *g = wh_tpu_gen_find(accels[i]);
        assert_non_null(g->topologies[0]);
        for (const char *const *s = g->topologies; *s; s++) {
            struct wh_topology t;
            char why[WH_ERRBUF_LEN];
            assert_int_equal(wh_topology_parse(*s, &t, why), WH_OK);
            assert_int_equal(t.ndims, g->dims);
            bool made = false;
            for (const struct wh_tpu_vm *v = g->vms; v->chips; v++)
                made |= wh_tpu_gen_fits(g, &t, v->chips);
            if (!made)
                fail_msg("%s %s: no VM of the table makes it", g->name, *s);
        }
        struct wh_topology cube = {3, {4, 4, 4}, 64};
        assert_int_equal(wh_tpu_gen_documented(g, &cube), g->cubes_max > 0);
        if (g->cubes_max)
            assert_true(wh_tpu_gen_fits(g, &cube, 4));
    }
    /* the messages state the list and the rule: no prose like "and larger" */
    char list[256];
    wh_tpu_gen_topologies(wh_tpu_gen_find("tpu-v4-podslice"), list, sizeof(list));
    assert_string_equal(list, "2x2x1, 2x2x2, 2x2x4, 2x4x4, or AxBxC in any order with each a "
                              "multiple of 4, up to 64 cubes of 4x4x4 (4096 chips)");
    wh_tpu_gen_topologies(wh_tpu_gen_find("tpu7x"), list, sizeof(list));
    assert_string_equal(list, "1x1x1, 2x2x1, 2x2x2, 2x2x4, 2x4x4, or AxBxC (A <= B <= C) with "
                              "each a multiple of 4, up to 144 cubes of 4x4x4 (9216 chips)");
    struct wh_shape_problem p;
    assert_false(shape("tpu-v5p-slice", "4x4", 4, &p));
    assert_string_equal(p.rule, WH_RULE_TOPOLOGY_DIMS);
    assert_non_null(strstr(p.text, "valid values: 2x2x1, 2x2x2, 2x2x4, 2x4x4, or AxBxC (A <= B "
                                   "<= C) with each a multiple of 4, up to 96 cubes of 4x4x4 "
                                   "(6144 chips)"));
    assert_null(strstr(p.text, "larger"));
}

static void test_undocumented_warning(void **unused)
{
    (void)unused;
    const struct wh_tpu_gen_info *g = wh_tpu_gen_find("tpu7x");
    struct wh_topology t;
    char why[WH_ERRBUF_LEN], text[768], brief[100];
    assert_int_equal(wh_topology_parse("2x2x3", &t, why), WH_OK);
    assert_true(wh_tpu_topology_undocumented(g, &t, "2x2x3", "spec.x", text, sizeof(text), brief,
                                             sizeof(brief)));
    assert_non_null(strstr(text, "spec.x is \"2x2x3\""));
    assert_non_null(strstr(text, "documented: 1x1x1, 2x2x1, 2x2x2, 2x2x4, 2x4x4, or AxBxC (A <= "
                                 "B <= C) with each a multiple of 4, up to 144 cubes of 4x4x4 "
                                 "(9216 chips))"));
    assert_non_null(strstr(text, "not a refusal"));
    assert_string_equal(brief,
                        "tpu7x topology 2x2x3 is no documented GKE shape: its pods may stay Pending");
    assert_true(strlen(brief) <= 100 - 1);
    assert_int_equal(wh_topology_parse("2x2x2", &t, why), WH_OK);
    assert_false(wh_tpu_topology_undocumented(g, &t, "2x2x2", "spec.x", text, sizeof(text), brief,
                                              sizeof(brief)));
    /* unknown generation, or a shape of the wrong dimensionality (refused by
     * the shape check): no warning */
    assert_false(wh_tpu_topology_undocumented(NULL, &t, "2x2x2", "spec.x", text, sizeof(text),
                                              brief, sizeof(brief)));
    assert_int_equal(wh_topology_parse("4x4", &t, why), WH_OK);
    assert_false(wh_tpu_topology_undocumented(g, &t, "4x4", "spec.x", text, sizeof(text), brief,
                                              sizeof(brief)));
}

/* Issue 34, item 2: the one subslice rule (the RayCluster's) that every path
 * uses: each dimension at most the parent's, in the order written. */
static void test_subslice_fits(void **unused)
{
    (void)unused;
    char text[512];
    assert_true(wh_subslice_fits("2x2x2", "2x2x4", text, sizeof(text)));
    assert_true(wh_subslice_fits("2x2x4", "2x2x4", text, sizeof(text)));
    assert_true(wh_subslice_fits("2x4", "4x4", text, sizeof(text)));
    assert_false(wh_subslice_fits("4x4x4", "2x2x4", text, sizeof(text)));
    assert_string_equal(text, "subslice \"4x4x4\" is not smaller than parent \"2x2x4\"; the "
                              "annotation cloud.google.com/gke-tpu-slice-topology must fit inside "
                              "the node pool topology dimension by dimension");
    /* another orientation of a fitting shape is not accepted (the topology
     * names the chips along the pool's axes: docs/workloads.md, "Subslices"),
     * and the message names the orders that fit, A <= B <= C first */
    assert_false(wh_subslice_fits("2x4x2", "2x2x4", text, sizeof(text)));
    assert_non_null(strstr(text, "dimension by dimension; the topology names the chips along "
                                 "the pool's axes, in their order, so write the same shape as "
                                 "\"2x2x4\""));
    assert_false(wh_subslice_fits("4x2x2", "2x4x4", text, sizeof(text)));
    assert_non_null(strstr(text, "write the same shape as \"2x2x4\" or \"2x4x2\""));
    assert_false(wh_subslice_fits("4x2", "2x4", text, sizeof(text)));
    assert_non_null(strstr(text, "as \"2x4\""));
    /* no order fits: no orientation named */
    assert_false(wh_subslice_fits("4x4x4", "2x2x8", text, sizeof(text)));
    assert_null(strstr(text, "write"));
    assert_false(wh_subslice_fits("2x2", "2x2x4", text, sizeof(text)));
    assert_false(wh_subslice_fits("axb", "2x2x4", text, sizeof(text)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_hosts),
        cmocka_unit_test(test_is_subset),
        cmocka_unit_test(test_generations),
        cmocka_unit_test(test_chips_per_topology),
        cmocka_unit_test(test_chips_fix_with_hosts),
        cmocka_unit_test(test_documented_examples),
        cmocka_unit_test(test_documented_topologies),
        cmocka_unit_test(test_undocumented_warning),
        cmocka_unit_test(test_subslice_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
