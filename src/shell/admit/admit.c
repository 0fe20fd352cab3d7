/* admit.c: the admission pipeline (see admit.h).
 *
 * A legacy-path pod is decided with its worker group's ledger entry locked:
 * the engine sees the cached pods of the group plus the group's pending
 * reservations, and the assignment it makes is reserved before the lock is
 * released. Everything else (native-index pods, RayClusters, other kinds)
 * goes straight to the engine with no lock at all.
 *
 * In Kubernetes mode the assignment is then claimed through the API server
 * (claims.c) with the group unlocked, so that other admissions of the group
 * in this replica go on meanwhile (they see the reservation). Only a TAKEN
 * claim leaves the replica as an answer; see docs/legacy-indices.md.
 */
#include "wh/admit.h"

#include <stdatomic.h>  /* atomic_ullong */
#include <stdint.h>     /* uint64_t */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* calloc, free, getenv */
#include <string.h>     /* strcmp */
#include <sys/random.h> /* getrandom */
#include <unistd.h>     /* gethostname */

#include "wh/cache.h"      /* wh_cache */
#include "wh/claims.h"     /* wh_claims */
#include "wh/clock.h"      /* wh_clock_us, wh_clock_ms */
#include "wh/fileio.h"     /* wh_read_file */
#include "wh/kube.h"       /* wh_kube */
#include "wh/kubeconfig.h" /* wh_kubeconfig_resolve */
#include "events.h"        /* wh_events */
#include "ledger.h"        /* wh_ledger */
#include "wh/log.h"        /* wh_log */
#include "wh/podspec.h"    /* WH_ANN_CLAIM_NONCE, wh_meta_annotation */
#include "wh/slices.h"     /* wh_slices_start, wh_slices_free */

struct wh_admit {
    bool standalone;
    struct wh_ledger *ledger;
    struct wh_cache *cache;                       /* NULL when standalone */
    atomic_ullong legacy_reviews, legacy_wait_us; /* see struct wh_mgauges */
    struct wh_claims *claims;                     /* NULL when standalone or turned off */
    struct wh_events *events;                     /* NULL when standalone */
    struct wh_slices *slices;                     /* NULL when standalone or turned off */
};

/* Conflicts one admission may meet before it gives up (each teaches one id
 * held by another replica; a LIST would teach them all but cost more). */
#define MAX_CLAIM_ROUNDS 64

/* The state one decision sees. g is the locked group of a legacy pod. */
struct view {
    const struct wh_admit *ad;
    struct wh_ledger_group *g;
    const char *ns, *cluster, *group;
    const char *unavailable; /* set: deny the legacy pod for this reason */
    const char *nonce;       /* the claim the pod's patch names, or NULL (no claim) */
};

static bool is_own_group(const struct view *v, const char *ns, const char *cluster,
                         const char *group)
{
    return v->g && !strcmp(ns, v->ns) && !strcmp(cluster, v->cluster) && !strcmp(group, v->group);
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

static enum wh_err view_each_node_with(const void *impl, const char *const *pairs, size_t n_pairs,
                                       wh_node_visit_fn fn, void *arg, char *errbuf)
{
    const struct view *v = impl;
    if (!v->ad->cache)
        return WH_OK;
    int stopped = 0;
    return wh_cache_each_node_with(v->ad->cache, pairs, n_pairs, fn, arg, &stopped, errbuf);
}

static const char *view_legacy_unavailable(const void *impl)
{
    const struct view *v = impl;
    if (v->unavailable)
        return v->unavailable;
    /* Standalone: the ledger is the truth. */
    return v->ad->cache ? wh_cache_pods_unavailable(v->ad->cache) : NULL;
}

/* With claims, a random free id: replicas that all took the lowest one
 * raced for it, about two lost claims (and decisions) per pod with three
 * replicas (docs/legacy-indices.md). Without claims there is one replica
 * to serve, and the reference's lowest id. */
static unsigned long view_legacy_pick(const void *impl)
{
    const struct view *v = impl;
    if (!v->ad->claims)
        return 0;
    static _Thread_local uint64_t x; /* xorshift64*, seeded once per thread */
    while (!x && getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x))
        x = (uint64_t)wh_clock_us() | 1;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    unsigned long r = (unsigned long)((x * 0x2545F4914F6CDD1DULL) >> 1);
    return r ? r : 1;
}

