/* ledger.c: per-worker-group reservations of legacy (replica, host) ids. */
#include "wh/clock.h" /* wh_clock_ms, wh_nap */
#include "wh/hash.h"  /* wh_hash_str */
#include "ledger.h"

#include <pthread.h>   /* pthread_mutex_t, pthread_create */
#include <stdatomic.h> /* atomic_long */
#include <stdint.h>    /* uint32_t */
#include <stdio.h>     /* snprintf */
#include <stdlib.h>    /* malloc, free */
#include <string.h>    /* strcmp, memcpy */

#define SHARDS 64u   /* shard mutexes guard only the lookup tables */
#define BUCKETS 256u /* per shard; chains stay short for 10^5 groups */

struct res {
    char *label; /* "<group>-<replica>" */
    char *name;  /* "(reserved <group>-<replica>-<host>)", for messages */
    long replica;
    long host;
    long worker_id;
    unsigned n_tpu;
    long at_ms;
    bool marked;
};

struct wh_ledger_group {
    struct wh_ledger *lg;
    struct wh_ledger_group *next; /* shard chain */
    uint32_t hash;
    size_t refs;                /* under the shard mutex */
    char *ns, *cluster, *group; /* one allocation, owned */
    pthread_mutex_t mu;         /* guards everything below */
    struct res *res;
    size_t n, cap;
    /* (replica, worker_id) -> res index + 1; rebuilt lazily when dirty. */
    uint32_t *index;
    size_t index_cap;
    bool dirty;
};

struct shard {
    pthread_mutex_t mu;
    struct wh_ledger_group *buckets[BUCKETS];
};

struct wh_ledger {
    long ttl_ms;
    size_t max_per_group;
    long (*now_ms)(void);
    atomic_long fresh_since;
    atomic_long heard; /* see wh_ledger_set_heard(); -1: not tracked, use the clock */
    atomic_size_t pending;
    atomic_size_t groups;
    struct shard shards[SHARDS];
    long sweep_ms;     /* > 0: the sweeper runs */
    struct wh_nap nap; /* stops the sweeper */
    pthread_t sweeper;
    bool sweeper_started;
};

static uint32_t key_hash(const char *ns, const char *cluster, const char *group)
{
    return wh_hash_str(wh_hash_str(wh_hash_str(WH_HASH_INIT, ns), cluster), group);
}

static void *sweeper_thread(void *arg)
{
    struct wh_ledger *lg = arg;
    while (wh_nap(&lg->nap, lg->sweep_ms))
        wh_ledger_sweep(lg);
    return NULL;
}

struct wh_ledger *wh_ledger_new(const struct wh_ledger_opts *opts)
{
    struct wh_ledger *lg = calloc(1, sizeof(*lg));
    if (!lg)
        return NULL;
    lg->ttl_ms = opts && opts->ttl_ms ? opts->ttl_ms : WH_LEDGER_DEFAULT_TTL_MS;
    lg->max_per_group = opts && opts->max_per_group ? opts->max_per_group
                                                    : WH_LEDGER_DEFAULT_MAX_PER_GROUP;
    lg->now_ms = opts && opts->now_ms ? opts->now_ms : wh_clock_ms;
    atomic_init(&lg->fresh_since, -1L);
    atomic_init(&lg->heard, -1L);
    atomic_init(&lg->pending, 0);
    atomic_init(&lg->groups, 0);
    for (size_t i = 0; i < SHARDS; i++)
        pthread_mutex_init(&lg->shards[i].mu, NULL);
    wh_nap_init(&lg->nap);
    lg->sweep_ms = opts && opts->sweep_ms > 0 ? opts->sweep_ms : 0;
    if (lg->sweep_ms) {
        if (pthread_create(&lg->sweeper, NULL, sweeper_thread, lg)) {
            wh_ledger_free(lg);
            return NULL;
        }
        lg->sweeper_started = true;
    }
    return lg;
}

static void res_free(struct res *r)
{
    free(r->label);
    free(r->name);
}

