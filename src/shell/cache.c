/* cache.c: LIST + WATCH caches of KubeRay worker pods and TPU nodes. */
#include "wh/clock.h" /* wh_clock_ms, wh_nap */
#include "wh/hash.h"  /* wh_hash_str */
#include "wh/cache.h"

#include <pthread.h>   /* pthread_t, pthread_rwlock_t */
#include <stdatomic.h> /* atomic_bool */
#include <stdint.h>    /* uint32_t */
#include <stdio.h>     /* snprintf */
#include <stdlib.h>    /* calloc, free */
#include <string.h>    /* strcmp */
#include <time.h>      /* clock_gettime */

#include <cjson/cJSON.h>

#include "wh/buf.h"  /* wh_buf */
#include "wh/json.h" /* wh_json_parse, wh_json_get */
#include "wh/log.h"  /* wh_log */

#define DEFAULT_PAGE 500L
#define DEFAULT_MAX_BACKOFF_MS 30000L
#define MIN_BACKOFF_MS 200L

/* ---- hash tables: chained, power-of-two, grown at load 1 ---------------- */

struct hnode {
    struct hnode *next;
    uint32_t hash;
};

struct htab {
    struct hnode **b;
    size_t nb, n;
};

static bool htab_grow(struct htab *t)
{
    if (t->n < t->nb)
        return true;
    size_t nb = t->nb ? t->nb * 2 : 64;
    struct hnode **b = calloc(nb, sizeof(*b));
    if (!b)
        return t->nb > 0; /* keep working with longer chains */
    for (size_t i = 0; i < t->nb; i++) {
        for (struct hnode *e = t->b[i], *next; e; e = next) {
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

static struct hnode **htab_slot(const struct htab *t, uint32_t h)
{
    return &t->b[h & (t->nb - 1)];
}

/* Call after htab_grow() succeeded. */
static void htab_insert(struct htab *t, struct hnode *e)
{
    struct hnode **s = htab_slot(t, e->hash);
    e->next = *s;
    *s = e;
    t->n++;
}

static void htab_remove(struct htab *t, struct hnode *e)
{
    for (struct hnode **p = htab_slot(t, e->hash); *p; p = &(*p)->next) {
        if (*p == e) {
            *p = e->next;
            t->n--;
            return;
        }
    }
}

/* ---- interned strings (refcounted) -------------------------------------- */

struct istr {
    struct hnode h;
    uint32_t refs;
    char s[];
};

static const char *intern(struct htab *t, const char *s)
{
    uint32_t h = wh_hash_str(WH_HASH_INIT, s);
    if (t->nb) {
        for (struct hnode *e = *htab_slot(t, h); e; e = e->next) {
            struct istr *is = (struct istr *)e;
            if (e->hash == h && !strcmp(is->s, s)) {
                is->refs++;
                return is->s;
            }
        }
    }
    if (!htab_grow(t))
        return NULL;
    size_t n = strlen(s) + 1;
    struct istr *is = malloc(sizeof(*is) + n);
    if (!is)
        return NULL;
    is->h.hash = h;
    is->refs = 1;
    memcpy(is->s, s, n);
    htab_insert(t, &is->h);
    return is->s;
}

static void unintern(struct htab *t, const char *s)
{
    if (!s)
        return;
    struct istr *is = (struct istr *)(void *)(s - offsetof(struct istr, s));
    if (--is->refs == 0) {
        htab_remove(t, &is->h);
        free(is);
    }
}

/* ---- pods --------------------------------------------------------------- */

struct cgroup {
    struct hnode h;
    const char *ns, *cluster, *group; /* interned */
    struct cpod *head;
    size_t n;
};

struct cpod {
    struct hnode h;           /* by (ns, name) */
    struct cpod *gnext, *gprev;
    struct cgroup *grp;
    const char *replica_label; /* interned, NULL when absent */
    long worker_id;
    uint32_t gen;
    unsigned short n_tpu;
    bool deleting;
    char name[];
};

struct node_entry {
    char *name;
    size_t n;
    char **keys, **values;
    uint32_t gen;
};

enum res_kind { RES_PODS, RES_NODES };

struct watcher {
    struct wh_cache *c;
    enum res_kind kind;
    const char *what; /* "pods" / "nodes", for logs */
    const char *base; /* path + query with the label selector */
    pthread_t th;
    bool started;
    char rv[128];
    atomic_bool synced;
    atomic_long down_since; /* -1: healthy */
    uint32_t gen;
    unsigned seed;
    atomic_ulong relists, reconnects;
    bool relist; /* set by a 410 inside the stream */
    bool stream_failed; /* an ERROR event (not 410) or a torn line ended the stream */
    bool opened;        /* the current watch answered 2xx */
    bool logged;        /* on_event logged why the current watch failed */
    unsigned long stream_lines; /* lines received in the current stream */
    bool healthy;
};

struct wh_cache {
    struct wh_kube *kube;
    struct wh_cache_hooks hooks;
    long trust_ms, page_size, watch_timeout_s, max_backoff_ms;
    struct wh_nap nap; /* stops the watchers */

    pthread_rwlock_t lock; /* guards everything below */
    struct htab strings;
    struct htab groups;
    struct htab pods;
    struct node_entry *nodes;
    size_t n_nodes, cap_nodes;

    struct watcher w[2];
};

static uint32_t group_hash(const char *ns, const char *cluster, const char *group)
{
    return wh_hash_str(wh_hash_str(wh_hash_str(WH_HASH_INIT, ns), cluster), group);
}

static struct cgroup *find_group(const struct wh_cache *c, const char *ns, const char *cluster,
                                 const char *group)
{
    if (!c->groups.nb)
        return NULL;
    uint32_t h = group_hash(ns, cluster, group);
    for (struct hnode *e = *htab_slot(&c->groups, h); e; e = e->next) {
        struct cgroup *g = (struct cgroup *)e;
        if (e->hash == h && !strcmp(g->group, group) && !strcmp(g->cluster, cluster) &&
            !strcmp(g->ns, ns))
            return g;
    }
    return NULL;
}

static struct cgroup *get_group(struct wh_cache *c, const char *ns, const char *cluster,
                                const char *group)
{
    struct cgroup *g = find_group(c, ns, cluster, group);
    if (g)
        return g;
    if (!htab_grow(&c->groups) || !(g = calloc(1, sizeof(*g))))
        return NULL;
    g->ns = intern(&c->strings, ns);
    g->cluster = intern(&c->strings, cluster);
    g->group = intern(&c->strings, group);
    if (!g->ns || !g->cluster || !g->group) {
        unintern(&c->strings, g->ns);
        unintern(&c->strings, g->cluster);
        unintern(&c->strings, g->group);
        free(g);
        return NULL;
    }
    g->h.hash = group_hash(ns, cluster, group);
    htab_insert(&c->groups, &g->h);
    return g;
}

static void put_group(struct wh_cache *c, struct cgroup *g)
{
    if (g->n)
        return;
    htab_remove(&c->groups, &g->h);
    unintern(&c->strings, g->ns);
    unintern(&c->strings, g->cluster);
    unintern(&c->strings, g->group);
    free(g);
}

static uint32_t pod_hash(const char *ns, const char *name)
{
    return wh_hash_str(wh_hash_str(WH_HASH_INIT, ns), name);
}

static struct cpod *find_pod(const struct wh_cache *c, const char *ns, const char *name)
{
    if (!c->pods.nb)
        return NULL;
    uint32_t h = pod_hash(ns, name);
    for (struct hnode *e = *htab_slot(&c->pods, h); e; e = e->next) {
        struct cpod *p = (struct cpod *)e;
        if (e->hash == h && !strcmp(p->name, name) && !strcmp(p->grp->ns, ns))
            return p;
    }
    return NULL;
}

static void unlink_from_group(struct cpod *p)
{
    struct cgroup *g = p->grp;
    if (p->gprev)
        p->gprev->gnext = p->gnext;
    else
        g->head = p->gnext;
    if (p->gnext)
        p->gnext->gprev = p->gprev;
    p->gnext = p->gprev = NULL;
    g->n--;
}

static void link_to_group(struct cgroup *g, struct cpod *p)
{
    p->grp = g;
    p->gprev = NULL;
    p->gnext = g->head;
    if (g->head)
        g->head->gprev = p;
    g->head = p;
    g->n++;
}

static void remove_pod(struct wh_cache *c, struct cpod *p)
{
    struct cgroup *g = p->grp;
    htab_remove(&c->pods, &p->h);
    unlink_from_group(p);
    unintern(&c->strings, p->replica_label);
    free(p);
    put_group(c, g);
}

/* Insert or update one pod; caller holds the write lock. */
static enum wh_err upsert_pod(struct wh_cache *c, const struct wh_pod_rec *r, uint32_t gen)
{
    struct cpod *p = find_pod(c, r->ns, r->name);
    const char *label = NULL;
    if (r->replica_label && !(label = intern(&c->strings, r->replica_label)))
        return WH_ERR_NOMEM;
    if (p && (strcmp(p->grp->cluster, r->cluster) || strcmp(p->grp->group, r->group))) {
        /* Relabelled into another group: start over. */
        remove_pod(c, p);
        p = NULL;
    }
    if (!p) {
        struct cgroup *g = get_group(c, r->ns, r->cluster, r->group);
        size_t nl = strlen(r->name) + 1;
        if (!g || !htab_grow(&c->pods) || !(p = calloc(1, sizeof(*p) + nl))) {
            unintern(&c->strings, label);
            if (g)
                put_group(c, g);
            return WH_ERR_NOMEM;
        }
        memcpy(p->name, r->name, nl);
        p->h.hash = pod_hash(r->ns, r->name);
        htab_insert(&c->pods, &p->h);
        link_to_group(g, p);
    } else {
        unintern(&c->strings, p->replica_label);
    }
    p->replica_label = label;
    p->worker_id = r->worker_id;
    p->n_tpu = r->n_tpu_containers > 0xffff ? 0xffff : (unsigned short)r->n_tpu_containers;
    p->deleting = r->deleting;
    p->gen = gen;
    return WH_OK;
}

static void delete_pod(struct wh_cache *c, const char *ns, const char *name)
{
    struct cpod *p = find_pod(c, ns, name);
    if (p)
        remove_pod(c, p);
}

static void sweep_pods(struct wh_cache *c, uint32_t gen)
{
    for (size_t i = 0; i < c->pods.nb; i++) {
        struct hnode *e = c->pods.b[i];
        while (e) {
            struct hnode *next = e->next;
            struct cpod *p = (struct cpod *)e;
            if (p->gen != gen)
                remove_pod(c, p);
            e = next;
        }
    }
}

/* ---- nodes -------------------------------------------------------------- */

static void node_clear(struct node_entry *n)
{
    for (size_t i = 0; i < n->n; i++) {
        free(n->keys[i]);
        free(n->values[i]);
    }
    free(n->keys);
    free(n->values);
    free(n->name);
    memset(n, 0, sizeof(*n));
}

/* Build a node entry from a Node object (outside the lock). */
static enum wh_err node_from_json(const cJSON *node, struct node_entry *out)
{
    memset(out, 0, sizeof(*out));
    const cJSON *meta = wh_json_get(node, "metadata");
    const char *name = wh_json_str(meta, "name");
    const cJSON *labels = wh_json_get(meta, "labels");
    if (!name)
        return WH_ERR_INVALID;
    size_t n = 0;
    for (const cJSON *l = cJSON_IsObject(labels) ? labels->child : NULL; l; l = l->next)
        n += cJSON_IsString(l) && l->string;
    out->name = strdup(name);
    out->keys = calloc(n ? n : 1, sizeof(char *));
    out->values = calloc(n ? n : 1, sizeof(char *));
    if (!out->name || !out->keys || !out->values)
        goto oom;
    for (const cJSON *l = n ? labels->child : NULL; l; l = l->next) {
        if (!cJSON_IsString(l) || !l->string)
            continue;
        out->keys[out->n] = strdup(l->string);
        out->values[out->n] = strdup(l->valuestring);
        out->n++;
        if (!out->keys[out->n - 1] || !out->values[out->n - 1])
            goto oom;
    }
    return WH_OK;
oom:
    node_clear(out);
    return WH_ERR_NOMEM;
}

static long find_node(const struct wh_cache *c, const char *name)
{
    for (size_t i = 0; i < c->n_nodes; i++)
        if (!strcmp(c->nodes[i].name, name))
            return (long)i;
    return -1;
}

/* Takes ne's memory; caller holds the write lock. */
static enum wh_err upsert_node(struct wh_cache *c, struct node_entry *ne, uint32_t gen)
{
    ne->gen = gen;
    long i = find_node(c, ne->name);
    if (i >= 0) {
        node_clear(&c->nodes[i]);
        c->nodes[i] = *ne;
        return WH_OK;
    }
    if (c->n_nodes == c->cap_nodes) {
        size_t cap = c->cap_nodes ? c->cap_nodes * 2 : 16;
        struct node_entry *nn = realloc(c->nodes, cap * sizeof(*nn));
        if (!nn) {
            node_clear(ne);
            return WH_ERR_NOMEM;
        }
        c->nodes = nn;
        c->cap_nodes = cap;
    }
    c->nodes[c->n_nodes++] = *ne;
    return WH_OK;
}

static void delete_node_at(struct wh_cache *c, size_t i)
{
    node_clear(&c->nodes[i]);
    c->nodes[i] = c->nodes[--c->n_nodes];
}

static void sweep_nodes(struct wh_cache *c, uint32_t gen)
{
    for (size_t i = c->n_nodes; i-- > 0;)
        if (c->nodes[i].gen != gen)
            delete_node_at(c, i);
}

/* ---- applying objects --------------------------------------------------- */

/* Apply one object of a LIST (deleted = false) or a watch event. Returns
 * WH_ERR_NOMEM only; objects the caches do not keep are skipped. */
static enum wh_err apply(struct watcher *w, const cJSON *obj, bool deleted, uint32_t gen)
{
    struct wh_cache *c = w->c;
    enum wh_err err = WH_OK;
    if (w->kind == RES_NODES) {
        const char *name = wh_json_str(wh_json_get(obj, "metadata"), "name");
        if (!name)
            return WH_OK;
        bool tpu = wh_json_str(wh_json_path(obj, "metadata", "labels", NULL),
                               WH_CACHE_NODE_SELECTOR) != NULL;
        struct node_entry ne = {0};
        if (!deleted && tpu && (err = node_from_json(obj, &ne)))
            return err == WH_ERR_INVALID ? WH_OK : err;
        pthread_rwlock_wrlock(&c->lock);
        if (deleted || !tpu) {
            long i = find_node(c, name);
            if (i >= 0)
                delete_node_at(c, (size_t)i);
        } else {
            err = upsert_node(c, &ne, gen);
        }
        pthread_rwlock_unlock(&c->lock);
        return err;
    }
    struct wh_pod_rec r;
    const char *name = wh_json_str(wh_json_get(obj, "metadata"), "name");
    if (!wh_pod_rec_from_json(obj, &r) || !name || !*name)
        return WH_OK;
    r.name = name; /* the key; generateName is never a pod's identity */
    pthread_rwlock_wrlock(&c->lock);
    if (deleted)
        delete_pod(c, r.ns, r.name);
    else
        err = upsert_pod(c, &r, gen);
    pthread_rwlock_unlock(&c->lock);
    /* Only after the cache holds the change (see cache.h). */
    if (!err && c->hooks.pod_changed)
        c->hooks.pod_changed(c->hooks.arg, &r, deleted);
    return err;
}

/* ---- the watch loop ----------------------------------------------------- */

static void mark_healthy(struct watcher *w)
{
    struct wh_cache_hooks *h = &w->c->hooks;
    atomic_store(&w->down_since, -1L);
    if (!w->healthy && w->kind == RES_PODS && h->pods_health)
        h->pods_health(h->arg, wh_clock_ms());
    w->healthy = true;
}

static void mark_down(struct watcher *w)
{
    struct wh_cache_hooks *h = &w->c->hooks;
    long expected = -1;
    atomic_compare_exchange_strong(&w->down_since, &expected, wh_clock_ms());
    if (w->healthy && w->kind == RES_PODS && h->pods_health)
        h->pods_health(h->arg, -1);
    w->healthy = false;
}

static void escape(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            dst[o++] = (char)ch;
        } else {
            dst[o++] = '%';
            dst[o++] = hex[ch >> 4];
            dst[o++] = hex[ch & 15];
        }
    }
    dst[o] = '\0';
}

/* Status code of a Status object body, or 0. */
static long status_code(const cJSON *st)
{
    const cJSON *code = wh_json_get(st, "code");
    return cJSON_IsNumber(code) ? (long)code->valuedouble : 0;
}

/* What an operator should check for a status, or "" (401/403 are the
 * usual deployment mistakes and look alike in a bare status line). */
static const char *failure_hint(long status)
{
    if (status == 401)
        return "the API server rejected the webhook's credentials: check the bearer token "
               "(service-account token or kubeconfig token/tokenFile) or client certificate";
    if (status == 403)
        return "RBAC: the webhook's service account is not allowed to list and watch pods and "
               "nodes; bind it to a ClusterRole granting get, list and watch on pods and nodes";
    return "";
}

static void log_failure(struct watcher *w, const char *op, long status, const char *why)
{
    wh_log(WH_LOG_WARN, "kube_request_failed", "resource", WH_F_STR, w->what, "op", WH_F_STR, op,
           "status", WH_F_INT, (long long)status, "error", WH_F_STR, why, "source", WH_F_STR,
           wh_kube_source(w->c->kube),
           /* no hint: a NULL key ends the fields here */
           *failure_hint(status) ? "hint" : (char *)NULL, WH_F_STR, failure_hint(status),
           (char *)NULL);
}

/* LIST with paging; on success the cache holds exactly the listed objects
 * and w->rv is the list's resourceVersion. */
static enum wh_err list_all(struct watcher *w)
{
    struct wh_cache *c = w->c;
    char errbuf[WH_ERRBUF_LEN];
    char cont[4096] = "";
    uint32_t gen = ++w->gen;
    struct wh_buf body;
    wh_buf_init(&body, WH_KUBE_BODY_MAX);
    enum wh_err err = WH_OK;
    size_t items = 0;
    for (;;) {
        /* 3x for percent-escaping; the continue token is opaque. */
        char esc[3 * sizeof(cont)];
        escape(esc, sizeof(esc), cont);
        struct wh_buf pb;
        wh_buf_init(&pb, sizeof(esc) + 1024);
        if (wh_buf_addf(&pb, "%s&limit=%ld%s%s", w->base, c->page_size,
                        cont[0] ? "&continue=" : "", esc)) {
            err = WH_ERR_NOMEM;
            break;
        }
        long status = 0;
        wh_buf_reset(&body);
        err = wh_kube_get(c->kube, wh_buf_ptr(&pb), &body, &status, &c->nap.stop, errbuf);
        wh_buf_free(&pb);
        if (err) {
            log_failure(w, "list", 0, errbuf);
            break;
        }
        cJSON *json = NULL;
        if (status == 410 && cont[0]) {
            err = WH_ERR_NOTFOUND; /* the continue token expired: list again at once */
            break;
        }
        if (status != 200) {
            char why[256];
            snprintf(why, sizeof(why), "HTTP %ld: %.200s", status, wh_buf_ptr(&body));
            log_failure(w, "list", status, why);
            err = WH_ERR_HTTP;
            break;
        }
        if (wh_json_parse(wh_buf_ptr(&body), wh_buf_len(&body), &json, errbuf)) {
            log_failure(w, "list", status, errbuf);
            err = WH_ERR_INVALID;
            break;
        }
        const cJSON *list = wh_json_get(json, "items");
        for (const cJSON *it = cJSON_IsArray(list) ? list->child : NULL; it && !err; it = it->next) {
            err = apply(w, it, false, gen);
            items++;
        }
        const cJSON *meta = wh_json_get(json, "metadata");
        const char *next = wh_json_str(meta, "continue");
        const char *rv = wh_json_str(meta, "resourceVersion");
        if (rv)
            snprintf(w->rv, sizeof(w->rv), "%s", rv);
        if (next && strlen(next) >= sizeof(cont)) {
            log_failure(w, "list", status, "continue token longer than the client accepts");
            err = WH_ERR_TOOBIG;
        }
        snprintf(cont, sizeof(cont), "%s", next && !err ? next : "");
        cJSON_Delete(json);
        if (err) {
            if (err == WH_ERR_NOMEM)
                log_failure(w, "list", status, "out of memory");
            break;
        }
        if (!cont[0])
            break;
    }
    wh_buf_free(&body);
    if (err)
        return err;
    pthread_rwlock_wrlock(&c->lock);
    if (w->kind == RES_PODS)
        sweep_pods(c, gen);
    else
        sweep_nodes(c, gen);
    pthread_rwlock_unlock(&c->lock);
    wh_log(WH_LOG_INFO, "cache_listed", "resource", WH_F_STR, w->what, "items", WH_F_INT,
           (long long)items, "resourceVersion", WH_F_STR, w->rv, (char *)NULL);
    return WH_OK;
}

static void on_open(void *arg)
{
    struct watcher *w = arg;
    w->opened = true;
    mark_healthy(w);
}

static int on_event(void *arg, const char *line, size_t len)
{
    struct watcher *w = arg;
    char errbuf[WH_ERRBUF_LEN];
    cJSON *ev = NULL;
    w->stream_lines++;
    if (wh_json_parse(line, len, &ev, errbuf)) {
        /* A torn stream: reconnect (with backoff) from the last good version.
         * Not opened: an error answer that is not a Status (a proxy's page),
         * logged with its HTTP status by the watch loop. */
        if (w->opened) {
            log_failure(w, "watch", 200, errbuf);
            w->logged = true;
        }
        w->stream_failed = true;
        return 1;
    }
    const char *type = wh_json_str0(ev, "type");
    const cJSON *obj = wh_json_get(ev, "object");
    const char *rv = wh_json_str(wh_json_get(obj, "metadata"), "resourceVersion");
    int stop = 0;
    if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
        if (apply(w, obj, !strcmp(type, "DELETED"), w->gen)) {
            w->relist = true; /* out of memory: the cache missed an event */
            stop = 1;
        } else if (rv) {
            snprintf(w->rv, sizeof(w->rv), "%s", rv);
        }
    } else if (!strcmp(type, "BOOKMARK")) {
        if (rv)
            snprintf(w->rv, sizeof(w->rv), "%s", rv);
    } else {
        /* ERROR event, or a non-2xx answer whose body is the Status itself. */
        const cJSON *st = obj ? obj : ev;
        if (status_code(st) == 410) {
            w->relist = true;
        } else {
            log_failure(w, "watch", status_code(st), wh_json_str0(st, "message"));
            w->stream_failed = w->logged = true;
        }
        stop = 1;
    }
    cJSON_Delete(ev);
    /* After applying: what was heard is in the cache (and told). */
    struct wh_cache_hooks *h = &w->c->hooks;
    if (!stop && w->kind == RES_PODS && h->pods_current)
        h->pods_current(h->arg, wh_clock_ms());
    return stop;
}