static const char *view_legacy_claim_nonce(const void *impl)
{
    return ((const struct view *)impl)->nonce;
}

static const struct wh_state_ops view_ops = {
    .each_group_pod = view_each_group_pod,
    .each_node = view_each_node,
    .each_node_with = view_each_node_with,
    .legacy_unavailable = view_legacy_unavailable,
    .legacy_pick = view_legacy_pick,
    .legacy_claim_nonce = view_legacy_claim_nonce,
};

/* The pod cache's hooks drive the ledger (see cache.h and ledger.h): a live
 * pod with a reservation's ids confirms it; the watch's health and what it
 * has delivered decide when unconfirmed reservations may expire. And the
 * claims: the pod carrying a claim's nonce going gives the claim back
 * (claims.h). */
static void on_pod_changed(void *arg, const struct wh_pod_rec *pod, const cJSON *obj, bool deleted)
{
    struct wh_admit *ad = arg;
    if (!deleted && !pod->deleting && pod->replica_label && pod->worker_id >= 0)
        wh_ledger_confirm(ad->ledger, pod->ns, pod->cluster, pod->group, pod->replica_label,
                          pod->worker_id);
    if (ad->claims)
        wh_claims_pod_seen(ad->claims, pod, wh_meta_annotation(obj, WH_ANN_CLAIM_NONCE),
                           deleted || pod->deleting);
}

static void on_pods_health(void *arg, long since_ms)
{
    wh_ledger_set_fresh_since(((struct wh_admit *)arg)->ledger, since_ms);
}

static void on_pods_current(void *arg, long at_ms)
{
    wh_ledger_set_heard(((struct wh_admit *)arg)->ledger, at_ms);
}

/* The first client: the configuration as serve reads it (--kubeconfig, else
 * in-cluster), and an exec plugin's credential obtained now and renewed in
 * the background from here on (no admission waits on a plugin). */
static struct wh_kube *new_kube(const struct wh_admit_opts *opts, char *errbuf)
{
    struct wh_kube_config cfg;
    if (wh_kubeconfig_resolve(opts->kubeconfig_path, true, &cfg, errbuf))
        return NULL;
    if (cfg.warning)
        wh_log(WH_LOG_WARN, "kube_client", "detail", WH_F_STR, cfg.warning, (char *)NULL);
    struct wh_kube *kube = wh_kube_new(&cfg, errbuf);
    wh_kube_config_clear(&cfg);
    if (kube && wh_kube_refresh_in_background(kube, errbuf)) {
        wh_kube_free(kube);
        return NULL;
    }
    return kube;
}

#define SA_NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/* The namespace of the claims: the flag, $POD_NAMESPACE (downward API),
 * the service account's, else "default". out: WH_ERRBUF_LEN bytes. */
static void claims_namespace(const struct wh_admit_opts *opts, char *out)
{
    const char *env = getenv("POD_NAMESPACE");
    if (opts->claims_namespace && opts->claims_namespace[0]) {
        snprintf(out, WH_ERRBUF_LEN, "%s", opts->claims_namespace);
        return;
    }
    if (env && env[0]) {
        snprintf(out, WH_ERRBUF_LEN, "%s", env);
        return;
    }
    snprintf(out, WH_ERRBUF_LEN, "default");
    struct wh_buf b;
    wh_buf_init(&b, 256);
    char inner[WH_ERRBUF_LEN];
    if (!wh_read_file(SA_NAMESPACE_FILE, &b, inner) && wh_buf_len(&b) > 0)
        snprintf(out, WH_ERRBUF_LEN, "%.*s", (int)strcspn(wh_buf_ptr(&b), " \t\r\n"),
                 wh_buf_ptr(&b));
    wh_buf_free(&b);
}

/* "<pod or host name>_<random>": a restarted process is a new holder, so
 * it never mistakes the claims of its previous life for its own. */