static void group_free(struct wh_ledger_group *g)
{
    for (size_t i = 0; i < g->n; i++)
        res_free(&g->res[i]);
    free(g->res);
    free(g->index);
    free(g->ns);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void wh_ledger_free(struct wh_ledger *lg)
{
    if (!lg)
        return;
    wh_nap_stop(&lg->nap);
    if (lg->sweeper_started)
        pthread_join(lg->sweeper, NULL);
    wh_nap_destroy(&lg->nap);
    for (size_t i = 0; i < SHARDS; i++) {
        for (size_t b = 0; b < BUCKETS; b++) {
            struct wh_ledger_group *g = lg->shards[i].buckets[b];
            while (g) {
                struct wh_ledger_group *next = g->next;
                group_free(g);
                g = next;
            }
        }
        pthread_mutex_destroy(&lg->shards[i].mu);
    }
    free(lg);
}

static struct shard *shard_of(struct wh_ledger *lg, uint32_t h)
{
    return &lg->shards[h % SHARDS];
}

static struct wh_ledger_group **bucket_of(struct shard *sh, uint32_t h)
{
    return &sh->buckets[(h / SHARDS) % BUCKETS];
}

static struct wh_ledger_group *find(struct shard *sh, uint32_t h, const char *ns,
                                    const char *cluster, const char *group)
{
    for (struct wh_ledger_group *g = *bucket_of(sh, h); g; g = g->next)
        if (g->hash == h && !strcmp(g->ns, ns) && !strcmp(g->cluster, cluster) &&
            !strcmp(g->group, group))
            return g;
    return NULL;
}

static struct wh_ledger_group *group_new(struct wh_ledger *lg, uint32_t h, const char *ns,
                                         const char *cluster, const char *group)
{
    size_t a = strlen(ns) + 1, b = strlen(cluster) + 1, c = strlen(group) + 1;
    struct wh_ledger_group *g = calloc(1, sizeof(*g));
    char *keys = malloc(a + b + c);
    if (!g || !keys) {
        free(g);
        free(keys);
        return NULL;
    }
    memcpy(keys, ns, a);
    memcpy(keys + a, cluster, b);
    memcpy(keys + a + b, group, c);
    g->ns = keys;
    g->cluster = keys + a;
    g->group = keys + a + b;
    g->lg = lg;
    g->hash = h;
    pthread_mutex_init(&g->mu, NULL);
    return g;
}

/* Take a reference on the group's entry; create it when create is set.
 * NULL when absent (or OOM when creating). */
static struct wh_ledger_group *ref_group(struct wh_ledger *lg, const char *ns, const char *cluster,
                                         const char *group, bool create)
{
    uint32_t h = key_hash(ns, cluster, group);
    struct shard *sh = shard_of(lg, h);
    pthread_mutex_lock(&sh->mu);
    struct wh_ledger_group *g = find(sh, h, ns, cluster, group);
    if (!g && create) {
        g = group_new(lg, h, ns, cluster, group);
        if (g) {
            struct wh_ledger_group **bk = bucket_of(sh, h);
            g->next = *bk;
            *bk = g;
            atomic_fetch_add(&lg->groups, 1);
        }
    }
    if (g)
        g->refs++;
    pthread_mutex_unlock(&sh->mu);
    return g;
}

static void unlink_group(struct shard *sh, struct wh_ledger_group *g)
{
    for (struct wh_ledger_group **p = bucket_of(sh, g->hash); *p; p = &(*p)->next) {
        if (*p == g) {
            *p = g->next;
            atomic_fetch_sub(&g->lg->groups, 1);
            return;
        }
    }
}

/* Drop a reference; an idle entry without reservations is freed at once so
 * that the table holds only groups with work in flight. */
static void unref_group(struct wh_ledger_group *g)
{
    struct shard *sh = shard_of(g->lg, g->hash);
    pthread_mutex_lock(&sh->mu);
    bool dead = --g->refs == 0 && g->n == 0;
    if (dead)
        unlink_group(sh, g);
    pthread_mutex_unlock(&sh->mu);
    if (dead)
        group_free(g);
}

static void remove_at(struct wh_ledger_group *g, size_t i)
{
    res_free(&g->res[i]);
    g->res[i] = g->res[--g->n];
    g->dirty = true;
    atomic_fetch_sub(&g->lg->pending, 1);
}

static void expire(struct wh_ledger_group *g)
{
    struct wh_ledger *lg = g->lg;
    long fresh = atomic_load(&lg->fresh_since);
    if (lg->ttl_ms < 0 || fresh < 0 || g->n == 0)
        return;
    /* Time as far as the watch has shown it: a silent stream may be sitting
     * on the very pod a reservation waits for. */
    long heard = atomic_load(&lg->heard);
    long now = heard >= 0 ? heard : lg->now_ms();
    for (size_t i = g->n; i-- > 0;) {
        long from = g->res[i].at_ms > fresh ? g->res[i].at_ms : fresh;
        if (now - from >= lg->ttl_ms)
            remove_at(g, i);
    }
}

enum wh_err wh_ledger_lock(struct wh_ledger *lg, const char *ns, const char *cluster,
                           const char *group, struct wh_ledger_group **out, char *errbuf)
{
    *out = NULL;
    struct wh_ledger_group *g = ref_group(lg, ns ? ns : "", cluster ? cluster : "",
                                          group ? group : "", true);
    if (!g)
        return wh_fail(errbuf, WH_ERR_NOMEM,
                       "out of memory creating the ledger entry of "
                       "worker group %s/%s/%s",
                       ns, cluster, group);
    pthread_mutex_lock(&g->mu);
    expire(g);
    *out = g;
    return WH_OK;
}

void wh_ledger_unlock(struct wh_ledger_group *g)
{
    if (!g)
        return;
    pthread_mutex_unlock(&g->mu);
    unref_group(g);
}

static uint32_t id_hash(long replica, long worker_id)
{
    uint64_t x = (uint64_t)replica * 0x9E3779B97F4A7C15ull ^ (uint64_t)worker_id;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(x ^ (x >> 29));
}

static bool rebuild_index(struct wh_ledger_group *g)
{
    size_t want = 16;
    while (want < g->n * 2)
        want *= 2;
    if (want != g->index_cap) {
        uint32_t *ix = malloc(want * sizeof(*ix));
        if (!ix)
            return false;
        free(g->index);
        g->index = ix;
        g->index_cap = want;
    }
    memset(g->index, 0, g->index_cap * sizeof(*g->index));
    for (size_t i = 0; i < g->n; i++) {
        size_t s = id_hash(g->res[i].replica, g->res[i].worker_id) & (g->index_cap - 1);
        while (g->index[s])
            s = (s + 1) & (g->index_cap - 1);
        g->index[s] = (uint32_t)i + 1;
    }
    g->dirty = false;
    return true;
}

/* Index of the reservation with these ids, or -1. Falls back to a scan if
 * the index cannot be built (OOM), so answers never depend on memory. */
static long lookup(struct wh_ledger_group *g, long replica, long worker_id)
{
    if (g->n == 0)
        return -1;
    if ((g->dirty || !g->index) && !rebuild_index(g)) {
        for (size_t i = 0; i < g->n; i++)
            if (g->res[i].replica == replica && g->res[i].worker_id == worker_id)
                return (long)i;
        return -1;
    }
    size_t s = id_hash(replica, worker_id) & (g->index_cap - 1);
    for (; g->index[s]; s = (s + 1) & (g->index_cap - 1)) {
        struct res *r = &g->res[g->index[s] - 1];
        if (r->replica == replica && r->worker_id == worker_id)
            return (long)(g->index[s] - 1);
    }
    return -1;
}

/* The replica number of a "<group>-<n>" label of this group, or -1. */
static long label_replica(const struct wh_ledger_group *g, const char *label)
{
    size_t gl = strlen(g->group);
    if (!label || strncmp(label, g->group, gl) || label[gl] != '-')
        return -1;
    const char *p = label + gl + 1;
    if (*p < '0' || *p > '9')
        return -1;
    long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > (1L << 40))
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

int wh_ledger_each(struct wh_ledger_group *g, wh_pod_visit_fn fn, void *arg)
{
    for (size_t i = 0; i < g->n; i++) {
        const struct res *r = &g->res[i];
        if (r->marked)
            continue;
        struct wh_pod_rec rec = {
            .name = r->name,
            .ns = g->ns,
            .cluster = g->cluster,
            .group = g->group,
            .replica_label = r->label,
            .deleting = false,
            .n_tpu_containers = r->n_tpu,
            .worker_id = r->worker_id,
        };
        int rc = fn(arg, &rec);
        if (rc)
            return rc;
    }
    return 0;
}

void wh_ledger_clear_marks(struct wh_ledger_group *g)
{
    for (size_t i = 0; i < g->n; i++)
        g->res[i].marked = false;
}

bool wh_ledger_mark(struct wh_ledger_group *g, const char *replica_label, long worker_id)
{
    long replica = label_replica(g, replica_label);
    if (replica < 0)
        return false;
    long i = lookup(g, replica, worker_id);
    if (i < 0)
        return false;
    g->res[i].marked = true;
    return true;
}

enum wh_err wh_ledger_reserve(struct wh_ledger_group *g, long replica, long host, long worker_id,
                              unsigned n_tpu_containers, char *errbuf)
{
    struct wh_ledger *lg = g->lg;
    long i = lookup(g, replica, worker_id);
    if (i >= 0) {
        g->res[i].at_ms = lg->now_ms();
        return WH_OK;
    }
    if (g->n >= lg->max_per_group)
        return wh_fail(errbuf, WH_ERR_TOOBIG,
                       "worker group %s/%s/%s already holds %zu unconfirmed index reservations "
                       "(the limit); wait for its pods to show up or be deleted",
                       g->ns, g->cluster, g->group, g->n);
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 8;
        struct res *nr = realloc(g->res, cap * sizeof(*nr));
        if (!nr)
            return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory reserving an index");
        g->res = nr;
        g->cap = cap;
    }
    struct res r = {
        .replica = replica,
        .host = host,
        .worker_id = worker_id,
        .n_tpu = n_tpu_containers,
        .at_ms = lg->now_ms(),
    };
    int ll = snprintf(NULL, 0, "%s-%ld", g->group, replica);
    int nl = snprintf(NULL, 0, "(reserved %s-%ld-%ld)", g->group, replica, host);
    r.label = malloc((size_t)ll + 1);
    r.name = malloc((size_t)nl + 1);
    if (!r.label || !r.name) {
        res_free(&r);
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory reserving an index");
    }
    snprintf(r.label, (size_t)ll + 1, "%s-%ld", g->group, replica);
    snprintf(r.name, (size_t)nl + 1, "(reserved %s-%ld-%ld)", g->group, replica, host);
    g->res[g->n++] = r;
    g->dirty = true;
    atomic_fetch_add(&lg->pending, 1);
    return WH_OK;
}