/* How a watch ended, and so what the loop does next. */
enum watch_end {
    END_RESUME, /* the server ended the stream: watch again from w->rv */
    END_RELIST, /* 410 Gone (or the cache missed an event): LIST again */
    END_EMPTY,  /* ended at once with nothing said: pause, but not a failure */
    END_FAILED, /* transport error or error answer: back off, the cache ages */
    END_STOP,   /* wh_cache_free() */
};

/* One WATCH from w->rv until the stream ends. */
static enum watch_end watch_once(struct watcher *w)
{
    struct wh_cache *c = w->c;
    char path[1024], rv[3 * sizeof(w->rv)];
    long to = c->watch_timeout_s ? c->watch_timeout_s : 120 + (long)(rand_r(&w->seed) % 121);
    escape(rv, sizeof(rv), w->rv);
    snprintf(path, sizeof(path),
             "%s&watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%ld", w->base,
             rv, to);
    char errbuf[WH_ERRBUF_LEN];
    long status = 0;
    w->relist = w->stream_failed = w->opened = w->logged = false;
    w->stream_lines = 0;
    long opened = wh_clock_ms();
    enum wh_err err =
        wh_kube_stream(c->kube, path, on_open, on_event, w, &status, &c->nap.stop, errbuf);
    if (atomic_load(&c->nap.stop))
        return END_STOP;
    if (err) {
        log_failure(w, "watch", 0, errbuf);
        return END_FAILED;
    }
    if (status == 410 || w->relist)
        return END_RELIST;
    if (status != 200 || w->stream_failed) {
        /* A failure, so backed off: a server that answers every watch with
         * an error must not be hammered in a tight loop. */
        if (!w->logged)
            log_failure(w, "watch", status, "error answer without a Kubernetes Status");
        return END_FAILED;
    }
    /* Do not spin on a server (or proxy) that keeps ending watches at once. */
    if (w->stream_lines == 0 && wh_clock_ms() - opened < 1000)
        return END_EMPTY;
    return END_RESUME;
}