static void claims_holder(const struct wh_admit_opts *opts, char *out)
{
    char host[256] = "tpu-webhook";
    const char *env = getenv("POD_NAME");
    if (opts->claims_holder && opts->claims_holder[0])
        snprintf(host, sizeof(host), "%s", opts->claims_holder);
    else if (env && env[0])
        snprintf(host, sizeof(host), "%s", env);
    else if (gethostname(host, sizeof(host) - 1))
        snprintf(host, sizeof(host), "tpu-webhook");
    host[sizeof(host) - 1] = '\0';
    unsigned r = 0;
    if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
        r = (unsigned)getpid() ^ (unsigned)wh_clock_ms();
    snprintf(out, WH_ERRBUF_LEN, "%.200s_%08x", host, r);
}

/* Events on warned pods' workloads, through a client of their own. */
static enum wh_err start_events(struct wh_admit *ad, struct wh_kube *first,
                                const struct wh_admit_opts *opts, char *errbuf)
{
    struct wh_kube *kube = wh_kube_clone(first, errbuf);
    if (!kube)
        return WH_ERR_INVALID;
    char instance[WH_ERRBUF_LEN];
    claims_holder(opts, instance);
    struct wh_events_opts eo = {.window_ms = opts->events_window_ms, .instance = instance};
    ad->events = wh_events_new(kube, &eo, errbuf);
    return ad->events ? WH_OK : WH_ERR_INVALID;
}

/* The worker-id claims (unless turned off), through a client of their own
 * sharing first's configuration and credential. */
static enum wh_err start_claims(struct wh_admit *ad, struct wh_kube *first,
                                const struct wh_admit_opts *opts, char *errbuf)
{
    if (opts->claims_off) {
        wh_log(WH_LOG_WARN, "claims_off", "detail", WH_F_STR,
               "worker-id claims are turned off (a test switch): several replicas can hand out "
               "the same TPU_WORKER_ID",
               (char *)NULL);
        return WH_OK;
    }
    struct wh_kube *kube = wh_kube_clone(first, errbuf);
    if (!kube)
        return WH_ERR_INVALID;
    char ns[WH_ERRBUF_LEN], holder[WH_ERRBUF_LEN];
    claims_namespace(opts, ns);
    claims_holder(opts, holder);
    struct wh_claims_opts co = {.ns = ns,
                                .holder = holder,
                                .lifetime_s = opts->claim_lifetime_s,
                                .budget_ms = opts->claim_budget_ms};
    ad->claims = wh_claims_new(kube, &co, errbuf);
    if (!ad->claims)
        return WH_ERR_INVALID;
    wh_log(WH_LOG_NOTICE, "claims", "namespace", WH_F_STR, ns, "holder", WH_F_STR, holder,
           "lifetime_s", WH_F_INT,
           (long long)(co.lifetime_s > 0 ? co.lifetime_s : WH_CLAIMS_DEFAULT_LIFETIME_S),
           (char *)NULL);
    return WH_OK;
}

static enum wh_err start_kubernetes(struct wh_admit *ad, const struct wh_admit_opts *opts,
                                    char *errbuf)
{
    struct wh_kube *kube = new_kube(opts, errbuf);
    if (!kube)
        return WH_ERR_INVALID;
    wh_log(WH_LOG_NOTICE, "kube_client", "source", WH_F_STR, wh_kube_source(kube), (char *)NULL);
    /* The claims before the cache: its watch thread hands them the pods. */
    if (start_claims(ad, kube, opts, errbuf)) {
        wh_kube_free(kube);
        return WH_ERR_INVALID;
    }
    struct wh_cache_hooks hooks = {.arg = ad,
                                   .pod_changed = on_pod_changed,
                                   .pods_health = on_pods_health,
                                   .pods_current = on_pods_current};
    ad->cache = wh_cache_new(kube, &hooks, opts->cache, errbuf);
    if (!ad->cache)
        return WH_ERR_INVALID;
    if (start_events(ad, kube, opts, errbuf))
        return WH_ERR_INVALID;
    if (opts->slice_check_interval_ms >= 0 &&
        !(ad->slices = wh_slices_start(ad->cache, opts->slice_check_interval_ms, errbuf)))
        return WH_ERR_INVALID;
    return WH_OK;
}

