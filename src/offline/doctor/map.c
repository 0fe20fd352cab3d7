/* map.c: the string-keyed hash table of the doctor's model (doctor_impl.h). */
#include "doctor_impl.h"

#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset, strcmp, strdup */

#include "wh/hash.h" /* wh_hash_str, WH_HASH_INIT */

void *wh_dr_map_get(const struct dmap *m, const char *key)
{
    if (!m->nb)
        return NULL;
    uint32_t h = wh_hash_str(WH_HASH_INIT, key);
    for (struct dent *e = m->b[h & (m->nb - 1)]; e; e = e->next)
        if (e->h == h && !strcmp(e->key, key))
            return e->val;
    return NULL;
}

static bool dmap_grow(struct dmap *m)
{
    if (m->n < m->nb)
        return true;
    size_t nb = m->nb ? m->nb * 2 : 64;
    struct dent **b = calloc(nb, sizeof(*b));
    if (!b)
        return false;
    for (size_t i = 0; i < m->nb; i++)
        for (struct dent *e = m->b[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->h & (nb - 1)];
            b[e->h & (nb - 1)] = e;
        }
    free(m->b);
    m->b = b;
    m->nb = nb;
    return true;
}

enum wh_err wh_dr_map_put(struct dmap *m, const char *key, void *val)
{
    struct dent *e = dmap_grow(m) ? calloc(1, sizeof(*e)) : NULL;
    if (!e || !(e->key = strdup(key))) {
        free(e);
        return WH_ERR_NOMEM;
    }
    e->h = wh_hash_str(WH_HASH_INIT, key);
    e->val = val;
    e->next = m->b[e->h & (m->nb - 1)];
    m->b[e->h & (m->nb - 1)] = e;
    m->n++;
    return WH_OK;
}

void wh_dr_map_free(struct dmap *m)
{
    for (size_t i = 0; i < m->nb; i++)
        for (struct dent *e = m->b[i], *next; e; e = next) {
            next = e->next;
            free(e->key);
            free(e);
        }
    free(m->b);
    memset(m, 0, sizeof(*m));
}
