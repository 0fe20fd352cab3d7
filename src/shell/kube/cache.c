/* cache.c: the pod and node caches (see cache.h): a store filled by two
 * reflectors, and what the admission pipeline asks of them. */
#include "wh/cache.h"

#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset */

#include "wh/clock.h"  /* wh_clock_ms */
#include "reflector.h" /* wh_reflector_* */
#include "store.h"     /* wh_store_* */

#define DEFAULT_PAGE 500L
#define DEFAULT_MAX_BACKOFF_MS 30000L

struct wh_cache {
    struct wh_kube *kube; /* owned; the reflectors borrow it */
    struct wh_store *store;
    long trust_ms;
    struct wh_reflector *pods, *nodes;
};

void wh_cache_free(struct wh_cache *c)
{
    if (!c)
        return;
    /* Both at once: each may be waiting on a transfer. */
    if (c->pods)
        wh_reflector_stop(c->pods);
    if (c->nodes)
        wh_reflector_stop(c->nodes);
    wh_reflector_free(c->pods);
    wh_reflector_free(c->nodes);
    wh_store_free(c->store);
    wh_kube_free(c->kube);
    free(c);
}

/* opts with the defaults filled in. */
static struct wh_cache_opts resolve(const struct wh_cache_opts *opts)
{
    struct wh_cache_opts o = {0};
    if (opts)
        o = *opts;
    o.trust_ms = o.trust_ms > 0 ? o.trust_ms : WH_CACHE_DEFAULT_TRUST_MS;
    o.page_size = o.page_size > 0 ? o.page_size : DEFAULT_PAGE;
    o.watch_timeout_s = o.watch_timeout_s > 0 ? o.watch_timeout_s : 0;
    o.max_backoff_ms = o.max_backoff_ms > 0 ? o.max_backoff_ms : DEFAULT_MAX_BACKOFF_MS;
    if (o.max_backoff_ms < WH_REFLECTOR_MIN_BACKOFF_MS)
        o.max_backoff_ms = WH_REFLECTOR_MIN_BACKOFF_MS;
    return o;
}

struct wh_cache *wh_cache_new(struct wh_kube *kube, const struct wh_cache_hooks *hooks,
                              const struct wh_cache_opts *opts, char *errbuf)
{
    struct wh_cache *c = calloc(1, sizeof(*c));
    if (!c) {
        wh_kube_free(kube);
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->kube = kube;
    struct wh_cache_opts o = resolve(opts);
    c->trust_ms = o.trust_ms;
    if (!(c->store = wh_store_new())) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        wh_cache_free(c);
        return NULL;
    }
    c->pods = wh_reflector_start(WH_REFLECT_PODS, kube, c->store, hooks, &o, errbuf);
    if (c->pods)
        c->nodes = wh_reflector_start(WH_REFLECT_NODES, kube, c->store, NULL, &o, errbuf);
    if (!c->nodes) {
        wh_cache_free(c);
        return NULL;
    }
    return c;
}

enum wh_err wh_cache_each_group_pod(struct wh_cache *c, const char *ns, const char *cluster,
                                    const char *group, wh_pod_visit_fn fn, void *arg, int *stopped,
                                    char *errbuf)
{
    (void)errbuf;
    *stopped = wh_store_each_group_pod(c->store, ns, cluster, group, fn, arg);
    return WH_OK;
}

static enum wh_err nodes_synced(struct wh_cache *c, char *errbuf)
{
    if (!wh_reflector_synced(c->nodes))
        return wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                       "the TPU node cache has not synced with the Kubernetes API server (%s) "
                       "yet, so subslice placement cannot be decided; KubeRay will retry",
                       wh_kube_source(c->kube));
    return WH_OK;
}

enum wh_err wh_cache_each_node(struct wh_cache *c, wh_node_visit_fn fn, void *arg, int *stopped,
                               char *errbuf)
{
    *stopped = 0;
    enum wh_err err = nodes_synced(c, errbuf);
    if (!err)
        *stopped = wh_store_each_node(c->store, fn, arg);
    return err;
}

enum wh_err wh_cache_each_node_with(struct wh_cache *c, const char *const *pairs, size_t n_pairs,
                                    wh_node_visit_fn fn, void *arg, int *stopped, char *errbuf)
{
    *stopped = 0;
    enum wh_err err = nodes_synced(c, errbuf);
    if (!err)
        *stopped = wh_store_each_node_with(c->store, pairs, n_pairs, fn, arg);
    return err;
}

const char *wh_cache_pods_unavailable(struct wh_cache *c)
{
    if (!wh_reflector_synced(c->pods))
        return "the webhook's pod cache has not synced with the Kubernetes API server yet";
    long down = wh_reflector_down_since(c->pods);
    if (down >= 0 && wh_clock_ms() - down > c->trust_ms)
        return "the webhook has lost its pod watch on the Kubernetes API server for longer than "
               "its cache can be trusted";
    return NULL;
}

bool wh_cache_ready(struct wh_cache *c, const char **why)
{
    *why = NULL;
    if (!wh_reflector_synced(c->pods))
        *why = "the pod cache has not synced with the Kubernetes API server yet";
    else if (!wh_reflector_synced(c->nodes))
        *why = "the TPU node cache has not synced with the Kubernetes API server yet";
    return *why == NULL;
}

static long down_ms(const struct wh_reflector *w)
{
    long down = wh_reflector_down_since(w), now = wh_clock_ms();
    return down >= 0 && now > down ? now - down : 0;
}

void wh_cache_stats(struct wh_cache *c, struct wh_cache_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->pods_synced = wh_reflector_synced(c->pods);
    st->nodes_synced = wh_reflector_synced(c->nodes);
    st->pods_trusted = wh_cache_pods_unavailable(c) == NULL;
    st->pods_down_ms = down_ms(c->pods);
    st->nodes_down_ms = down_ms(c->nodes);
    wh_store_counts(c->store, &st->pods, &st->nodes, &st->interned);
    st->relists = wh_reflector_relists(c->pods) + wh_reflector_relists(c->nodes);
    st->reconnects = wh_reflector_reconnects(c->pods) + wh_reflector_reconnects(c->nodes);
}

unsigned long long wh_cache_version(struct wh_cache *c)
{
    return wh_store_version(c->store);
}

enum wh_err wh_cache_slice_lists(struct wh_cache *c, struct cJSON **pods, struct cJSON **nodes,
                                 unsigned long long *version, char *errbuf)
{
    const char *why;
    *pods = *nodes = NULL;
    if (!wh_cache_ready(c, &why))
        return wh_fail(errbuf, WH_ERR_UNAVAILABLE, "%s", why);
    if (wh_store_slice_lists(c->store, pods, nodes, version))
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    return WH_OK;
}
