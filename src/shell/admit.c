/* admit.c: the admission pipeline (see admit.h).
 *
 * A legacy-path pod is decided with its worker group's ledger entry locked:
 * the engine sees the cached pods of the group plus the group's pending
 * reservations, and the assignment it makes is reserved before the lock is
 * released. Everything else (native-index pods, RayClusters, other kinds)
 * goes straight to the engine with no lock at all.
 */
#include "wh/admit.h"

#include <stdatomic.h> /* atomic_ullong */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* strcmp */

#include "wh/cache.h"      /* wh_cache */
#include "wh/clock.h"      /* wh_clock_us */
#include "wh/kube.h"       /* wh_kube */
#include "wh/kubeconfig.h" /* wh_kubeconfig_load */
#include "wh/ledger.h"     /* wh_ledger */
#include "wh/log.h"        /* wh_log */

struct wh_admit {
    bool standalone;
    struct wh_ledger *ledger;
    struct wh_cache *cache; /* NULL when standalone */
    atomic_ullong legacy_reviews, legacy_wait_us; /* see struct wh_admit_stats */
};

/* The state one decision sees. g is the locked group of a legacy pod. */
struct view {
    const struct wh_admit *ad;
    struct wh_ledger_group *g;
    const char *ns, *cluster, *group;
};

static bool is_own_group(const struct view *v, const char *ns, const char *cluster,
                         const char *group)
{
    return v->g && !strcmp(ns, v->ns) && !strcmp(cluster, v->cluster) &&
           !strcmp(group, v->group);
}

struct walk {
    struct wh_ledger_group *g; /* mark reservations shadowed by live pods */
    wh_pod_visit_fn fn;
    void *arg;
};

static int visit_cached(void *arg, const struct wh_pod_rec *pod)
{
    struct walk *w = arg;
    if (w->g && !pod->deleting)
        wh_ledger_mark(w->g, pod->replica_label, pod->worker_id);
    return w->fn(w->arg, pod);
}

static enum wh_err view_each_group_pod(const void *impl, const char *ns, const char *cluster,
                                       const char *group, wh_pod_visit_fn fn, void *arg,
                                       char *errbuf)
{
    const struct view *v = impl;
    /* Only the locked group's reservations can be read safely; the engine
     * asks for the pod's own group anyway. */
    bool own = is_own_group(v, ns, cluster, group);
    if (own)
        wh_ledger_clear_marks(v->g);
    if (v->ad->cache) {
        struct walk w = {.g = own ? v->g : NULL, .fn = fn, .arg = arg};
        int stopped = 0;
        enum wh_err err = wh_cache_each_group_pod(v->ad->cache, ns, cluster, group, visit_cached,
                                                  &w, &stopped, errbuf);
        if (err || stopped)
            return err;
    }
    /* Reservations after the cached pods, so that marks are complete. */
    if (own)
        wh_ledger_each(v->g, fn, arg);
    return WH_OK;
}

static enum wh_err view_each_node(const void *impl, wh_node_visit_fn fn, void *arg, char *errbuf)
{
    const struct view *v = impl;
    if (!v->ad->cache)
        return WH_OK; /* standalone: no node information */
    int stopped = 0;
    return wh_cache_each_node(v->ad->cache, fn, arg, &stopped, errbuf);
}

static const char *view_legacy_unavailable(const void *impl)
{
    const struct view *v = impl;
    /* Standalone: the ledger is the truth. */
    return v->ad->cache ? wh_cache_pods_unavailable(v->ad->cache) : NULL;
}

static const struct wh_state_ops view_ops = {
    .each_group_pod = view_each_group_pod,
    .each_node = view_each_node,
    .legacy_unavailable = view_legacy_unavailable,
};

static struct wh_cache *start_cache(const struct wh_admit_opts *opts, struct wh_ledger *ledger,
                                    char *errbuf)
{
    struct wh_kube_config cfg;
    enum wh_err err = opts->kubeconfig_path && opts->kubeconfig_path[0]
                          ? wh_kubeconfig_load(opts->kubeconfig_path, &cfg, errbuf)
                          : wh_kubeconfig_in_cluster(&cfg, errbuf);
    if (err)
        return NULL;
    struct wh_kube *kube = wh_kube_new(&cfg, errbuf);
    wh_kube_config_clear(&cfg);
    if (!kube)
        return NULL;
    wh_log(WH_LOG_INFO, "kube_client", "source", WH_F_STR, wh_kube_source(kube), (char *)NULL);
    return wh_cache_new(kube, ledger, opts->cache, errbuf);
}

struct wh_admit *wh_admit_new(const struct wh_admit_opts *opts, char *errbuf)
{
    struct wh_admit *ad = calloc(1, sizeof(*ad));
    if (!ad) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    ad->standalone = opts && opts->standalone;
    struct wh_ledger_opts lo = {
        .ttl_ms = ad->standalone ? -1 : opts ? opts->reservation_ttl_ms : 0,
    };
    ad->ledger = wh_ledger_new(&lo);
    if (!ad->ledger) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        wh_admit_free(ad);
        return NULL;
    }
    if (!ad->standalone) {
        struct wh_admit_opts none = {0};
        ad->cache = start_cache(opts ? opts : &none, ad->ledger, errbuf);
        if (!ad->cache) {
            wh_admit_free(ad);
            return NULL;
        }
    }
    return ad;
}

