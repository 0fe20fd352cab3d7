/* legacy.c: the legacy-path choice of replica and host (see legacy.h). */
#include "wh/legacy.h"

#include <stdlib.h> /* qsort */
#include <string.h> /* strrchr */

#include "wh/json.h"    /* wh_parse_long, wh_json_path */
#include "wh/mem.h"     /* wh_realloc, wh_free */
#include "wh/patch.h"   /* wh_patch_add_*, wh_pointer_escape */
#include "wh/podspec.h" /* WH_ANN_CLAIM_NONCE */

struct slot {
    long replica, host;
};

struct scan {
    struct slot *slots;
    size_t n, cap;
    bool oom;
    bool tpu7x; /* the group's pods share the incoming pod's node selector */
    struct wh_decision *d;
};

/* The integer after the last '-' of a replicaIndex label; 0 when it does
 * not parse (docs/internals/reference-behaviour.md §2.4). */
static long label_replica(const char *label)
{
    const char *dash = strrchr(label, '-');
    long r;
    return wh_parse_long(dash ? dash + 1 : label, &r) && r >= 0 ? r : 0;
}

static int scan_pod(void *arg, const struct wh_pod_rec *p)
{
    struct scan *sc = arg;
    /* D7: a non-TPU pod does not end the scan; a pod without an id is skipped. */
    if (p->deleting || p->n_tpu_containers == 0 || !p->replica_label)
        return 0;
    if (p->worker_id < 0) {
        if (p->worker_id == WH_WORKER_ID_EMPTY &&
            wh_decision_note(sc->d, "skipped existing pod %s/%s: labelled %s but no TPU_WORKER_ID",
                             p->ns, p->name, p->replica_label))
            sc->oom = true;
        return 0;
    }
    if (sc->n == sc->cap) {
        size_t nc = sc->cap ? sc->cap * 2 : 64;
        struct slot *s = wh_realloc(sc->slots, nc * sizeof(*s));
        if (!s) {
            sc->oom = true;
            return 1;
        }
        sc->slots = s;
        sc->cap = nc;
    }
    sc->slots[sc->n].replica = label_replica(p->replica_label);
    /* Only TPU7x numbers its containers host x containers + c
     * (docs/internals/reference-behaviour.md §2.7.3); the
     * reference divides every pod's id, which misreads other multi-container
     * pods. */
    sc->slots[sc->n].host = sc->tpu7x ? p->worker_id / (long)p->n_tpu_containers : p->worker_id;
    sc->n++;
    return 0;
}

static int cmp_slot(const void *a, const void *b)
{
    const struct slot *x = a, *y = b;
    if (x->replica != y->replica)
        return x->replica < y->replica ? -1 : 1;
    return (x->host > y->host) - (x->host < y->host);
}

/* docs/internals/reference-behaviour.md §2.4 steps 4-5 over slots sorted by (replica, host). */
static long choose_replica(const struct slot *s, size_t n, long n_hosts)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j].replica == s[i].replica)
            j++;
        if ((long)(j - i) < n_hosts)
            return s[i].replica; /* lowest incomplete replica */
        i = j;
    }
    /* all complete: the smallest integer in [0, distinct] not used */
    long want = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].replica == want)
            want++;
        else if (s[i].replica > want)
            break;
    }
    return want;
}

/* Returns -1 on a duplicate before the first gap. */
static long choose_host(const struct slot *s, size_t n, long replica)
{
    long counter = 0, last = -1;
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (s[i].replica != replica)
            continue;
        if (!first && s[i].host == last)
            return -1;
        if (s[i].host != counter)
            break;
        counter++;
        last = s[i].host;
        first = false;
    }
    return counter;
}

/* The (pick mod free count)-th free host of replica in [first, n_hosts),
 * first being the lowest free one (choose_host); slots sorted. Pass 0
 * counts the free hosts, pass 1 walks to the chosen one. */
static long pick_free_host(const struct slot *s, size_t n, long replica, long n_hosts, long first,
                           unsigned long pick)
{
    long n_free = 0, want = -1;
    for (int pass = 0; pass < 2 && (!pass || n_free > 1); pass++) {
        size_t i = 0;
        for (long h = first; h < n_hosts; h++) {
            while (i < n && (s[i].replica < replica || (s[i].replica == replica && s[i].host < h)))
                i++;
            if (i < n && s[i].replica == replica && s[i].host == h)
                continue;
            if (!pass)
                n_free++;
            else if (want-- == 0)
                return h;
        }
        want = (long)(pick % (unsigned long)(n_free ? n_free : 1));
    }
    return first;
}

enum wh_err wh_legacy_choose(const struct wh_state *st, const struct wh_legacy_group *g,
                             struct wh_decision *d, long *replica, long *host, char *errbuf)
{
    struct scan sc = {.d = d, .tpu7x = g->tpu7x};
    enum wh_err err = st->ops->each_group_pod(st->impl, g->ns, g->cluster, g->group, scan_pod, &sc,
                                              errbuf);
    if (!err && sc.oom)
        err = WH_ERR_NOMEM;
    if (err) {
        wh_free(sc.slots);
        return err;
    }
    if (sc.n)
        qsort(sc.slots, sc.n, sizeof(*sc.slots), cmp_slot);
    *replica = choose_replica(sc.slots, sc.n, g->n_hosts);
    *host = choose_host(sc.slots, sc.n, *replica);
    unsigned long pick = *host >= 0 && st->ops->legacy_pick ? st->ops->legacy_pick(st->impl) : 0;
    if (pick)
        *host = pick_free_host(sc.slots, sc.n, *replica, g->n_hosts, *host, pick);
    wh_free(sc.slots);
    return WH_OK;
}

enum wh_err wh_legacy_claim_nonce(const struct wh_state *st, const cJSON *pod, struct wh_decision *d)
{
    const char *nonce = st->ops->legacy_claim_nonce ? st->ops->legacy_claim_nonce(st->impl) : NULL;
    if (!nonce)
        return WH_OK;
    const cJSON *ann = wh_json_path(pod, "metadata", "annotations", NULL);
    if (cJSON_IsObject(ann)) { /* "add" replaces a value already there */
        char path[64] = "/metadata/annotations/";
        size_t n = strlen(path);
        wh_pointer_escape(WH_ANN_CLAIM_NONCE, path + n, sizeof(path) - n);
        return wh_patch_add_string(d, "add", path, nonce);
    }
    cJSON *obj = cJSON_CreateObject();
    if (!obj || !cJSON_AddStringToObject(obj, WH_ANN_CLAIM_NONCE, nonce)) {
        wh_json_delete(obj);
        return WH_ERR_NOMEM;
    }
    enum wh_err err = wh_patch_add_json(d, "add", "/metadata/annotations", obj);
    wh_json_delete(obj);
    return err;
}