static long next_backoff(const struct wh_cache *c, long backoff)
{
    return backoff * 2 > c->max_backoff_ms ? c->max_backoff_ms : backoff * 2;
}

static void *watch_thread(void *arg)
{
    struct watcher *w = arg;
    struct wh_cache *c = w->c;
    long backoff = MIN_BACKOFF_MS;
    bool need_list = true, first = true, expired = false;
    while (!atomic_load(&c->nap.stop)) {
        bool failed = false;
        /* Back after longer than the cache is trusted: resuming the watch
         * would trust the cache before the missed events have been replayed,
         * so take a fresh snapshot first. */
        long down = atomic_load(&w->down_since);
        if (!first && down >= 0 && wh_clock_ms() - down > c->trust_ms)
            need_list = true;
        if (need_list) {
            if (!first)
                atomic_fetch_add(&w->relists, 1);
            long listed_at = wh_clock_ms();
            enum wh_err lerr = list_all(w);
            if (lerr == WH_ERR_NOTFOUND && !expired) {
                expired = true; /* retry at once, but only once in a row */
                continue;
            }
            expired = false;
            if (lerr) {
                failed = true;
            } else {
                need_list = first = false;
                atomic_store(&w->synced, true);
                mark_healthy(w);
                /* The snapshot is as of the LIST (reservations then expire
                 * only as fast as the watch is heard, see ledger.h). */
                if (w->kind == RES_PODS && c->hooks.pods_current)
                    c->hooks.pods_current(c->hooks.arg, listed_at);
                backoff = MIN_BACKOFF_MS;
            }
        }
        if (!failed) {
            switch (watch_once(w)) {
            case END_STOP:
                return NULL;
            case END_RELIST:
                need_list = true;
                continue;
            case END_RESUME:
                backoff = MIN_BACKOFF_MS;
                continue;
            case END_EMPTY: {
                long sleep = backoff;
                backoff = next_backoff(c, backoff);
                if (!wh_nap(&c->nap, sleep))
                    return NULL;
                continue;
            }
            case END_FAILED:
                failed = true;
                break;
            }
        }
        if (failed) {
            mark_down(w);
            atomic_fetch_add(&w->reconnects, 1);
            long sleep = backoff / 2 + (long)(rand_r(&w->seed) % (unsigned)(backoff / 2 + 1));
            backoff = next_backoff(c, backoff);
            if (!wh_nap(&c->nap, sleep))
                break;
        }
    }
    return NULL;
}