void wh_admit_free(struct wh_admit *ad)
{
    if (!ad)
        return;
    wh_cache_free(ad->cache); /* first: its threads feed the ledger */
    wh_ledger_free(ad->ledger);
    free(ad);
}

/* Standalone: a RayCluster created under a name starts with fresh ids, which
 * is what bounds the ledger's memory there (see ledger.h). */
static void forget_recreated_cluster(struct wh_admit *ad, const struct wh_review_info *info,
                                     const struct wh_engine_result *res)
{
    if (!ad->standalone || info->dry_run || info->kind != WH_KIND_RAYCLUSTER || !res->allowed ||
        strcmp(info->operation, "CREATE") || !info->cluster[0])
        return;
    if (wh_ledger_drop_cluster(ad->ledger, info->ns, info->cluster))
        wh_log(WH_LOG_WARN, "ledger_drop_failed", "namespace", WH_F_STR, info->ns, "cluster",
               WH_F_STR, info->cluster, "error", WH_F_STR, "out of memory", (char *)NULL);
}

enum wh_err wh_admit_decide(struct wh_admit *ad, const struct wh_review *rv,
                            enum wh_route route, struct wh_engine_result *res, char *errbuf)
{
    memset(res, 0, sizeof(*res));
    struct wh_ledger_group *g = NULL;
    enum wh_err err = WH_OK;
    const struct wh_review_info *info = wh_review_info(rv);
    struct view v = {.ad = ad, .ns = info->ns, .cluster = info->cluster, .group = info->group};
    /* Only KubeRay pods have a worker group to lock; the workload route
     * sends every other TPU pod elsewhere. */
    if (info->kind == WH_KIND_POD && info->legacy &&
        (route != WH_ROUTE_MUTATE_WORKLOAD || *info->cluster)) {
        long long t0 = wh_clock_us();
        err = wh_ledger_lock(ad->ledger, info->ns, info->cluster, info->group, &g, errbuf);
        atomic_fetch_add_explicit(&ad->legacy_reviews, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&ad->legacy_wait_us, (unsigned long long)(wh_clock_us() - t0),
                                  memory_order_relaxed);
        if (err)
            goto out;
        v.g = g;
    }
    struct wh_state state = {.ops = &view_ops, .impl = &v};
    err = wh_engine_decide(rv, route, &state, res, errbuf);
    if (err)
        goto out;
    /* A dry run (sideEffects: None) must leave nothing behind. */
    if (res->assigned && g && !info->dry_run) {
        err = wh_ledger_reserve(g, res->replica, res->host, res->worker_id,
                                res->n_tpu_containers, errbuf);
        if (err) {
            wh_engine_result_free(res);
            goto out;
        }
        if (wh_log_enabled(WH_LOG_DEBUG))
            wh_log(WH_LOG_DEBUG, "legacy_index_reserved", "namespace", WH_F_STR, info->ns,
                   "cluster", WH_F_STR, info->cluster, "group", WH_F_STR, info->group,
                   "replica", WH_F_INT, (long long)res->replica, "host", WH_F_INT,
                   (long long)res->host, (char *)NULL);
    }
    forget_recreated_cluster(ad, info, res);
out:
    wh_ledger_unlock(g);
    return err;
}

enum wh_err wh_admit_review(struct wh_admit *ad, const char *body, size_t len,
                            enum wh_route route, struct wh_engine_result *res, char *errbuf)
{
    memset(res, 0, sizeof(*res));
    struct wh_review *rv = NULL;
    enum wh_err err = wh_review_parse(body, len, &rv, errbuf);
    if (!err)
        err = wh_admit_decide(ad, rv, route, res, errbuf);
    wh_review_free(rv);
    return err;
}

bool wh_admit_ready(struct wh_admit *ad, char *why, size_t why_len)
{
    const char *reason = NULL;
    bool ready = !ad->cache || wh_cache_ready(ad->cache, &reason);
    if (why && why_len)
        snprintf(why, why_len, "%s", reason ? reason : "");
    return ready;
}

void wh_admit_stats(struct wh_admit *ad, struct wh_admit_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->synced = st->pods_synced = st->nodes_synced = st->pods_trusted = true;
    if (ad->cache) {
        struct wh_cache_stats cs;
        wh_cache_stats(ad->cache, &cs);
        st->pods_synced = cs.pods_synced;
        st->nodes_synced = cs.nodes_synced;
        st->synced = cs.pods_synced && cs.nodes_synced;
        st->pods_trusted = cs.pods_trusted;
        st->pods_down_ms = cs.pods_down_ms;
        st->nodes_down_ms = cs.nodes_down_ms;
        st->pods_cached = cs.pods;
        st->nodes_cached = cs.nodes;
    }
    st->reservations = wh_ledger_pending(ad->ledger);
    st->legacy_reviews = atomic_load_explicit(&ad->legacy_reviews, memory_order_relaxed);
    st->legacy_wait_us = atomic_load_explicit(&ad->legacy_wait_us, memory_order_relaxed);
}
