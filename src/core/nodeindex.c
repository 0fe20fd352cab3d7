/* nodeindex.c: TPU nodes by label (see nodeindex.h).
 *
 * A chained hash table of the distinct (key, value) pairs; each pair holds
 * the ids of its nodes (a posting list), and each node, per label, where in
 * which list it sits, so that a node leaves every list in O(1) per label
 * (the last id of a list takes the leaver's place). */
#include "wh/nodeindex.h"

#include <stdbool.h> /* bool */
#include <string.h>  /* strcmp, strlen, memcpy, memset */

#include "wh/hash.h" /* wh_hash_str, WH_HASH_INIT */
#include "wh/mem.h"  /* wh_malloc, wh_realloc, wh_calloc, wh_free */

struct ix_pair {
    struct ix_pair *next; /* chain of its bucket */
    uint32_t hash;
    uint32_t *ids;  /* the nodes carrying it */
    uint32_t *refs; /* ids[i]'s label slot (which of its refs points here) */
    size_t n, cap;
    const char *value; /* into kv, after the key */
    char kv[];         /* key\0value\0 */
};

struct ix_ref {
    struct ix_pair *p;
    uint32_t pos; /* in p->ids */
};

struct ix_node {
    struct ix_ref *refs; /* NULL: the id is not indexed */
    uint32_t n;
};

struct wh_nodeindex {
    struct ix_pair **b; /* nb buckets, a power of 2 */
    size_t nb, n_pairs;
    struct ix_node *nodes; /* by id */
    size_t cap_nodes;
};

struct wh_nodeindex *wh_nodeindex_new(void)
{
    return wh_calloc(1, sizeof(struct wh_nodeindex));
}

void wh_nodeindex_free(struct wh_nodeindex *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->nb; i++)
        for (struct ix_pair *p = ix->b[i], *next; p; p = next) {
            next = p->next;
            wh_free(p->ids);
            wh_free(p->refs);
            wh_free(p);
        }
    for (size_t i = 0; i < ix->cap_nodes; i++)
        wh_free(ix->nodes[i].refs);
    wh_free(ix->b);
    wh_free(ix->nodes);
    wh_free(ix);
}

static uint32_t pair_hash(const char *key, const char *value)
{
    return wh_hash_str(wh_hash_str(WH_HASH_INIT, key), value);
}

static struct ix_pair *find_pair(const struct wh_nodeindex *ix, const char *key, const char *value,
                                 uint32_t h)
{
    if (!ix->nb)
        return NULL;
    for (struct ix_pair *p = ix->b[h & (ix->nb - 1)]; p; p = p->next)
        if (p->hash == h && !strcmp(p->kv, key) && !strcmp(p->value, value))
            return p;
    return NULL;
}

/* Buckets for one more pair (load at most 1); false on OOM. */
static bool grow_buckets(struct wh_nodeindex *ix)
{
    if (ix->n_pairs < ix->nb)
        return true;
    size_t nb = ix->nb ? ix->nb * 2 : 64;
    struct ix_pair **b = wh_calloc(nb, sizeof(*b));
    if (!b)
        return false;
    for (size_t i = 0; i < ix->nb; i++)
        for (struct ix_pair *p = ix->b[i], *next; p; p = next) {
            next = p->next;
            p->next = b[p->hash & (nb - 1)];
            b[p->hash & (nb - 1)] = p;
        }
    wh_free(ix->b);
    ix->b = b;
    ix->nb = nb;
    return true;
}

/* The pair (key, value), made (empty) when new; NULL on OOM. */
static struct ix_pair *get_pair(struct wh_nodeindex *ix, const char *key, const char *value)
{
    uint32_t h = pair_hash(key, value);
    struct ix_pair *p = find_pair(ix, key, value, h);
    if (p)
        return p;
    size_t kl = strlen(key) + 1, vl = strlen(value) + 1;
    if (!grow_buckets(ix) || !(p = wh_calloc(1, sizeof(*p) + kl + vl)))
        return NULL;
    memcpy(p->kv, key, kl);
    memcpy(p->kv + kl, value, vl);
    p->value = p->kv + kl;
    p->hash = h;
    p->next = ix->b[h & (ix->nb - 1)];
    ix->b[h & (ix->nb - 1)] = p;
    ix->n_pairs++;
    return p;
}

static void drop_pair(struct wh_nodeindex *ix, struct ix_pair *p)
{
    struct ix_pair **pp = &ix->b[p->hash & (ix->nb - 1)];
    while (*pp != p)
        pp = &(*pp)->next;
    *pp = p->next;
    ix->n_pairs--;
    wh_free(p->ids);
    wh_free(p->refs);
    wh_free(p);
}