struct wh_admit *wh_admit_new(const struct wh_admit_opts *opts, char *errbuf)
{
    struct wh_admit *ad = calloc(1, sizeof(*ad));
    if (!ad) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    ad->standalone = opts && opts->standalone;
    /* Standalone: nothing expires, so nothing to sweep. */
    struct wh_ledger_opts lo = {
        .ttl_ms = ad->standalone ? -1
                  : opts         ? opts->reservation_ttl_ms
                                 : 0,
        .sweep_ms = ad->standalone ? 0 : WH_LEDGER_SWEEP_MS,
    };
    ad->ledger = wh_ledger_new(&lo);
    if (!ad->ledger) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        wh_admit_free(ad);
        return NULL;
    }
    struct wh_admit_opts none = {0};
    if (!ad->standalone && start_kubernetes(ad, opts ? opts : &none, errbuf)) {
        wh_admit_free(ad);
        return NULL;
    }
    return ad;
}

void wh_admit_free(struct wh_admit *ad)
{
    if (!ad)
        return;
    wh_events_free(ad->events);
    wh_slices_free(ad->slices); /* before the cache it reads */
    wh_cache_free(ad->cache);   /* before the ledger and claims: its hooks feed them */
    wh_claims_free(ad->claims);
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

static void log_reserved(const struct wh_review_info *info, const struct wh_engine_result *res)
{
    if (wh_log_enabled(WH_LOG_DEBUG))
        wh_log(WH_LOG_DEBUG, "legacy_index_reserved", "namespace", WH_F_STR, info->ns, "cluster",
               WH_F_STR, info->cluster, "group", WH_F_STR, info->group, "replica", WH_F_INT,
               (long long)res->replica, "host", WH_F_INT, (long long)res->host, (char *)NULL);
}

/* Decide a legacy pod with its group locked and reserve what the engine
 * chose (not for a dry run: sideEffects NoneOnDryRun: a dry run leaves nothing behind).
 * *reserved tells whether a reservation was made. */
static enum wh_err decide_locked(struct wh_admit *ad, const struct wh_review *rv,
                                 enum wh_route route, struct view *v, struct wh_engine_result *res,
                                 bool *reserved, char *errbuf)
{
    const struct wh_review_info *info = wh_review_info(rv);
    struct wh_ledger_group *g = NULL;
    *reserved = false;
    long long t0 = wh_clock_us();
    enum wh_err err = wh_ledger_lock(ad->ledger, info->ns, info->cluster, info->group, &g, errbuf);
    atomic_fetch_add_explicit(&ad->legacy_wait_us, (unsigned long long)(wh_clock_us() - t0),
                              memory_order_relaxed);
    if (err)
        return err;
    v->g = g;
    struct wh_state state = {.ops = &view_ops, .impl = v};
    err = wh_engine_decide(rv, route, &state, res, errbuf);
    if (!err && res->assigned && !info->dry_run) {
        err = wh_ledger_reserve(g, res->replica, res->host, res->worker_id, res->n_tpu_containers,
                                errbuf);
        if (err)
            wh_engine_result_free(res);
        else
            *reserved = true;
    }
    v->g = NULL;
    wh_ledger_unlock(g);
    return err;
}

/* After the claim: a failed one forgets its reservation (nobody holds the
 * id); a taken one refreshes it, so that its TTL counts from the answer
 * (the pod cannot appear before) and not from the decision. */
static void settle(struct wh_admit *ad, const struct wh_review_info *info,
                   const struct wh_engine_result *res, bool taken)
{
    struct wh_ledger_group *g = NULL;
    char errbuf[WH_ERRBUF_LEN];
    if (wh_ledger_lock(ad->ledger, info->ns, info->cluster, info->group, &g, errbuf))
        return; /* out of memory: the reservation stays as it was */
    if (!taken)
        wh_ledger_release(g, res->replica, res->worker_id);
    else if (wh_ledger_reserve(g, res->replica, res->host, res->worker_id, res->n_tpu_containers,
                               errbuf))
        wh_log(WH_LOG_WARN, "ledger_refresh_failed", "namespace", WH_F_STR, info->ns, "cluster",
               WH_F_STR, info->cluster, "group", WH_F_STR, info->group, "error", WH_F_STR, errbuf,
               (char *)NULL);
    wh_ledger_unlock(g);
}

struct find_holder {
    char label[WH_ERRBUF_LEN]; /* the replicaIndex label of the claimed replica */
    long worker_id;
    char *pod; /* out: the name of a live pod holding the id */
    size_t pod_len;
};

static int visit_holder(void *arg, const struct wh_pod_rec *pod)
{
    struct find_holder *f = arg;
    if (pod->deleting || pod->worker_id != f->worker_id || !pod->replica_label ||
        strcmp(pod->replica_label, f->label))
        return 0;
    /* Copied here: the record is the cache's only while it is visited. */
    snprintf(f->pod, f->pod_len, "%s", pod->name ? pod->name : "");
    return 1;
}

/* A claim may be created after another replica's claim of the same id was
 * made, answered, expired and swept: the Lease alone then proves nothing.
 * The pod that other claim was for is older than the claim lifetime by now,
 * so the cache shows it (docs/legacy-indices.md). out: the pod's name. */
static bool held_by_pod(struct wh_admit *ad, const struct wh_review_info *info,
                        const struct wh_engine_result *res, char *out, size_t out_len)
{
    struct find_holder f = {.worker_id = res->worker_id, .pod = out, .pod_len = out_len};
    snprintf(f.label, sizeof(f.label), "%s-%ld", info->group, res->replica);
    int stopped = 0;
    char errbuf[WH_ERRBUF_LEN];
    return !wh_cache_each_group_pod(ad->cache, info->ns, info->cluster, info->group, visit_holder,
                                    &f, &stopped, errbuf) &&
           stopped;
}

/* The legacy path: decide, reserve, claim; a claim held elsewhere stays a
 * reservation (this replica has learned the id is taken) and the pod is
 * decided again; a claim that cannot be made denies the pod. */
static enum wh_err admit_legacy(struct wh_admit *ad, const struct wh_review *rv,
                                enum wh_route route, struct wh_engine_result *res, char *errbuf)
{
    const struct wh_review_info *info = wh_review_info(rv);
    struct view v = {.ad = ad, .ns = info->ns, .cluster = info->cluster, .group = info->group};
    char why[WH_ERRBUF_LEN], reason[WH_ERRBUF_LEN + 200];
    char nonce[WH_CLAIMS_NONCE_LEN];
    for (int round = 0;; round++) {
        bool reserved;
        /* A fresh claim per decision, named in the patch it renders; none
         * for a dry run, which claims nothing (sideEffects NoneOnDryRun). */
        v.nonce = NULL;
        if (ad->claims && !info->dry_run && !v.unavailable) {
            wh_claims_nonce(nonce);
            v.nonce = nonce;
        }
        enum wh_err err = decide_locked(ad, rv, route, &v, res, &reserved, errbuf);
        if (err || !reserved || v.unavailable)
            return err;
        if (!ad->claims) {
            log_reserved(info, res);
            return WH_OK;
        }
        struct wh_claim_ticket ticket;
        struct wh_claim_key key = {.ns = info->ns,
                                   .cluster = info->cluster,
                                   .group = info->group,
                                   .replica = res->replica,
                                   .worker_id = res->worker_id,
                                   .cluster_uid = info->cluster_uid,
                                   .nonce = nonce};
        enum wh_claim_outcome oc = wh_claims_take(ad->claims, &key, &ticket, why, sizeof(why));
        char holder[WH_ERRBUF_LEN];
        if (oc == WH_CLAIM_TAKEN && held_by_pod(ad, info, res, holder, sizeof(holder))) {
            /* Give the Lease back (it guards nothing: the pod holds the id)
             * and decide again: the engine now sees that pod. */
            bool released = wh_claims_release(ad->claims, &ticket, why, sizeof(why));
            wh_log(WH_LOG_WARN, "claim_superseded", "namespace", WH_F_STR, info->ns, "cluster",
                   WH_F_STR, info->cluster, "group", WH_F_STR, info->group, "replica", WH_F_INT,
                   (long long)res->replica, "worker_id", WH_F_INT, (long long)res->worker_id, "pod",
                   WH_F_STR, holder, "lease", WH_F_STR, ticket.name, "released", WH_F_BOOL,
                   (int)released, "error", WH_F_STR, released ? "" : why, (char *)NULL);
            settle(ad, info, res, false);
            oc = WH_CLAIM_HELD;
        }
        if (oc == WH_CLAIM_TAKEN) {
            settle(ad, info, res, true);
            log_reserved(info, res);
            return WH_OK;
        }
        if (oc == WH_CLAIM_FAILED) {
            settle(ad, info, res, false);
            snprintf(reason, sizeof(reason),
                     "the Kubernetes API server could not record this webhook's claim on "
                     "TPU_WORKER_ID %ld of replica %ld (%s)",
                     res->worker_id, res->replica, why);
        } else if (round + 1 >= MAX_CLAIM_ROUNDS) {
            snprintf(reason, sizeof(reason),
                     "%d TPU worker ids in a row were claimed by other webhook replicas while "
                     "this one chose",
                     MAX_CLAIM_ROUNDS);
        } else {
            wh_engine_result_free(res);
            continue; /* HELD: the reservation now stands for the other claim */
        }
        wh_engine_result_free(res);
        v.unavailable = reason; /* the engine writes the denial */
    }
}

/* Only KubeRay pods have a worker group to lock; the workload route sends
 * every other TPU pod elsewhere. */
static bool legacy_path(const struct wh_review_info *info, enum wh_route route)
{
    return info->kind == WH_KIND_POD && info->legacy &&
           (route != WH_ROUTE_MUTATE_WORKLOAD || *info->cluster);
}

bool wh_admit_may_wait(struct wh_admit *ad, const struct wh_review *rv, enum wh_route route)
{
    return ad->claims && legacy_path(wh_review_info(rv), route);
}

enum wh_err wh_admit_decide(struct wh_admit *ad, const struct wh_review *rv, enum wh_route route,
                            struct wh_engine_result *res, char *errbuf)
{
    memset(res, 0, sizeof(*res));
    enum wh_err err;
    const struct wh_review_info *info = wh_review_info(rv);
    if (legacy_path(info, route)) {
        atomic_fetch_add_explicit(&ad->legacy_reviews, 1, memory_order_relaxed);
        err = admit_legacy(ad, rv, route, res, errbuf);
    } else {
        struct view v = {.ad = ad, .ns = info->ns, .cluster = info->cluster, .group = info->group};
        struct wh_state state = {.ops = &view_ops, .impl = &v};
        err = wh_engine_decide(rv, route, &state, res, errbuf);
    }
    if (!err)
        forget_recreated_cluster(ad, info, res);
    /* A warned pod of a workload: an Event on the workload, posted by the
     * Events thread (never waited for here). A dry run leaves nothing, nor
     * does a review that does not say its namespace: an Event goes only to
     * request.namespace (the engine denies an object of another). */
    for (size_t i = 0; !err && ad->events && !info->dry_run && info->ns_from_request &&
                       !strcmp(res->subject.ns, info->ns) && i < res->n_events;
         i++)
        wh_events_offer(ad->events, &res->subject, &res->events[i]);
    return err;
}

enum wh_err wh_admit_review(struct wh_admit *ad, const char *body, size_t len, enum wh_route route,
                            struct wh_engine_result *res, char *errbuf)
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
    /* Only what this replica alone can lack: the claims' API server is the
     * same for every replica, and a readiness tied to it took them all out
     * of the Service at once (native pods included) when Lease requests
     * were throttled. Failed claims deny just their pods and are alerted
     * on (docs/deploy.md, "Probes"). */
    return ready;
}

void wh_admit_stats(struct wh_admit *ad, struct wh_mgauges *st)
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
    st->claims = ad->claims != NULL;
    if (ad->claims)
        wh_claims_stats(ad->claims, &st->claim);
    st->events = ad->events != NULL;
    if (ad->events)
        wh_events_stats(ad->events, &st->event);
}

struct wh_slices *wh_admit_slices(struct wh_admit *ad)
{
    return ad->slices;
}
