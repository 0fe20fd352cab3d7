/* slicerec.c: a TPU pod as the live slice check needs it (slicerec.h). */
#include "slicerec.h"

#include <pthread.h>   /* pthread_mutex_t */
#include <stdatomic.h> /* atomic_ullong */
#include <stdlib.h>    /* calloc, free, realloc */
#include <string.h>    /* strncmp, strcmp, strlen, memcpy, memset */

#include "wh/htab.h"    /* wh_htab_*, wh_intern, wh_unintern */
#include "wh/hash.h"    /* wh_hash_str, WH_HASH_INIT */
#include "wh/json.h"    /* wh_json_get, wh_json_path, wh_json_str, wh_json_print, wh_json_parse */
#include "wh/podspec.h" /* wh_container_requests_tpu, WH_TPU_RESOURCE */

enum { SF_LABEL, SF_ANN, SF_SPEC, SF_SEL, SF_CONT, SF_ENV, SF_LIMIT, SF_REQUEST, SF_PHASE };

#define MAX_CONTAINERS 0xffff

/* The label and annotation keys the slice rules read (offline/doctor): the
 * controllers' and GKE's. A user's own labels would cost memory per pod. */
static bool keep_meta_key(const char *k)
{
    static const char *const prefixes[] = {
        "ray.io/",
        "jobset.sigs.k8s.io/",
        "leaderworkerset.sigs.k8s.io/",
        "batch.kubernetes.io/",
        "cloud.google.com/",
        "tpu-webhook/",
    };
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (!strncmp(k, prefixes[i], strlen(prefixes[i])))
            return true;
    return !strcmp(k, WH_LABEL_CREATED_BY) || !strcmp(k, WH_LABEL_LEGACY_REPLICA);
}

static bool keep_env(const char *k)
{
    return !strncmp(k, "TPU_", 4) || !strncmp(k, "MEGASCALE_", 10) || !strncmp(k, "TORCH_", 6) ||
           !strncmp(k, "PET_", 4);
}

static enum wh_err add(struct wh_slicerec_tmp *t, int where, size_t c, const char *k, const char *v)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 32;
        struct wh_sfield *f = realloc(t->f, cap * sizeof(*f));
        if (!f)
            return WH_ERR_NOMEM;
        t->f = f;
        t->cap = cap;
    }
    t->f[t->n++] =
        (struct wh_sfield){.k = k, .v = v, .c = (unsigned short)c, .where = (unsigned char)where};
    return WH_OK;
}

static enum wh_err add_pairs(struct wh_slicerec_tmp *t, int where, const cJSON *obj, bool all)
{
    enum wh_err err = WH_OK;
    for (const cJSON *l = cJSON_IsObject(obj) ? obj->child : NULL; l && !err; l = l->next)
        if (cJSON_IsString(l) && l->string && (all || keep_meta_key(l->string)))
            err = add(t, where, 0, l->string, l->valuestring);
    return err;
}

/* The google.com/tpu quantity of one of limits/requests, printed. */
static enum wh_err add_quantity(struct wh_slicerec_tmp *t, const cJSON *ct, size_t i,
                                const char *which, int where)
{
    const cJSON *q = wh_json_path(ct, "resources", which, WH_TPU_RESOURCE, NULL);
    if (!q)
        return WH_OK;
    char *text = NULL, **owned = realloc(t->owned, (t->n_owned + 1) * sizeof(*owned));
    if (!owned)
        return WH_ERR_NOMEM;
    t->owned = owned;
    if (wh_json_print(q, &text))
        return WH_ERR_NOMEM;
    t->owned[t->n_owned++] = text;
    return add(t, where, i, NULL, text);
}

static enum wh_err add_containers(struct wh_slicerec_tmp *t, const cJSON *cs)
{
    enum wh_err err = WH_OK;
    size_t i = 0;
    for (const cJSON *ct = cJSON_IsArray(cs) ? cs->child : NULL; ct && !err && i < MAX_CONTAINERS;
         ct = ct->next, i++) {
        err = add(t, SF_CONT, i, NULL, wh_json_str0(ct, "name"));
        if (err || !wh_container_requests_tpu(ct))
            continue;
        const cJSON *env = wh_json_get(ct, "env");
        for (const cJSON *e = cJSON_IsArray(env) ? env->child : NULL; e && !err; e = e->next) {
            const char *name = wh_json_str(e, "name");
            if (name && keep_env(name))
                err = add(t, SF_ENV, i, name, wh_json_str(e, "value"));
        }
        if (!err)
            err = add_quantity(t, ct, i, "limits", SF_LIMIT);
        if (!err)
            err = add_quantity(t, ct, i, "requests", SF_REQUEST);
    }
    return err;
}

