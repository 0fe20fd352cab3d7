/* uidcache.h: uids of workloads looked up by the Events worker, by
 * namespace and name (events.c: a LeaderWorkerSet's pods carry no uid of
 * it, so its Events need a GET; docs/troubleshooting.md, "Events on the
 * workload").
 *
 * Bounded: at most cap entries, each trusted for ttl_ms after it was
 * stored, then looked up again; a full table replaces its oldest entry.
 * An entry may hold "" (the object was refused or not found): remembered as
 * long, so a missing RBAC rule costs one GET per object per ttl_ms, not one
 * per Event. A deleted and recreated object of the same name is named with
 * the old uid until its entry expires: ttl_ms at most.
 *
 * The clock is the caller's (now_ms: milliseconds of a monotonic clock);
 * nothing here reads one, so the tests step it.
 *
 * Memory: wh_uidcache_new allocates the table once; nothing else is
 * allocated; wh_uidcache_free releases it. Not thread-safe: one thread (the
 * Events worker) owns it.
 */
#ifndef WH_UIDCACHE_H
#define WH_UIDCACHE_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#define WH_UIDCACHE_UID_MAX 64   /* a uid with its NUL (struct wh_event_subject's) */
#define WH_UIDCACHE_NS_MAX 64    /* a namespace (63 bytes at most) with its NUL */
#define WH_UIDCACHE_NAME_MAX 254 /* an object name (253 bytes at most) with its NUL */

struct wh_uidcache;

/* cap >= 1 entries, ttl_ms > 0. NULL when out of memory. */
struct wh_uidcache *wh_uidcache_new(size_t cap, long ttl_ms);
void wh_uidcache_free(struct wh_uidcache *c); /* NULL-safe */

/* True when ns/name was stored less than ttl_ms before now_ms: its uid (""
 * for a refusal) is copied into uid. An expired entry is forgotten. */
bool wh_uidcache_find(struct wh_uidcache *c, const char *ns, const char *name, long now_ms,
                      char uid[WH_UIDCACHE_UID_MAX]);
/* Store ns/name's uid at now_ms, replacing its entry, a free one or the
 * oldest. A namespace, name or uid longer than Kubernetes allows is not
 * stored. */
void wh_uidcache_put(struct wh_uidcache *c, const char *ns, const char *name, const char *uid,
                     long now_ms);
/* Entries in use (expired ones not yet found or replaced included). */
size_t wh_uidcache_len(const struct wh_uidcache *c);

#endif
