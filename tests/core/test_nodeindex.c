/* test_nodeindex.c: the index of nodes by label (nodeindex.h) against a
 * walk over every node, on random nodes added, changed, removed and moved
 * the way the kube room's store does (a dense array: a removed slot takes
 * the last node), and random selectors of one to three labels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wh/nodeindex.h"
#include "wh/state.h"

#define MAX_NODES 300
#define MAX_LABELS 8

static const char *const keys[] = {"a", "b", "c", "pool", "block", "topology"};
static const char *const values[] = {"x", "y", "z", "w"};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))
#define N_VALUES (sizeof(values) / sizeof(values[0]))

struct tnode {
    size_t n;
    const char *k[MAX_LABELS], *v[MAX_LABELS];
    struct wh_node_rec rec;
};

static struct tnode nodes[MAX_NODES];
static size_t n_nodes;

static uint64_t rng = 88172645463325252ULL;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* A random node; now and then a key given twice (a JSON object may). */
static void random_node(struct tnode *t)
{
    t->n = rnd(MAX_LABELS);
    for (size_t i = 0; i < t->n; i++) {
        t->k[i] = keys[rnd(N_KEYS)];
        t->v[i] = values[rnd(N_VALUES)];
    }
    t->rec = (struct wh_node_rec){.name = "n", .n_labels = t->n, .keys = t->k, .values = t->v};
}

/* The set of nodes the scan and the index give for pairs, compared. */
static void check_query(const struct wh_nodeindex *ix, const char *const *pairs, size_t n_pairs)
{
    char by_scan[MAX_NODES] = {0}, by_index[MAX_NODES] = {0};
    for (size_t i = 0; i < n_nodes; i++)
        by_scan[i] = wh_node_has_labels(&nodes[i].rec, pairs, n_pairs);
    size_t n;
    const uint32_t *ids = wh_nodeindex_candidates(ix, pairs, n_pairs, &n);
    for (size_t i = 0; i < n; i++) {
        assert_true(ids[i] < n_nodes);
        assert_int_equal(by_index[ids[i]], 0); /* each node once */
        by_index[ids[i]] = 1;
    }
    for (size_t i = 0; i < n_nodes; i++) {
        if (by_scan[i])
            assert_int_equal(by_index[i], 1); /* a superset of the matches */
        by_index[i] = by_index[i] && wh_node_has_labels(&nodes[i].rec, pairs, n_pairs);
    }
    assert_memory_equal(by_scan, by_index, sizeof(by_scan));
}

/* wh_nodeindex_find(k, v) is exactly the nodes with some label k = v. */
static void check_find(const struct wh_nodeindex *ix, const char *k, const char *v)
{
    char want[MAX_NODES] = {0}, got[MAX_NODES] = {0};
    for (size_t i = 0; i < n_nodes; i++)
        for (size_t l = 0; l < nodes[i].n; l++)
            want[i] |= !strcmp(nodes[i].k[l], k) && !strcmp(nodes[i].v[l], v);
    size_t n;
    const uint32_t *ids = wh_nodeindex_find(ix, k, v, &n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(got[ids[i]], 0);
        got[ids[i]] = 1;
    }
    assert_memory_equal(want, got, sizeof(want));
}

static void step(struct wh_nodeindex *ix, unsigned op)
{
    if (op < 5 && n_nodes < MAX_NODES) { /* a new node at the end */
        random_node(&nodes[n_nodes]);
        assert_int_equal(wh_nodeindex_add(ix, (uint32_t)n_nodes, &nodes[n_nodes].rec), WH_OK);
        n_nodes++;
    } else if (op < 7 && n_nodes) { /* a node changed: out, then in again */
        size_t i = rnd((unsigned)n_nodes);
        wh_nodeindex_remove(ix, (uint32_t)i);
        random_node(&nodes[i]);
        assert_int_equal(wh_nodeindex_add(ix, (uint32_t)i, &nodes[i].rec), WH_OK);
    } else if (n_nodes) { /* deleted: the last node takes its slot */
        size_t i = rnd((unsigned)n_nodes), last = n_nodes - 1;
        wh_nodeindex_remove(ix, (uint32_t)i);
        if (i != last) {
            nodes[i] = nodes[last];
            nodes[i].rec.keys = nodes[i].k;
            nodes[i].rec.values = nodes[i].v;
            wh_nodeindex_move(ix, (uint32_t)last, (uint32_t)i);
        }
        n_nodes--;
    }
}

static void test_random_against_scan(void **unused)
{
    (void)unused;
    struct wh_nodeindex *ix = wh_nodeindex_new();
    assert_non_null(ix);
    n_nodes = 0;
    for (int round = 0; round < 20000; round++) {
        step(ix, rnd(10));
        if (round % 10)
            continue;
        const char *pairs[6];
        size_t n_pairs = 1 + rnd(3);
        for (size_t i = 0; i < n_pairs; i++) {
            pairs[2 * i] = keys[rnd(N_KEYS)];
            pairs[2 * i + 1] = values[rnd(N_VALUES)];
        }
        check_query(ix, pairs, n_pairs);
        check_find(ix, pairs[0], pairs[1]);
    }
    /* Emptied: every pair has gone (and ASan sees nothing left behind). */
    while (n_nodes)
        step(ix, 9);
    for (size_t k = 0; k < N_KEYS; k++)
        for (size_t v = 0; v < N_VALUES; v++) {
            size_t n;
            assert_null(wh_nodeindex_find(ix, keys[k], values[v], &n));
            assert_int_equal(n, 0);
        }
    wh_nodeindex_free(ix);
}

static void test_unknown_pair_matches_none(void **unused)
{
    (void)unused;
    struct wh_nodeindex *ix = wh_nodeindex_new();
    struct tnode t = {.n = 2, .k = {"a", "b"}, .v = {"x", "y"}};
    t.rec = (struct wh_node_rec){.name = "n", .n_labels = 2, .keys = t.k, .values = t.v};
    assert_int_equal(wh_nodeindex_add(ix, 0, &t.rec), WH_OK);
    const char *both[] = {"a", "x", "b", "y"}, *other[] = {"a", "x", "c", "x"};
    size_t n;
    const uint32_t *ids = wh_nodeindex_candidates(ix, both, 2, &n);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 0);
    assert_null(wh_nodeindex_candidates(ix, other, 2, &n));
    assert_int_equal(n, 0);
    wh_nodeindex_remove(ix, 7); /* not indexed: nothing happens */
    wh_nodeindex_remove(ix, 0);
    assert_null(wh_nodeindex_candidates(ix, both, 2, &n));
    wh_nodeindex_free(ix);
    wh_nodeindex_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_against_scan),
        cmocka_unit_test(test_unknown_pair_matches_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