static void tmp_free(struct wh_slicerec_tmp *t);

static enum wh_err collect(const cJSON *pod, struct wh_slicerec_tmp *t)
{
    const cJSON *meta = wh_json_get(pod, "metadata"), *spec = wh_json_get(pod, "spec");
    enum wh_err err = add_pairs(t, SF_LABEL, wh_json_get(meta, "labels"), false);
    if (!err)
        err = add_pairs(t, SF_ANN, wh_json_get(meta, "annotations"), false);
    static const char *const keys[] = {"nodeName", "hostname", "subdomain", "dnsPolicy"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !err; i++) {
        const char *v = wh_json_str(spec, keys[i]);
        if (v)
            err = add(t, SF_SPEC, 0, keys[i], v);
    }
    if (!err && cJSON_IsTrue(wh_json_get(spec, "hostNetwork")))
        err = add(t, SF_SPEC, 0, "hostNetwork", "true");
    if (!err)
        err = add_pairs(t, SF_SEL, wh_json_get(spec, "nodeSelector"), true);
    if (!err)
        err = add_containers(t, wh_json_get(spec, "containers"));
    const char *phase = wh_json_str(wh_json_get(pod, "status"), "phase");
    if (!err && phase)
        err = add(t, SF_PHASE, 0, NULL, phase);
    return err;
}

static void tmp_free(struct wh_slicerec_tmp *t)
{
    for (size_t i = 0; i < t->n_owned; i++)
        cJSON_free(t->owned[i]);
    free(t->owned);
    free(t->f);
    memset(t, 0, sizeof(*t));
}

static void release(struct wh_htab *strings, struct wh_sfield *f, unsigned short n);

static enum wh_err intern_all(struct wh_htab *strings, const struct wh_slicerec_tmp *t,
                              struct wh_sfield **out, unsigned short *n)
{
    size_t nf = t->n > 0xffff ? 0xffff : t->n;
    struct wh_sfield *f = calloc(nf ? nf : 1, sizeof(*f));
    *out = NULL;
    *n = 0;
    if (!f)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < nf; i++) {
        f[i] = t->f[i];
        f[i].k = t->f[i].k ? wh_intern(strings, t->f[i].k) : NULL;
        f[i].v = t->f[i].v ? wh_intern(strings, t->f[i].v) : NULL;
        if ((t->f[i].k && !f[i].k) || (t->f[i].v && !f[i].v)) {
            wh_unintern(strings, f[i].k);
            wh_unintern(strings, f[i].v);
            release(strings, f, (unsigned short)i);
            return WH_ERR_NOMEM;
        }
    }
    *out = f;
    *n = (unsigned short)nf;
    return WH_OK;
}

static void release(struct wh_htab *strings, struct wh_sfield *f, unsigned short n)
{
    for (unsigned short i = 0; f && i < n; i++) {
        wh_unintern(strings, f[i].k);
        wh_unintern(strings, f[i].v);
    }
    free(f);
}

/* obj[key] as an object, created when absent; NULL on OOM. */
static cJSON *child(cJSON *obj, const char *key)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (c)
        return c;
    c = cJSON_CreateObject();
    return c && !wh_json_set_lit(obj, key, c) ? c : NULL;
}