bool wh_ledger_release(struct wh_ledger_group *g, long replica, long worker_id)
{
    long i = lookup(g, replica, worker_id);
    if (i < 0)
        return false;
    remove_at(g, (size_t)i);
    return true;
}

bool wh_ledger_confirm(struct wh_ledger *lg, const char *ns, const char *cluster, const char *group,
                       const char *replica_label, long worker_id)
{
    if (!ns || !cluster || !group || !replica_label)
        return false;
    struct wh_ledger_group *g = ref_group(lg, ns, cluster, group, false);
    if (!g)
        return false;
    pthread_mutex_lock(&g->mu);
    bool hit = false;
    long replica = label_replica(g, replica_label);
    if (replica >= 0) {
        long i = lookup(g, replica, worker_id);
        if (i >= 0) {
            remove_at(g, (size_t)i);
            hit = true;
        }
    }
    pthread_mutex_unlock(&g->mu);
    unref_group(g);
    return hit;
}

void wh_ledger_set_fresh_since(struct wh_ledger *lg, long since_ms)
{
    atomic_store(&lg->fresh_since, since_ms);
}

void wh_ledger_set_heard(struct wh_ledger *lg, long at_ms)
{
    atomic_store(&lg->heard, at_ms);
}

void wh_ledger_sweep(struct wh_ledger *lg)
{
    for (size_t i = 0; i < SHARDS; i++) {
        struct shard *sh = &lg->shards[i];
        pthread_mutex_lock(&sh->mu);
        for (size_t b = 0; b < BUCKETS; b++) {
            struct wh_ledger_group *g = sh->buckets[b];
            while (g) {
                struct wh_ledger_group *next = g->next;
                /* refs == 0: nobody holds or waits for the group, and only
                 * shard-mutex holders can take a new reference. */
                if (g->refs == 0 && pthread_mutex_trylock(&g->mu) == 0) {
                    expire(g);
                    pthread_mutex_unlock(&g->mu);
                    if (g->n == 0) {
                        unlink_group(sh, g);
                        group_free(g);
                    }
                }
                g = next;
            }
        }
        pthread_mutex_unlock(&sh->mu);
    }
}