static bool grow_nodes(struct wh_nodeindex *ix, uint32_t id)
{
    if (id < ix->cap_nodes)
        return true;
    size_t nc = ix->cap_nodes ? ix->cap_nodes : 16;
    while (nc <= id)
        nc *= 2;
    struct ix_node *nn = wh_realloc(ix->nodes, nc * sizeof(*nn));
    if (!nn)
        return false;
    memset(nn + ix->cap_nodes, 0, (nc - ix->cap_nodes) * sizeof(*nn));
    ix->nodes = nn;
    ix->cap_nodes = nc;
    return true;
}

static bool post_room(struct ix_pair *p)
{
    if (p->n < p->cap)
        return true;
    size_t nc = p->cap ? p->cap * 2 : 4;
    uint32_t *ids = wh_realloc(p->ids, nc * sizeof(*ids));
    if (ids)
        p->ids = ids;
    uint32_t *refs = ids ? wh_realloc(p->refs, nc * sizeof(*refs)) : NULL;
    if (refs)
        p->refs = refs;
    if (!refs)
        return false;
    p->cap = nc;
    return true;
}

/* Take node id out of its r-th pair's list. */
static void unpost(struct wh_nodeindex *ix, struct ix_node *node, uint32_t r)
{
    struct ix_pair *p = node->refs[r].p;
    uint32_t pos = node->refs[r].pos;
    size_t last = --p->n;
    if (pos != last) {
        p->ids[pos] = p->ids[last];
        p->refs[pos] = p->refs[last];
        ix->nodes[p->ids[pos]].refs[p->refs[pos]].pos = pos;
    }
    if (!p->n)
        drop_pair(ix, p);
}

enum wh_err wh_nodeindex_add(struct wh_nodeindex *ix, uint32_t id, const struct wh_node_rec *rec)
{
    if (!grow_nodes(ix, id))
        return WH_ERR_NOMEM;
    struct ix_node *node = &ix->nodes[id];
    node->refs = wh_malloc((rec->n_labels ? rec->n_labels : 1) * sizeof(*node->refs));
    node->n = 0;
    if (!node->refs)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < rec->n_labels; i++) {
        struct ix_pair *p = get_pair(ix, rec->keys[i], rec->values[i]);
        if (p && p->n && p->ids[p->n - 1] == id)
            continue; /* the same label twice */
        if (!p || !post_room(p)) {
            if (p && !p->n)
                drop_pair(ix, p);
            wh_nodeindex_remove(ix, id);
            return WH_ERR_NOMEM;
        }
        p->ids[p->n] = id;
        p->refs[p->n] = node->n;
        node->refs[node->n++] = (struct ix_ref){.p = p, .pos = (uint32_t)p->n};
        p->n++;
    }
    return WH_OK;
}

void wh_nodeindex_remove(struct wh_nodeindex *ix, uint32_t id)
{
    if (id >= ix->cap_nodes || !ix->nodes[id].refs)
        return;
    struct ix_node *node = &ix->nodes[id];
    for (uint32_t r = 0; r < node->n; r++)
        unpost(ix, node, r);
    wh_free(node->refs);
    node->refs = NULL;
    node->n = 0;
}

void wh_nodeindex_move(struct wh_nodeindex *ix, uint32_t from, uint32_t to)
{
    if (to >= from || from >= ix->cap_nodes || !ix->nodes[from].refs)
        return;
    struct ix_node *node = &ix->nodes[from];
    for (uint32_t r = 0; r < node->n; r++)
        node->refs[r].p->ids[node->refs[r].pos] = to;
    ix->nodes[to] = *node;
    *node = (struct ix_node){0};
}

const uint32_t *wh_nodeindex_find(const struct wh_nodeindex *ix, const char *key, const char *value,
                                  size_t *n)
{
    const struct ix_pair *p = find_pair(ix, key, value, pair_hash(key, value));
    *n = p ? p->n : 0;
    return p ? p->ids : NULL;
}

const uint32_t *wh_nodeindex_candidates(const struct wh_nodeindex *ix, const char *const *pairs,
                                        size_t n_pairs, size_t *n)
{
    const uint32_t *best = NULL;
    *n = 0;
    for (size_t i = 0; i < n_pairs; i++) {
        size_t k;
        const uint32_t *ids = wh_nodeindex_find(ix, pairs[2 * i], pairs[2 * i + 1], &k);
        if (!k) {
            *n = 0;
            return NULL; /* no node carries this pair: none carries them all */
        }
        if (!best || k < *n) {
            best = ids;
            *n = k;
        }
    }
    return best;
}
