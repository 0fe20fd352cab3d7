/* map.c: the doctor model's maps, string keys to borrowed values, over
 * the tree's hash table (wh/htab.h); see doctor_impl.h. */
#include "doctor_impl.h"

#include <stdlib.h> /* free, malloc */
#include <string.h> /* memcpy, strcmp, strlen */

#include "wh/hash.h" /* wh_hash_str, WH_HASH_INIT */
#include "wh/htab.h" /* wh_htab_*, struct wh_hnode */

/* An entry: the table's node first, the key copied after it. */
struct dent {
    struct wh_hnode h;
    void *val;
    char key[];
};

void *wh_dr_map_get(const struct dmap *m, const char *key)
{
    if (!m->t.nb)
        return NULL;
    uint32_t h = wh_hash_str(WH_HASH_INIT, key);
    for (const struct wh_hnode *e = *wh_htab_slot(&m->t, h); e; e = e->next) {
        const struct dent *d = (const struct dent *)e;
        if (e->hash == h && !strcmp(d->key, key))
            return d->val;
    }
    return NULL;
}

enum wh_err wh_dr_map_put(struct dmap *m, const char *key, void *val)
{
    size_t n = strlen(key) + 1;
    struct dent *e = wh_htab_grow(&m->t) ? malloc(sizeof(*e) + n) : NULL;
    if (!e)
        return WH_ERR_NOMEM;
    e->h.hash = wh_hash_str(WH_HASH_INIT, key);
    e->val = val;
    memcpy(e->key, key, n);
    wh_htab_insert(&m->t, &e->h);
    return WH_OK;
}

void wh_dr_map_free(struct dmap *m)
{
    for (size_t i = 0; i < m->t.nb; i++)
        for (struct wh_hnode *e = m->t.b[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    wh_htab_free(&m->t);
}
