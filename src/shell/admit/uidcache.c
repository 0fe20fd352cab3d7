/* uidcache.c: a bounded table of uids by namespace and name (uidcache.h). */
#include "uidcache.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* strcmp, strlen */

struct entry {
    bool used;
    long at_ms; /* when stored */
    char ns[WH_UIDCACHE_NS_MAX], name[WH_UIDCACHE_NAME_MAX], uid[WH_UIDCACHE_UID_MAX];
};

struct wh_uidcache {
    size_t cap, len;
    long ttl_ms;
    struct entry e[]; /* cap of them; a linear scan: the worker looks up one per Event */
};

struct wh_uidcache *wh_uidcache_new(size_t cap, long ttl_ms)
{
    if (!cap || ttl_ms <= 0 ||
        cap > ((size_t)-1 - sizeof(struct wh_uidcache)) / sizeof(struct entry))
        return NULL;
    struct wh_uidcache *c = calloc(1, sizeof(*c) + cap * sizeof(struct entry));
    if (c) {
        c->cap = cap;
        c->ttl_ms = ttl_ms;
    }
    return c;
}

void wh_uidcache_free(struct wh_uidcache *c)
{
    free(c);
}

static struct entry *entry_of(struct wh_uidcache *c, const char *ns, const char *name)
{
    for (size_t i = 0; i < c->cap; i++)
        if (c->e[i].used && !strcmp(c->e[i].name, name) && !strcmp(c->e[i].ns, ns))
            return &c->e[i];
    return NULL;
}

bool wh_uidcache_find(struct wh_uidcache *c, const char *ns, const char *name, long now_ms,
                      char uid[WH_UIDCACHE_UID_MAX])
{
    struct entry *e = entry_of(c, ns, name);
    if (!e)
        return false;
    /* A clock that went back (it does not: monotonic) would keep an entry
     * forever; treat it as expired too. */
    if (now_ms - e->at_ms >= c->ttl_ms || now_ms < e->at_ms) {
        e->used = false;
        c->len--;
        return false;
    }
    snprintf(uid, WH_UIDCACHE_UID_MAX, "%s", e->uid);
    return true;
}

void wh_uidcache_put(struct wh_uidcache *c, const char *ns, const char *name, const char *uid,
                     long now_ms)
{
    if (strlen(ns) >= WH_UIDCACHE_NS_MAX || strlen(name) >= WH_UIDCACHE_NAME_MAX ||
        strlen(uid) >= WH_UIDCACHE_UID_MAX)
        return;
    struct entry *e = entry_of(c, ns, name);
    for (size_t i = 0; !e && i < c->cap; i++)
        if (!c->e[i].used)
            e = &c->e[i];
    if (!e) {
        e = &c->e[0];
        for (size_t i = 1; i < c->cap; i++)
            if (c->e[i].at_ms < e->at_ms)
                e = &c->e[i];
    }
    if (!e->used)
        c->len++;
    e->used = true;
    e->at_ms = now_ms;
    snprintf(e->ns, sizeof(e->ns), "%s", ns);
    snprintf(e->name, sizeof(e->name), "%s", name);
    snprintf(e->uid, sizeof(e->uid), "%s", uid);
}

size_t wh_uidcache_len(const struct wh_uidcache *c)
{
    return c->len;
}
