/* htab.h: an intrusive chained hash table and refcounted interned strings
 * (the pod and node store's tables, store.c; the doctor's maps,
 * src/offline/doctor/map.c).
 *
 * Intrusive: an entry embeds struct wh_hnode as its first member and sets
 * its hash; the table links entries but never allocates or frees them, so
 * the caller frees its entries (after removing them) and then the bucket
 * array with wh_htab_free(). Power-of-two buckets, grown at load 1.
 *
 * Interned strings live in a table of their own: wh_intern() returns a
 * string shared by every caller that interned the same text, valid until
 * each of them called wh_unintern() once.
 *
 * Not thread-safe: the caller locks. Memory comes from the C library's
 * malloc (never a request arena: the tables outlive requests).
 */
#ifndef WH_HTAB_H
#define WH_HTAB_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint32_t */

struct wh_hnode {
    struct wh_hnode *next;
    uint32_t hash;
};

struct wh_htab {
    struct wh_hnode **b; /* nb buckets; NULL while nb is 0 */
    size_t nb, n;        /* buckets, entries */
};

/* Make room for one more entry; false only when the table has no buckets
 * and none can be allocated (a full table keeps working with longer
 * chains). */
bool wh_htab_grow(struct wh_htab *t);
/* Link e (its hash set); call after wh_htab_grow() succeeded. */
void wh_htab_insert(struct wh_htab *t, struct wh_hnode *e);
/* Unlink e, which the table holds. */
void wh_htab_remove(struct wh_htab *t, struct wh_hnode *e);
/* Free the bucket array (the entries are the caller's). */
void wh_htab_free(struct wh_htab *t);

/* The chain of hash h; the table must have buckets (nb > 0). */
static inline struct wh_hnode **wh_htab_slot(const struct wh_htab *t, uint32_t h)
{
    return &t->b[h & (t->nb - 1)];
}

/* The interned copy of s, one more reference; NULL on OOM. */
const char *wh_intern(struct wh_htab *t, const char *s);
/* Drop one reference of a string wh_intern() returned; NULL-safe. */
void wh_unintern(struct wh_htab *t, const char *s);

#endif /* WH_HTAB_H */