/* One field into the pod being built; cur is the last container. */
static enum wh_err put(cJSON *meta, cJSON *spec, cJSON *status, cJSON *cs, cJSON **cur,
                       const struct wh_sfield *f)
{
    cJSON *o, *e;
    switch (f->where) {
    case SF_LABEL:
        return (o = child(meta, "labels")) ? wh_json_set_str(o, f->k, f->v) : WH_ERR_NOMEM;
    case SF_ANN:
        return (o = child(meta, "annotations")) ? wh_json_set_str(o, f->k, f->v) : WH_ERR_NOMEM;
    case SF_SEL:
        return (o = child(spec, "nodeSelector")) ? wh_json_set_str(o, f->k, f->v) : WH_ERR_NOMEM;
    case SF_SPEC:
        return !strcmp(f->k, "hostNetwork") ? wh_json_set(spec, f->k, cJSON_CreateTrue())
                                            : wh_json_set_str(spec, f->k, f->v);
    case SF_PHASE: return wh_json_set_str_lit(status, "phase", f->v);
    case SF_CONT:
        /* Placeholders keep the TPU containers at their indices. */
        while (cJSON_GetArraySize(cs) <= f->c)
            if (!(*cur = cJSON_CreateObject()) || wh_json_add(cs, *cur))
                return WH_ERR_NOMEM;
        return wh_json_set_str_lit(*cur, "name", f->v);
    case SF_ENV:
        if (!*cur || !(o = cJSON_GetObjectItemCaseSensitive(*cur, "env"))) {
            if (!*cur || !(o = cJSON_CreateArray()) || wh_json_set_lit(*cur, "env", o))
                return WH_ERR_NOMEM;
        }
        if (!(e = cJSON_CreateObject()) || wh_json_add(o, e) || wh_json_set_str_lit(e, "name", f->k))
            return WH_ERR_NOMEM;
        return f->v ? wh_json_set_str_lit(e, "value", f->v) : WH_OK;
    default: {
        cJSON *q = NULL;
        char eb[WH_ERRBUF_LEN];
        o = *cur ? child(child(*cur, "resources"), f->where == SF_LIMIT ? "limits" : "requests")
                 : NULL;
        if (!o || wh_json_parse(f->v, strlen(f->v), &q, eb))
            return WH_ERR_NOMEM; /* printed by wh_json_print: parses */
        return wh_json_set_lit(o, WH_TPU_RESOURCE, q);
    }
    }
}

static cJSON *as_pod(const char *ns, const char *name, bool deleting, const struct wh_sfield *f,
                     unsigned short n)
{
    cJSON *pod = cJSON_CreateObject(), *cur = NULL;
    cJSON *meta = pod ? child(pod, "metadata") : NULL;
    cJSON *spec = meta ? child(pod, "spec") : NULL;
    cJSON *status = spec ? child(pod, "status") : NULL;
    cJSON *cs = status ? cJSON_CreateArray() : NULL;
    enum wh_err err = cs && !wh_json_set_lit(spec, "containers", cs) ? WH_OK : WH_ERR_NOMEM;
    if (!err)
        err = wh_json_set_str_lit(pod, "kind", "Pod");
    if (!err)
        err = wh_json_set_str_lit(meta, "name", name);
    if (!err)
        err = wh_json_set_str_lit(meta, "namespace", ns);
    if (!err && deleting) /* doctor skips terminating pods; the time is not kept */
        err = wh_json_set_str_lit(meta, "deletionTimestamp", "1970-01-01T00:00:00Z");
    for (unsigned short i = 0; i < n && !err; i++)
        err = put(meta, spec, status, cs, &cur, &f[i]);
    if (err) {
        cJSON_Delete(pod);
        return NULL;
    }
    return pod;
}

/* ---- the table ------------------------------------------------------------ */

/* One TPU pod's record. */
struct srec {
    struct wh_hnode h; /* by (ns, name) */
    struct wh_sfield *f;
    unsigned short n;
    bool deleting;
    uint32_t gen;
    const char *ns; /* interned */
    char name[];
};

struct wh_slicerecs {
    pthread_mutex_t lock; /* guards the tables; version moves under it */
    struct wh_htab recs, strings;
    atomic_ullong version;
};

struct wh_slicerecs *wh_slicerecs_new(void)
{
    struct wh_slicerecs *t = calloc(1, sizeof(*t));
    if (t)
        pthread_mutex_init(&t->lock, NULL);
    return t;
}

static void remove_rec(struct wh_slicerecs *t, struct srec *r)
{
    wh_htab_remove(&t->recs, &r->h);
    release(&t->strings, r->f, r->n);
    wh_unintern(&t->strings, r->ns);
    free(r);
    atomic_fetch_add(&t->version, 1);
}

static void sweep(struct wh_slicerecs *t, bool all, uint32_t gen)
{
    for (size_t i = 0; i < t->recs.nb; i++)
        for (struct wh_hnode *e = t->recs.b[i], *next; e; e = next) {
            next = e->next;
            if (all || ((struct srec *)e)->gen != gen)
                remove_rec(t, (struct srec *)e);
        }
}