/* ---- public API --------------------------------------------------------- */

static void stop_threads(struct wh_cache *c)
{
    wh_nap_stop(&c->nap);
    for (size_t i = 0; i < 2; i++)
        if (c->w[i].started)
            pthread_join(c->w[i].th, NULL);
}

void wh_cache_free(struct wh_cache *c)
{
    if (!c)
        return;
    stop_threads(c);
    if (c->pods.b) {
        for (size_t i = 0; i < c->pods.nb; i++) {
            struct hnode *e = c->pods.b[i];
            while (e) {
                struct hnode *next = e->next;
                remove_pod(c, (struct cpod *)e);
                e = next;
            }
        }
    }
    free(c->pods.b);
    free(c->groups.b);
    free(c->strings.b);
    for (size_t i = 0; i < c->n_nodes; i++)
        node_clear(&c->nodes[i]);
    free(c->nodes);
    pthread_rwlock_destroy(&c->lock);
    wh_nap_destroy(&c->nap);
    wh_kube_free(c->kube);
    free(c);
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
    if (hooks)
        c->hooks = *hooks;
    c->trust_ms = opts && opts->trust_ms > 0 ? opts->trust_ms : WH_CACHE_DEFAULT_TRUST_MS;
    c->page_size = opts && opts->page_size > 0 ? opts->page_size : DEFAULT_PAGE;
    c->watch_timeout_s = opts && opts->watch_timeout_s > 0 ? opts->watch_timeout_s : 0;
    c->max_backoff_ms = opts && opts->max_backoff_ms > 0 ? opts->max_backoff_ms
                                                         : DEFAULT_MAX_BACKOFF_MS;
    if (c->max_backoff_ms < MIN_BACKOFF_MS)
        c->max_backoff_ms = MIN_BACKOFF_MS;
    wh_nap_init(&c->nap);
    /* Writers first: a steady stream of admissions must not hold watch
     * events (and so confirmations) back; each write is short. */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    static const char pods_base[] = "/api/v1/pods?labelSelector=ray.io%2Fnode-type%3Dworker%2C"
                                    "app.kubernetes.io%2Fcreated-by%3Dkuberay-operator";
    static const char nodes_base[] = "/api/v1/nodes?labelSelector="
                                     "cloud.google.com%2Fgke-tpu-accelerator";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (size_t i = 0; i < 2; i++) {
        struct watcher *w = &c->w[i];
        w->c = c;
        w->kind = i == 0 ? RES_PODS : RES_NODES;
        w->what = i == 0 ? "pods" : "nodes";
        w->base = i == 0 ? pods_base : nodes_base;
        w->seed = (unsigned)ts.tv_nsec ^ (unsigned)i * 2654435761u;
        atomic_init(&w->synced, false);
        atomic_init(&w->down_since, wh_clock_ms()); /* not yet reached */
    }
    for (size_t i = 0; i < 2; i++) {
        if (pthread_create(&c->w[i].th, NULL, watch_thread, &c->w[i])) {
            wh_fail(errbuf, WH_ERR_INTERNAL, "cannot start the %s watcher thread", c->w[i].what);
            wh_cache_free(c);
            return NULL;
        }
        c->w[i].started = true;
    }
    return c;
}

