/* credcache.h: what the clones of one Kubernetes client share (private to
 * the kube room): the configuration and the exec plugin's credential,
 * cached until its expirationTimestamp or a 401 (kube.h says who runs the
 * plugin when). Thread-safe: every field is read and written under one
 * mutex; the plugin runs outside it.
 *
 * Ownership: wh_credcache_new takes over the configuration's memory (the
 * caller's struct is zeroed); each wh_credcache_ref is paired with a
 * wh_credcache_unref, and the last one stops the refresher and frees all.
 */
#ifndef WH_CREDCACHE_H
#define WH_CREDCACHE_H

#include <stdbool.h> /* bool */

#include "execcred.h"      /* struct wh_exec_cred */
#include "wh/err.h"        /* enum wh_err */
#include "wh/kubeconfig.h" /* struct wh_kube_config */

struct wh_credcache;

/* What one request uses: a copy of the cached credential (owned: free it
 * with wh_exec_cred_clear, which zeroes it) and its generation. */
struct wh_cred_use {
    struct wh_exec_cred c;
    unsigned long gen;
};

/* NULL when out of memory (cfg then still owns its memory). */
struct wh_credcache *wh_credcache_new(struct wh_kube_config *cfg);
/* The configuration; borrowed, read-only, valid while a reference is held. */
const struct wh_kube_config *wh_credcache_config(const struct wh_credcache *sh);
void wh_credcache_ref(struct wh_credcache *sh);
void wh_credcache_unref(struct wh_credcache *sh);

/* The credential for one request (cfg->exec must be set). Without the
 * refresher: runs the plugin when nothing fresh is cached, one run at a
 * time (the others wait for it). With it: never runs nor waits; a stale
 * cache is WH_ERR_UNAVAILABLE at once, and the refresher is woken. */
WH_NODISCARD enum wh_err wh_credcache_get(struct wh_credcache *sh, struct wh_cred_use *use,
                                          char *errbuf);
/* The API server answered 401 to generation gen: the next request gets a
 * new credential (a 401 to an older one says nothing). */
void wh_credcache_refused(struct wh_credcache *sh, unsigned long gen);
/* Whether the refresher runs the plugin (serve). */
bool wh_credcache_background(struct wh_credcache *sh);
/* Run the plugin now (the caller waits), then start the refresher: renewal
 * ahead of expiry and after a 401, a back-off after a failure. Without an
 * exec plugin: nothing. */
WH_NODISCARD enum wh_err wh_credcache_start(struct wh_credcache *sh, char *errbuf);

#endif /* WH_CREDCACHE_H */