void wh_slicerecs_free(struct wh_slicerecs *t)
{
    if (!t)
        return;
    sweep(t, true, 0);
    wh_htab_free(&t->recs);
    wh_htab_free(&t->strings);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static uint32_t rec_hash(const char *ns, const char *name)
{
    return wh_hash_str(wh_hash_str(WH_HASH_INIT, ns), name);
}

static struct srec *find(const struct wh_slicerecs *t, const char *ns, const char *name)
{
    if (!t->recs.nb)
        return NULL;
    uint32_t h = rec_hash(ns, name);
    for (struct wh_hnode *e = *wh_htab_slot(&t->recs, h); e; e = e->next) {
        struct srec *r = (struct srec *)e;
        if (e->hash == h && !strcmp(r->name, name) && !strcmp(r->ns, ns))
            return r;
    }
    return NULL;
}

/* Insert or replace the record of ns/name; the lock is held. */
static enum wh_err upsert(struct wh_slicerecs *t, const struct wh_slicerec_tmp *tmp, const char *ns,
                          const char *name, bool deleting, uint32_t gen)
{
    struct wh_sfield *f;
    unsigned short n;
    if (intern_all(&t->strings, tmp, &f, &n))
        return WH_ERR_NOMEM;
    struct srec *r = find(t, ns, name);
    if (!r) {
        size_t nl = strlen(name) + 1;
        if (!wh_htab_grow(&t->recs) || !(r = calloc(1, sizeof(*r) + nl)) ||
            !(r->ns = wh_intern(&t->strings, ns))) {
            free(r);
            release(&t->strings, f, n);
            return WH_ERR_NOMEM;
        }
        memcpy(r->name, name, nl);
        r->h.hash = rec_hash(ns, name);
        wh_htab_insert(&t->recs, &r->h);
    } else {
        release(&t->strings, r->f, r->n);
    }
    r->f = f;
    r->n = n;
    r->deleting = deleting;
    r->gen = gen;
    atomic_fetch_add(&t->version, 1);
    return WH_OK;
}

enum wh_err wh_slicerecs_apply(struct wh_slicerecs *t, const cJSON *pod, const char *ns,
                               const char *name, bool keep, bool deleting, uint32_t gen)
{
    struct wh_slicerec_tmp tmp = {0};
    enum wh_err err = keep ? collect(pod, &tmp) : WH_OK;
    if (!err) {
        pthread_mutex_lock(&t->lock);
        struct srec *r = keep ? NULL : find(t, ns, name);
        if (keep)
            err = upsert(t, &tmp, ns, name, deleting, gen);
        else if (r)
            remove_rec(t, r);
        pthread_mutex_unlock(&t->lock);
    }
    tmp_free(&tmp);
    return err;
}

void wh_slicerecs_sweep(struct wh_slicerecs *t, uint32_t gen)
{
    pthread_mutex_lock(&t->lock);
    sweep(t, false, gen);
    pthread_mutex_unlock(&t->lock);
}

void wh_slicerecs_bump(struct wh_slicerecs *t)
{
    atomic_fetch_add(&t->version, 1);
}

unsigned long long wh_slicerecs_version(struct wh_slicerecs *t)
{
    return atomic_load(&t->version);
}

enum wh_err wh_slicerecs_pods(struct wh_slicerecs *t, cJSON *pods, unsigned long long *version)
{
    enum wh_err err = WH_OK;
    pthread_mutex_lock(&t->lock);
    *version = atomic_load(&t->version);
    for (size_t i = 0; i < t->recs.nb && !err; i++)
        for (const struct wh_hnode *e = t->recs.b[i]; e && !err; e = e->next) {
            const struct srec *r = (const struct srec *)e;
            cJSON *o = as_pod(r->ns, r->name, r->deleting, r->f, r->n);
            err = o ? wh_json_add(pods, o) : WH_ERR_NOMEM;
        }
    pthread_mutex_unlock(&t->lock);
    return err;
}

size_t wh_slicerecs_count(struct wh_slicerecs *t)
{
    pthread_mutex_lock(&t->lock);
    size_t n = t->recs.n;
    pthread_mutex_unlock(&t->lock);
    return n;
}