enum wh_err wh_cache_each_group_pod(struct wh_cache *c, const char *ns, const char *cluster,
                                    const char *group, wh_pod_visit_fn fn, void *arg,
                                    int *stopped, char *errbuf)
{
    (void)errbuf;
    *stopped = 0;
    pthread_rwlock_rdlock(&c->lock);
    struct cgroup *g = find_group(c, ns, cluster, group);
    for (struct cpod *p = g ? g->head : NULL; p && !*stopped; p = p->gnext) {
        struct wh_pod_rec rec = {
            .name = p->name,
            .ns = g->ns,
            .cluster = g->cluster,
            .group = g->group,
            .replica_label = p->replica_label,
            .deleting = p->deleting,
            .n_tpu_containers = p->n_tpu,
            .worker_id = p->worker_id,
        };
        *stopped = fn(arg, &rec);
    }
    pthread_rwlock_unlock(&c->lock);
    return WH_OK;
}

enum wh_err wh_cache_each_node(struct wh_cache *c, wh_node_visit_fn fn, void *arg, int *stopped,
                               char *errbuf)
{
    *stopped = 0;
    if (!atomic_load(&c->w[RES_NODES].synced))
        return wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                       "the TPU node cache has not synced with the Kubernetes API server (%s) "
                       "yet, so subslice placement cannot be decided; KubeRay will retry",
                       wh_kube_source(c->kube));
    pthread_rwlock_rdlock(&c->lock);
    for (size_t i = 0; i < c->n_nodes && !*stopped; i++) {
        const struct node_entry *n = &c->nodes[i];
        struct wh_node_rec rec = {
            .name = n->name,
            .n_labels = n->n,
            .keys = (const char *const *)n->keys,
            .values = (const char *const *)n->values,
        };
        *stopped = fn(arg, &rec);
    }
    pthread_rwlock_unlock(&c->lock);
    return WH_OK;
}