enum wh_err wh_ledger_drop_cluster(struct wh_ledger *lg, const char *ns, const char *cluster)
{
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < SHARDS; i++) {
        struct shard *sh = &lg->shards[i];
        /* Reference the shard's matching groups, then clear each under its
         * own mutex: the shard mutex is never held while waiting for a group. */
        size_t n_hits = 0;
        pthread_mutex_lock(&sh->mu);
        for (size_t b = 0; b < BUCKETS; b++)
            for (struct wh_ledger_group *g = sh->buckets[b]; g; g = g->next)
                if (!strcmp(g->ns, ns) && !strcmp(g->cluster, cluster))
                    n_hits++;
        struct wh_ledger_group **list = n_hits ? malloc(n_hits * sizeof(*list)) : NULL;
        if (n_hits && !list)
            err = WH_ERR_NOMEM;
        size_t k = 0;
        for (size_t b = 0; b < BUCKETS && list; b++)
            for (struct wh_ledger_group *g = sh->buckets[b]; g; g = g->next)
                if (!strcmp(g->ns, ns) && !strcmp(g->cluster, cluster)) {
                    g->refs++;
                    list[k++] = g;
                }
        pthread_mutex_unlock(&sh->mu);
        for (size_t j = 0; j < k; j++) {
            pthread_mutex_lock(&list[j]->mu);
            while (list[j]->n)
                remove_at(list[j], list[j]->n - 1);
            pthread_mutex_unlock(&list[j]->mu);
            unref_group(list[j]);
        }
        free(list);
    }
    return err;
}

size_t wh_ledger_pending(struct wh_ledger *lg)
{
    return atomic_load(&lg->pending);
}

size_t wh_ledger_groups(struct wh_ledger *lg)
{
    return atomic_load(&lg->groups);
}
