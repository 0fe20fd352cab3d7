/* htab.c: chained hash tables and interned strings (see htab.h). */
#include "wh/htab.h"

#include <stdlib.h> /* calloc, malloc, free */
#include <string.h> /* strcmp, strlen, memcpy */

#include "wh/hash.h" /* wh_hash_str */

bool wh_htab_grow(struct wh_htab *t)
{
    if (t->n < t->nb)
        return true;
    size_t nb = t->nb ? t->nb * 2 : 64;
    struct wh_hnode **b = calloc(nb, sizeof(*b));
    if (!b)
        return t->nb > 0; /* keep working with longer chains */
    for (size_t i = 0; i < t->nb; i++) {
        for (struct wh_hnode *e = t->b[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    }
    free(t->b);
    t->b = b;
    t->nb = nb;
    return true;
}

void wh_htab_insert(struct wh_htab *t, struct wh_hnode *e)
{
    struct wh_hnode **s = wh_htab_slot(t, e->hash);
    e->next = *s;
    *s = e;
    t->n++;
}

void wh_htab_remove(struct wh_htab *t, struct wh_hnode *e)
{
    for (struct wh_hnode **p = wh_htab_slot(t, e->hash); *p; p = &(*p)->next) {
        if (*p == e) {
            *p = e->next;
            t->n--;
            return;
        }
    }
}

void wh_htab_free(struct wh_htab *t)
{
    free(t->b);
    t->b = NULL;
    t->nb = t->n = 0;
}

struct istr {
    struct wh_hnode h;
    uint32_t refs;
    char s[];
};

const char *wh_intern(struct wh_htab *t, const char *s)
{
    uint32_t h = wh_hash_str(WH_HASH_INIT, s);
    if (t->nb) {
        for (struct wh_hnode *e = *wh_htab_slot(t, h); e; e = e->next) {
            struct istr *is = (struct istr *)e;
            if (e->hash == h && !strcmp(is->s, s)) {
                is->refs++;
                return is->s;
            }
        }
    }
    if (!wh_htab_grow(t))
        return NULL;
    size_t n = strlen(s) + 1;
    struct istr *is = malloc(sizeof(*is) + n);
    if (!is)
        return NULL;
    is->h.hash = h;
    is->refs = 1;
    memcpy(is->s, s, n);
    wh_htab_insert(t, &is->h);
    return is->s;
}

void wh_unintern(struct wh_htab *t, const char *s)
{
    if (!s)
        return;
    struct istr *is = (struct istr *)(void *)(s - offsetof(struct istr, s));
    if (--is->refs == 0) {
        wh_htab_remove(t, &is->h);
        free(is);
    }
}