const char *wh_cache_pods_unavailable(struct wh_cache *c)
{
    const struct watcher *w = &c->w[RES_PODS];
    if (!atomic_load(&w->synced))
        return "the webhook's pod cache has not synced with the Kubernetes API server yet";
    long down = atomic_load(&w->down_since);
    if (down >= 0 && wh_clock_ms() - down > c->trust_ms)
        return "the webhook has lost its pod watch on the Kubernetes API server for longer than "
               "its cache can be trusted";
    return NULL;
}

bool wh_cache_ready(struct wh_cache *c, const char **why)
{
    *why = NULL;
    if (!atomic_load(&c->w[RES_PODS].synced))
        *why = "the pod cache has not synced with the Kubernetes API server yet";
    else if (!atomic_load(&c->w[RES_NODES].synced))
        *why = "the TPU node cache has not synced with the Kubernetes API server yet";
    return *why == NULL;
}

static long down_ms(const struct watcher *w)
{
    long down = atomic_load(&w->down_since), now = wh_clock_ms();
    return down >= 0 && now > down ? now - down : 0;
}

void wh_cache_stats(struct wh_cache *c, struct wh_cache_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->pods_synced = atomic_load(&c->w[RES_PODS].synced);
    st->nodes_synced = atomic_load(&c->w[RES_NODES].synced);
    st->pods_trusted = wh_cache_pods_unavailable(c) == NULL;
    st->pods_down_ms = down_ms(&c->w[RES_PODS]);
    st->nodes_down_ms = down_ms(&c->w[RES_NODES]);
    pthread_rwlock_rdlock(&c->lock);
    st->pods = c->pods.n;
    st->nodes = c->n_nodes;
    st->interned = c->strings.n;
    pthread_rwlock_unlock(&c->lock);
    st->relists = atomic_load(&c->w[0].relists) + atomic_load(&c->w[1].relists);
    st->reconnects = atomic_load(&c->w[0].reconnects) + atomic_load(&c->w[1].reconnects);
}
