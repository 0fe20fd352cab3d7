/* doctor.c: slices as they stand, judged (doctor.h).
 *
 * One pass reads every pod into a record and files it under its slice in a
 * hash table (and its slice under a multi-slice group: a KubeRay worker
 * group, a JobSet replicated job); each rule then walks one slice's pods,
 * with arrays indexed by host or worker id instead of pairwise scans.
 *
 * Drift, how: a pod as created never shows which env entries the webhook
 * added. So the pod is rebuilt as its controller sent it, minus every
 * variable a mutation path writes (WH_DOCTOR_INJECTED below; the user's
 * MEGASCALE_NUM_SLICES stays, it is an input), and goes through the engine
 * (wh_render_admit_pod) against the listed nodes. A legacy KubeRay pod keeps
 * its TPU_WORKER_ID, replicaIndex label and hostname: they are the evidence
 * from which the engine re-derives its indices (mutate.c, reuse_indices), so
 * no cluster state is needed; the id rules judge the id itself. What the
 * engine writes is compared with what the pod holds; a variable the engine
 * leaves alone (LWS's own) is not compared. */
/* long: one module of rules sharing the slice model; split by rule family it
 * would export the model for no other user */
#include "wh/doctor.h"

#include <stdarg.h> /* va_list */
#include <stdint.h> /* uint32_t */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free, qsort, realloc */
#include <string.h> /* strcmp, strlen, strcspn, strncmp */

#include "wh/hash.h"      /* wh_hash_str, WH_HASH_INIT */
#include "wh/json.h"      /* wh_json_* */
#include "wh/megascale.h" /* wh_megascale_joined_slices */
#include "wh/nodeindex.h" /* wh_nodeindex_* */
#include "wh/podspec.h"   /* wh_meta_*, wh_env_lookup, WH_* keys */
#include "wh/render.h"    /* wh_render_admit_pod */
#include "wh/state.h"     /* wh_memstate_* */
#include "wh/term.h"      /* wh_term_escape, wh_term_escaped_len */
#include "wh/topology.h"  /* wh_topology_*, wh_is_tpu7x */
#include "wh/tpuenv.h"    /* wh_tpu_containers_*, wh_tpu_worker_id */

#define K_LWS_NAME "leaderworkerset.sigs.k8s.io/name"
#define K_LWS_WORKER "leaderworkerset.sigs.k8s.io/worker-index"
#define K_LWS_LEADER "leaderworkerset.sigs.k8s.io/leader-name"
#define K_LWS_LEADER_TPUS "leaderworkerset.sigs.k8s.io/leader-requests-tpus"
#define K_JS_NAME "jobset.sigs.k8s.io/jobset-name"
#define K_JS_RJOB "jobset.sigs.k8s.io/replicatedjob-name"
#define K_JS_REPLICAS "jobset.sigs.k8s.io/replicatedjob-replicas"
#define K_JS_JOB "jobset.sigs.k8s.io/job-index"
#define K_JOB_INDEX "batch.kubernetes.io/job-completion-index"
#define K_JOB_NAME "batch.kubernetes.io/job-name"
#define K_PLACEMENT "cloud.google.com/gke-placement-group"
#define SHOW_MAX 160 /* longest value shown in a problem */

/* ---- a string-keyed hash table ---------------------------------------- */

struct dent {
    struct dent *next;
    uint32_t h;
    char *key;
    void *val;
};
struct dmap {
    struct dent **b;
    size_t nb, n;
};

static void *dmap_get(const struct dmap *m, const char *key)
{
    if (!m->nb)
        return NULL;
    uint32_t h = wh_hash_str(WH_HASH_INIT, key);
    for (struct dent *e = m->b[h & (m->nb - 1)]; e; e = e->next)
        if (e->h == h && !strcmp(e->key, key))
            return e->val;
    return NULL;
}

static bool dmap_grow(struct dmap *m)
{
    if (m->n < m->nb)
        return true;
    size_t nb = m->nb ? m->nb * 2 : 64;
    struct dent **b = calloc(nb, sizeof(*b));
    if (!b)
        return false;
    for (size_t i = 0; i < m->nb; i++)
        for (struct dent *e = m->b[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->h & (nb - 1)];
            b[e->h & (nb - 1)] = e;
        }
    free(m->b);
    m->b = b;
    m->nb = nb;
    return true;
}

/* Add key (copied) -> val; the key must not be there yet. */
static enum wh_err dmap_put(struct dmap *m, const char *key, void *val)
{
    struct dent *e = dmap_grow(m) ? calloc(1, sizeof(*e)) : NULL;
    if (!e || !(e->key = strdup(key))) {
        free(e);
        return WH_ERR_NOMEM;
    }
    e->h = wh_hash_str(WH_HASH_INIT, key);
    e->val = val;
    e->next = m->b[e->h & (m->nb - 1)];
    m->b[e->h & (m->nb - 1)] = e;
    m->n++;
    return WH_OK;
}

static void dmap_free(struct dmap *m)
{
    for (size_t i = 0; i < m->nb; i++)
        for (struct dent *e = m->b[i], *next; e; e = next) {
            next = e->next;
            free(e->key);
            free(e);
        }
    free(m->b);
    memset(m, 0, sizeof(*m));
}

/* ---- the model ---------------------------------------------------------- */

enum dkind { DK_KUBERAY, DK_LWS, DK_JOBSET, DK_JOB, DK_POD };
static const char *const kind_names[] = {"RayCluster", "LeaderWorkerSet", "JobSet", "Job", "Pod"};

struct dcont {
    int index; /* in spec.containers */
    const cJSON *env;
    bool id_set; /* TPU_WORKER_ID holds an integer */
    long id;
};

struct dslice;

struct dpod {
    const cJSON *obj, *spec, *labels;
    const char *ns, *name, *node, *hostname, *subdomain, *accel, *topology;
    enum dkind kind;
    bool kuberay_legacy, pending;
    unsigned n_tpu;
    long chips;
    struct dcont *c;
    bool tpu7x;
    long hosts;              /* hosts of its slice by topology and chips; -1 unknown */
    long host;               /* its index in the slice; -1 unknown */
    long slice_no;           /* its slice's index in a multi-slice group; -1 none */
    long n_slices;           /* slices its controller says the group has; -1 unknown */
    const char *index_field; /* where host came from, for messages */
    struct dslice *slice;
};

struct dgroup;

struct dslice {
    char name[512];
    const char *ns;
    enum dkind kind;
    struct dpod **pods;
    size_t n, cap;
    long hosts;
    struct dgroup *group;
    cJSON *problems;
    size_t errors, warnings;
};

struct dgroup {
    struct dslice **slices;
    size_t n, cap;
};

struct doc {
    struct dmap slices, groups, nodes, services, selectors;
    struct dpod *pods;
    size_t n_pods;
    struct dslice **sl; /* every slice, in first-seen order */
    size_t n_sl, cap_sl;
    struct dgroup **gr;
    size_t n_gr, cap_gr;
    bool have_nodes, have_services;
    struct wh_node_rec *nrecs; /* every node, labels borrowed from the input */
    size_t n_nrecs;
    struct wh_nodeindex *by_label; /* nrecs by label (id: the index in nrecs) */
    char *errbuf;
};

static enum wh_err push(void *arr_p, size_t *n, size_t *cap, void *item)
{
    void ***arr = arr_p;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        void **na = realloc(*arr, nc * sizeof(*na));
        if (!na)
            return WH_ERR_NOMEM;
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = item;
    return WH_OK;
}

/* ---- problems ------------------------------------------------------------ */

/* s cut for display: at most max bytes, "..." and the entry count of a
 * long comma list after. out has room for SHOW_ROOM bytes. */
#define SHOW_ROOM 1100
static const char *show_n(const char *s, size_t max, char *out)
{
    if (!s)
        return "(unset)";
    size_t n = strlen(s);
    if (n <= max)
        return s;
    size_t entries = 1;
    for (const char *p = s; *p; p++)
        entries += *p == ',';
    size_t cut = max;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--; /* not inside a UTF-8 character */
    snprintf(out, SHOW_ROOM, "%.*s... (%zu entries)", (int)cut, s, entries);
    return out;
}

static const char *show(const char *s, char out[static SHOW_ROOM])
{
    return show_n(s, SHOW_MAX, out);
}

struct pfields {
    const char *problem, *pod, *field, *holds, *expected;
};

/* One finding about slice s; fix is printf-style. */
static enum wh_err problem(struct dslice *s, bool error, const struct pfields *f, const char *fmt,
                           ...) __attribute__((format(printf, 4, 5)));
static enum wh_err problem(struct dslice *s, bool error, const struct pfields *f, const char *fmt,
                           ...)
{
    char fix[1024], h[SHOW_ROOM], e[SHOW_ROOM];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fix, sizeof(fix), fmt, ap);
    va_end(ap);
    cJSON *p = cJSON_CreateObject();
    if (!p || wh_json_add(s->problems, p) || wh_json_set_str(p, "problem", f->problem) ||
        wh_json_set_str(p, "severity", error ? "error" : "warning") ||
        wh_json_set_str(p, "pod", f->pod ? f->pod : "") ||
        wh_json_set_str(p, "field", f->field ? f->field : "") ||
        wh_json_set_str(p, "holds", show_n(f->holds, 1000, h)) ||
        wh_json_set_str(p, "expected", show_n(f->expected, 1000, e)) ||
        wh_json_set_str(p, "fix", fix))
        return WH_ERR_NOMEM;
    if (error)
        s->errors++;
    else
        s->warnings++;
    return WH_OK;
}

/* ---- reading pods ------------------------------------------------------- */

static const char *env_of(const struct dcont *c, const char *name)
{
    struct wh_env_lookup lk;
    wh_env_lookup(c->env, name, &lk);
    return lk.exists ? lk.value : NULL;
}

static const char *lab(const struct dpod *p, const char *key)
{
    const char *v = wh_meta_label(p->obj, key);
    return v ? v : wh_meta_annotation(p->obj, key);
}

static long num_or(const char *s, long dflt)
{
    long v;
    return s && wh_parse_long(s, &v) && v >= 0 ? v : dflt;
}

static enum wh_err read_containers(struct dpod *p, char *errbuf)
{
    struct wh_tpu_containers tc;
    const cJSON *cs = wh_json_get(p->spec, "containers");
    if (!cJSON_IsArray(cs))
        return WH_OK;
    enum wh_err err = wh_tpu_containers_collect(cs, &tc, errbuf);
    if (err == WH_ERR_INVALID)
        return WH_OK; /* a quantity the API server would have refused: no TPU pod */
    if (err)
        return err;
    p->n_tpu = tc.n;
    p->chips = tc.chips;
    if (tc.n && !(p->c = calloc(tc.n, sizeof(*p->c))))
        err = WH_ERR_NOMEM;
    for (unsigned i = 0; !err && i < tc.n; i++) {
        struct dcont *c = &p->c[i];
        c->index = tc.items[i].index;
        c->env = wh_json_get(tc.items[i].obj, "env");
        const char *id = env_of(c, "TPU_WORKER_ID");
        c->id_set = id && wh_parse_long(id, &c->id);
    }
    wh_tpu_containers_free(&tc);
    return err;
}

/* Topology and accelerator: the pod's own (annotation, then selector),
 * else the labels of the node it runs on. */
static void read_tpu(struct doc *d, struct dpod *p)
{
    bool from_ann;
    p->topology = wh_slice_topology(p->obj, p->spec, &from_ann);
    p->accel = wh_node_selector(p->spec, WH_SEL_ACCELERATOR);
    const struct wh_node_rec *nr = p->node ? dmap_get(&d->nodes, p->node) : NULL;
    if (!p->topology && nr)
        p->topology = wh_node_label(nr, WH_SEL_TOPOLOGY);
    if (!p->accel && nr)
        p->accel = wh_node_label(nr, WH_SEL_ACCELERATOR);
    p->tpu7x = wh_is_tpu7x(p->accel);
    struct wh_topology t;
    char eb[WH_ERRBUF_LEN];
    p->hosts = p->topology && !wh_topology_parse(p->topology, &t, eb)
                   ? wh_topology_hosts(&t, p->chips)
                   : -1;
}

/* Host index of a KubeRay pod: the native label, else the legacy hostname
 * "<replicaIndex>-<h>", else its TPU_WORKER_ID. */
static void kuberay_host(struct dpod *p, const char *replica_label)
{
    const char *h = wh_meta_label(p->obj, WH_LABEL_HOST_INDEX);
    if (h && wh_meta_has_label(p->obj, WH_LABEL_REPLICA_INDEX)) {
        p->host = num_or(h, -1);
        p->index_field = "metadata.labels[" WH_LABEL_HOST_INDEX "]";
        return;
    }
    p->kuberay_legacy = true;
    size_t rl = replica_label ? strlen(replica_label) : 0;
    long v;
    if (p->hosts == 1) {
        p->host = 0;
    } else if (rl && p->hostname && !strncmp(p->hostname, replica_label, rl) &&
               p->hostname[rl] == '-' && wh_parse_long(p->hostname + rl + 1, &v) && v >= 0) {
        p->host = v;
        p->index_field = "spec.hostname";
    } else if (p->n_tpu && p->c[0].id_set) {
        p->host = p->c[0].id / (p->tpu7x ? (long)p->n_tpu : 1);
        p->index_field = "TPU_WORKER_ID";
    }
}

/* The slice key ("<kind>\x1f<ns>\x1f...") and name of p, and of its
 * multi-slice group ("" when none). */
struct keys {
    char slice[1600], group[1024], name[512];
    bool cut; /* a key did not fit (items_of bounds the names, so never) */
};

/* Formats one key into dst; a key that does not fit marks k->cut rather than
 * merging two slices under one truncated key. */
__attribute__((format(printf, 4, 5))) static void key_put(struct keys *k, char *dst, size_t cap,
                                                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap)
        k->cut = true;
}

static void kuberay_keys(struct dpod *p, struct keys *k)
{
    const char *cl = wh_json_str0(p->labels, WH_LABEL_CLUSTER);
    const char *g = wh_json_str0(p->labels, WH_LABEL_GROUP);
    const char *native = wh_meta_label(p->obj, WH_LABEL_REPLICA_INDEX);
    const char *legacy = wh_meta_label(p->obj, WH_LABEL_LEGACY_REPLICA);
    kuberay_host(p, legacy);
    const char *rep = "?";
    if (!p->kuberay_legacy)
        rep = native;
    else if (legacy && !strncmp(legacy, g, strlen(g)) && legacy[strlen(g)] == '-')
        rep = legacy + strlen(g) + 1;
    p->slice_no = num_or(rep, -1);
    key_put(k, k->name, sizeof(k->name), "%s/%s/%s", cl, g, rep);
    key_put(k, k->group, sizeof(k->group), "R\x1f%s\x1f%s\x1f%s", p->ns, cl, g);
    key_put(k, k->slice, sizeof(k->slice), "%s\x1f%s", k->group, rep);
}

static void lws_keys(struct dpod *p, struct keys *k)
{
    const char *lws = wh_meta_label(p->obj, K_LWS_NAME);
    lws = lws ? lws : "?";
    const char *leader = wh_meta_annotation(p->obj, K_LWS_LEADER);
    bool is_leader = !leader;
    const char *tpus = wh_meta_annotation(p->obj, K_LWS_LEADER_TPUS);
    bool leader_tpu = is_leader || (tpus && !strcmp(tpus, "true"));
    if (is_leader)
        leader = p->name;
    long w = num_or(wh_meta_label(p->obj, K_LWS_WORKER), -1);
    size_t ll = strlen(leader);
    if (w < 0 && !strcmp(p->name, leader))
        w = 0;
    else if (w < 0 && !strncmp(p->name, leader, ll) && p->name[ll] == '-')
        w = num_or(p->name + ll + 1, -1);
    p->host = w < 0 ? -1 : w - (leader_tpu ? 0 : 1);
    p->index_field = "metadata.labels[" K_LWS_WORKER "]";
    key_put(k, k->name, sizeof(k->name), "%s/%s", lws, leader);
    key_put(k, k->slice, sizeof(k->slice), "L\x1f%s\x1f%s\x1f%s", p->ns, lws, leader);
}

static void jobset_keys(struct dpod *p, struct keys *k)
{
    const char *js = lab(p, K_JS_NAME), *rj = lab(p, K_JS_RJOB), *job = lab(p, K_JS_JOB);
    rj = rj ? rj : "?";
    job = job ? job : "?";
    p->host = num_or(lab(p, K_JOB_INDEX), -1);
    p->index_field = "metadata.labels[" K_JOB_INDEX "]";
    p->slice_no = num_or(job, -1);
    p->n_slices = num_or(lab(p, K_JS_REPLICAS), -1);
    key_put(k, k->name, sizeof(k->name), "%s/%s/%s", js, rj, job);
    key_put(k, k->group, sizeof(k->group), "S\x1f%s\x1f%s\x1f%s", p->ns, js, rj);
    key_put(k, k->slice, sizeof(k->slice), "%s\x1f%s", k->group, job);
}

static void keys_of(struct dpod *p, struct keys *k)
{
    const char *created = wh_meta_label(p->obj, WH_LABEL_CREATED_BY);
    const char *job = lab(p, K_JOB_NAME);
    k->group[0] = '\0';
    p->slice_no = p->n_slices = -1;
    if (wh_meta_has_label(p->obj, WH_LABEL_CLUSTER) ||
        (created && !strcmp(created, "kuberay-operator"))) {
        p->kind = DK_KUBERAY;
        kuberay_keys(p, k);
    } else if (wh_meta_has_label(p->obj, K_LWS_NAME)) {
        p->kind = DK_LWS;
        lws_keys(p, k);
    } else if (lab(p, K_JS_NAME)) {
        p->kind = DK_JOBSET;
        jobset_keys(p, k);
    } else if (lab(p, K_JOB_INDEX) && job) {
        p->kind = DK_JOB;
        p->host = num_or(lab(p, K_JOB_INDEX), -1);
        p->index_field = "metadata.labels[" K_JOB_INDEX "]";
        key_put(k, k->name, sizeof(k->name), "%s", job);
        key_put(k, k->slice, sizeof(k->slice), "J\x1f%s\x1f%s", p->ns, job);
    } else {
        p->kind = DK_POD;
        p->host = 0;
        key_put(k, k->name, sizeof(k->name), "%s", p->name);
        key_put(k, k->slice, sizeof(k->slice), "P\x1f%s\x1f%s", p->ns, p->name);
    }
}

/* Whether a pod takes part: a live TPU pod. */
static bool live(const cJSON *pod)
{
    const char *phase = wh_json_str(wh_json_get(pod, "status"), "phase");
    return !wh_json_has(wh_json_get(pod, "metadata"), "deletionTimestamp") &&
           !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
}

static enum wh_err file_pod(struct doc *d, struct dpod *p)
{
    struct keys k = {.cut = false};
    keys_of(p, &k);
    if (k.cut)
        return wh_fail(d->errbuf, WH_ERR_INVALID,
                       "pod %.253s/%.253s: its namespace, name or slice labels are longer than "
                       "Kubernetes allows (63 characters for a namespace or label value, 253 for "
                       "a name); give the pod list as the API server returns it",
                       p->ns ? p->ns : "", p->name ? p->name : "");
    struct dslice *s = dmap_get(&d->slices, k.slice);
    enum wh_err err = WH_OK;
    if (!s) {
        if (!(s = calloc(1, sizeof(*s))) || !(s->problems = cJSON_CreateArray())) {
            free(s);
            return WH_ERR_NOMEM;
        }
        s->ns = p->ns;
        s->kind = p->kind;
        s->hosts = -1;
        snprintf(s->name, sizeof(s->name), "%s", k.name);
        if ((err = push(&d->sl, &d->n_sl, &d->cap_sl, s))) {
            cJSON_Delete(s->problems);
            free(s);
            return err;
        }
        err = dmap_put(&d->slices, k.slice, s);
        struct dgroup *g = k.group[0] ? dmap_get(&d->groups, k.group) : NULL;
        if (!err && k.group[0] && !g) {
            if (!(g = calloc(1, sizeof(*g))) || push(&d->gr, &d->n_gr, &d->cap_gr, g)) {
                free(g);
                return WH_ERR_NOMEM;
            }
            err = dmap_put(&d->groups, k.group, g);
        }
        if (!err && g)
            err = push(&g->slices, &g->n, &g->cap, s);
        s->group = g;
    }
    if (!err)
        err = push(&s->pods, &s->n, &s->cap, p);
    p->slice = s;
    if (s->hosts < 0)
        s->hosts = p->hosts;
    return err;
}

static enum wh_err read_pod(struct doc *d, const cJSON *obj, struct dpod *p, bool *tpu)
{
    const cJSON *meta = wh_json_get(obj, "metadata");
    memset(p, 0, sizeof(*p));
    p->obj = obj;
    p->spec = wh_json_get(obj, "spec");
    p->labels = wh_json_get(meta, "labels");
    p->ns = wh_json_str0(meta, "namespace");
    p->name = wh_meta_name(meta);
    p->node = wh_json_str(p->spec, "nodeName");
    p->hostname = wh_json_str(p->spec, "hostname");
    p->subdomain = wh_json_str(p->spec, "subdomain");
    const char *phase = wh_json_str(wh_json_get(obj, "status"), "phase");
    p->pending = (!phase || !strcmp(phase, "Pending")) && !(p->node && *p->node);
    p->host = -1;
    enum wh_err err = read_containers(p, d->errbuf);
    *tpu = !err && p->n_tpu > 0 && live(obj);
    if (*tpu)
        read_tpu(d, p);
    return err;
}

/* ---- rules: hosts and worker ids ---------------------------------------- */

static const char *kind_fix(enum dkind k)
{
    switch (k) {
    case DK_KUBERAY:
        return "check numOfHosts of the worker group and the KubeRay operator's events";
    case DK_JOBSET: return "set parallelism and completions of the replicated job to the hosts";
    case DK_JOB: return "set parallelism and completions of the Job to the hosts";
    case DK_LWS: return "set spec.leaderWorkerTemplate.size to the hosts";
    default: return "give each host its own workload";
    }
}

static enum wh_err place_hosts(struct dslice *s, struct dpod **at)
{
    enum wh_err err = WH_OK;
    char h[32], want[128];
    for (size_t i = 0; i < s->n && !err; i++) {
        struct dpod *p = s->pods[i];
        if (p->host < 0)
            continue;
        snprintf(h, sizeof(h), "%ld", p->host);
        snprintf(want, sizeof(want), "0..%ld", s->hosts - 1);
        if (p->host >= s->hosts) {
            struct pfields f = {"extra-host", p->name, p->index_field, h, want};
            err = problem(s, true, &f,
                          "topology %s with %ld chips per pod has %ld hosts; delete the pod, "
                          "or %s",
                          p->topology, p->chips, s->hosts, kind_fix(s->kind));
        } else if (at[p->host]) {
            snprintf(want, sizeof(want), "one pod per host (pod %.40s is host %ld)",
                     at[p->host]->name, p->host);
            struct pfields f = {"extra-host", p->name, p->index_field, h, want};
            err = problem(s, true, &f,
                          "two pods are host %ld of the slice; delete the one that should "
                          "not be there (its controller re-creates what it owns)",
                          p->host);
        } else {
            at[p->host] = p;
        }
    }
    return err;
}

static enum wh_err missing_hosts(struct dslice *s, struct dpod **at)
{
    char holds[256], want[64], list[200];
    size_t present = 0, used = 0;
    long missing = 0;
    for (long i = 0; i < s->hosts; i++) {
        if (at[i]) {
            present++;
            continue;
        }
        missing++;
        if (used < sizeof(list) - 24)
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%ld", used ? "," : "", i);
    }
    if (!missing)
        return WH_OK;
    list[used] = '\0';
    snprintf(holds, sizeof(holds), "%zu of %ld hosts (missing host %s%s)", present, s->hosts, list,
             used >= sizeof(list) - 24 ? ",..." : "");
    snprintf(want, sizeof(want), "%ld hosts", s->hosts);
    struct pfields f = {"missing-hosts", "", "pods", holds, want};
    return problem(s, true, &f,
                   "the slice starts only when every host runs: see why the controller did "
                   "not create the missing pods (kubectl describe its owner; quota, a "
                   "refused admission), or %s",
                   kind_fix(s->kind));
}

static enum wh_err container_id(struct dslice *s, struct dpod *p, unsigned ci, struct dpod **ids,
                                long n_workers)
{
    const struct dcont *c = &p->c[ci];
    char field[96], h[32], want[128];
    snprintf(field, sizeof(field), "spec.containers[%d].env[TPU_WORKER_ID]", c->index);
    snprintf(want, sizeof(want), "0..%ld", n_workers - 1);
    if (!c->id_set) {
        struct pfields f = {"worker-id-missing", p->name, field, env_of(c, "TPU_WORKER_ID"), want};
        return problem(s, true, &f,
                       "libtpu cannot tell which host this is; the pod was not admitted by "
                       "the webhook (failurePolicy Ignore, an outage, or no opt-in): delete "
                       "the pod so that it is created again through the webhook");
    }
    snprintf(h, sizeof(h), "%ld", c->id);
    if (c->id < 0 || c->id >= n_workers) {
        struct pfields f = {"worker-id-out-of-range", p->name, field, h, want};
        return problem(s, true, &f,
                       "the slice has %ld workers; delete the pod so that the "
                       "webhook gives it an id again",
                       n_workers);
    }
    if (ids[c->id]) {
        snprintf(want, sizeof(want), "an id no other pod holds (pod %.40s holds %ld)",
                 ids[c->id]->name, c->id);
        struct pfields f = {"duplicate-worker-id", p->name, field, h, want};
        return problem(s, true, &f,
                       "two workers with one id never initialise; delete the pods of the "
                       "slice (or the workload) so that they are created again together");
    }
    ids[c->id] = p;
    long w = p->host >= 0 ? wh_tpu_worker_id(p->host, p->n_tpu, ci, p->tpu7x) : c->id;
    if (w != c->id && p->host < s->hosts) {
        snprintf(want, sizeof(want), "%ld (host %ld)", w, p->host);
        struct pfields f = {"worker-id-not-host", p->name, field, h, want};
        return problem(s, true, &f,
                       "the id disagrees with the pod's host index (%s), so TPU_WORKER_HOSTNAMES "
                       "entry %ld is not this pod; delete the pod so that it is created again "
                       "through the webhook",
                       p->index_field ? p->index_field : "host", c->id);
    }
    return WH_OK;
}

/* TPU7x pods with several TPU containers: each container is a worker, one
 * id per container (docs/workloads.md). */
static bool shared_ids(const struct dpod *p)
{
    if (!p->tpu7x || p->n_tpu < 2 || !p->c[0].id_set)
        return false;
    for (unsigned i = 1; i < p->n_tpu; i++)
        if (!p->c[i].id_set || p->c[i].id != p->c[0].id)
            return false;
    return true;
}

static enum wh_err worker_ids(struct dslice *s)
{
    long per = s->n ? (s->pods[0]->tpu7x ? (long)s->pods[0]->n_tpu : 1) : 1;
    long n_workers = s->hosts * per;
    bool multi = n_workers > 1;
    struct dpod **ids = calloc((size_t)(n_workers > 0 ? n_workers : 1), sizeof(*ids));
    if (!ids)
        return WH_ERR_NOMEM;
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        struct dpod *p = s->pods[i];
        if (shared_ids(p)) {
            char field[96], h[32], want[64];
            snprintf(field, sizeof(field), "spec.containers[%d].env[TPU_WORKER_ID]", p->c[1].index);
            snprintf(h, sizeof(h), "%ld (as container %d)", p->c[0].id, p->c[0].index);
            snprintf(want, sizeof(want), "%ld",
                     wh_tpu_worker_id(p->host < 0 ? 0 : p->host, p->n_tpu, 1, true));
            struct pfields f = {"tpu7x-container-ids", p->name, field, h, want};
            err = problem(s, true, &f,
                          "on TPU7x each TPU container is a worker (host x containers + "
                          "index); delete the pod so that the webhook sets one id per "
                          "container");
            continue;
        }
        for (unsigned ci = 0; ci < p->n_tpu && !err; ci++)
            if (multi || p->c[ci].id_set)
                err = container_id(s, p, ci, ids, n_workers);
    }
    free(ids);
    return err;
}

/* Without a topology the hosts cannot be counted: said, not passed over. */
static enum wh_err topology_unknown(struct dslice *s)
{
    struct pfields f = {"topology-unknown", s->pods[0]->name,
                        "spec.nodeSelector[" WH_SEL_TOPOLOGY "]",
                        s->pods[0]->topology ? s->pods[0]->topology : "(unset)",
                        "the slice's topology, e.g. 4x4"};
    return problem(s, false, &f,
                   "neither the pod (nodeSelector or the %s annotation) nor its node says the "
                   "topology, so the hosts and worker ids were not judged; add the "
                   "nodeSelector to the pod template",
                   WH_ANN_SLICE_TOPOLOGY);
}

static enum wh_err host_rules(struct dslice *s)
{
    if (s->hosts <= 0 || s->hosts > WH_MAX_HOSTS)
        return WH_OK; /* no (believable) topology: nothing to count against */
    struct dpod **at = calloc((size_t)s->hosts, sizeof(*at));
    if (!at)
        return WH_ERR_NOMEM;
    enum wh_err err = place_hosts(s, at);
    if (!err)
        err = missing_hosts(s, at);
    if (!err)
        err = worker_ids(s);
    free(at);
    return err;
}

/* ---- rules: peer lists ---------------------------------------------------- */

/* The value most TPU containers of the slice hold for env name (NULL when
 * most hold none); *n_with how many hold it. Distinct values are few (one
 * when healthy), so counting them is linear in the containers. */
#define MODE_MAX 16
static const char *mode_env(const struct dslice *s, const char *name, size_t *n_with)
{
    const char *vals[MODE_MAX];
    size_t counts[MODE_MAX], nv = 0, nulls = 0;
    for (size_t i = 0; i < s->n; i++)
        for (unsigned ci = 0; ci < s->pods[i]->n_tpu; ci++) {
            const char *v = env_of(&s->pods[i]->c[ci], name);
            size_t k = 0;
            if (!v) {
                nulls++;
                continue;
            }
            while (k < nv && strcmp(vals[k], v))
                k++;
            if (k == nv && nv < MODE_MAX) {
                vals[nv] = v;
                counts[nv++] = 0;
            }
            if (k < nv)
                counts[k]++;
        }
    size_t best = 0;
    for (size_t k = 1; k < nv; k++)
        if (counts[k] > counts[best])
            best = k;
    if (!nv || counts[best] < nulls) {
        *n_with = nulls;
        return NULL;
    }
    *n_with = counts[best];
    return vals[best];
}

static long count_entries(const char *list)
{
    long n = *list ? 1 : 0;
    for (; *list; list++)
        n += *list == ',';
    return n;
}

/* The first entry where a and b differ, both shown; one walk over both. */
static void first_diff(const char *a, const char *b, char *ha, char *hb, size_t n)
{
    long na = count_entries(a), nb = count_entries(b);
    const char *pa = a, *pb = b;
    for (long i = 0; pa || pb; i++) {
        size_t la = pa ? strcspn(pa, ",") : 0, lb = pb ? strcspn(pb, ",") : 0;
        if (!pa || !pb || la != lb || memcmp(pa, pb, la)) {
            snprintf(ha, n, "entry %ld %.*s (%ld entries)", i, pa ? (int)(la > 200 ? 200 : la) : 6,
                     pa ? pa : "absent", na);
            snprintf(hb, n, "entry %ld %.*s (%ld entries)", i, pb ? (int)(lb > 200 ? 200 : lb) : 6,
                     pb ? pb : "absent", nb);
            return;
        }
        pa = pa[la] ? pa + la + 1 : NULL;
        pb = pb[lb] ? pb + lb + 1 : NULL;
    }
    snprintf(ha, n, "%s", a);
    snprintf(hb, n, "%s", b);
}

/* Walks a comma list: the next entry into out (cut), false at the end. */
struct walker {
    const char *p;
};
static bool next_entry(struct walker *w, char *out, size_t n)
{
    if (!w->p)
        return false;
    size_t len = strcspn(w->p, ",");
    snprintf(out, n, "%.*s", (int)len, w->p);
    w->p = w->p[len] ? w->p + len + 1 : NULL;
    return true;
}

/* Every TPU container of the slice must hold the slice's value of name. */
static enum wh_err same_everywhere(struct dslice *s, const char *name, const char *id,
                                   const char *mode, size_t n_with)
{
    enum wh_err err = WH_OK;
    size_t total = 0;
    for (size_t i = 0; i < s->n; i++)
        total += s->pods[i]->n_tpu;
    for (size_t i = 0; i < s->n && !err; i++)
        for (unsigned ci = 0; ci < s->pods[i]->n_tpu && !err; ci++) {
            struct dpod *p = s->pods[i];
            const char *v = env_of(&p->c[ci], name);
            if (v && mode && !strcmp(v, mode))
                continue;
            if (!v && !mode)
                continue;
            char field[128], h[512], e[512];
            snprintf(field, sizeof(field), "spec.containers[%d].env[%s]", p->c[ci].index, name);
            if (v && mode) {
                first_diff(v, mode, h, e, sizeof(h));
            } else {
                snprintf(h, sizeof(h), "%s", v ? v : "(unset)");
                snprintf(e, sizeof(e), "%s", mode ? mode : "(unset)");
            }
            size_t el = strlen(e);
            snprintf(e + el, sizeof(e) - el, ", as %zu of the slice's %zu containers", n_with,
                     total);
            struct pfields f = {id, p->name, field, h, e};
            err = problem(s, true, &f,
                          "every worker of a slice must see the same list; the pod was "
                          "admitted by another webhook or edited: delete it so that it is "
                          "created again through the webhook");
        }
    return err;
}

/* Worker i's DNS name: hostname.subdomain of the pod at host i. */
static void host_name(const struct dpod *p, char *out, size_t n)
{
    snprintf(out, n, "%s.%s", p->hostname ? p->hostname : "", p->subdomain ? p->subdomain : "");
}

static enum wh_err names_present(struct dslice *s)
{
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        struct dpod *p = s->pods[i];
        bool nh = !p->hostname || !*p->hostname;
        if (!nh && p->subdomain && *p->subdomain)
            continue;
        struct pfields f = {"hostname-missing", p->name, nh ? "spec.hostname" : "spec.subdomain",
                            "(unset)", "a name its peers resolve"};
        err = problem(s, true, &f,
                      "the hosts of a multi-host slice find each other by hostname.subdomain; "
                      "%s",
                      s->kind == DK_KUBERAY ? "the webhook sets both: re-create the pod through it"
                      : s->kind == DK_JOB   ? "set spec.template.spec.subdomain to a headless "
                                              "Service selecting the Job's pods"
                                            : "let the controller create the pod");
    }
    return err;
}

/* Entry i of the slice's TPU_WORKER_HOSTNAMES must be worker i's name. */
static enum wh_err hostname_entries(struct dslice *s, const char *list, struct dpod **at)
{
    long n = count_entries(list);
    char want[64], h[64];
    if (n != s->hosts) {
        snprintf(h, sizeof(h), "%ld entries", n);
        snprintf(want, sizeof(want), "%ld entries, one per host", s->hosts);
        struct pfields f = {"hostnames-entry", "", "env[TPU_WORKER_HOSTNAMES]", h, want};
        return problem(s, true, &f,
                       "the list must name every host of the slice in worker order; "
                       "re-create the slice's pods through the webhook");
    }
    struct walker w = {list};
    for (long i = 0; i < s->hosts; i++) {
        char e[256], name[600];
        if (!next_entry(&w, e, sizeof(e)))
            break;
        if (!at[i])
            continue;
        host_name(at[i], name, sizeof(name));
        if (!strcmp(e, name))
            continue;
        char field[64];
        snprintf(field, sizeof(field), "env[TPU_WORKER_HOSTNAMES] entry %ld", i);
        struct pfields f = {"hostnames-entry", at[i]->name, field, e, name};
        return problem(s, true, &f,
                       "entry %ld must be worker %ld's hostname.subdomain, or libtpu waits for "
                       "a host that is not there; re-create the slice's pods through the "
                       "webhook",
                       i, i);
    }
    return WH_OK;
}

/* TORCH_TPU_SLICEBUILDER_ADDRESSES: host-major, host i's entries name
 * worker i (docs/workloads.md). */
static enum wh_err slicebuilder_entries(struct dslice *s, const char *list, struct dpod **at)
{
    long n = count_entries(list), per = s->hosts > 0 ? n / s->hosts : 0;
    char h[300], want[600];
    if (!per || n % s->hosts) {
        snprintf(h, sizeof(h), "%ld entries", n);
        snprintf(want, sizeof(want), "a multiple of the %ld hosts", s->hosts);
        struct pfields f = {"slicebuilder-entry", "", "env[TORCH_TPU_SLICEBUILDER_ADDRESSES]", h,
                            want};
        return problem(s, true, &f,
                       "one entry per process, host by host; remove the variable "
                       "and re-create the pods through the webhook");
    }
    struct walker w = {list};
    for (long k = 0; k < n; k++) {
        const struct dpod *p = at[k / per];
        if (!next_entry(&w, h, sizeof(h)))
            break;
        if (!p)
            continue;
        char *colon = strrchr(h, ':');
        if (colon)
            *colon = '\0';
        if (s->hosts > 1)
            host_name(p, want, sizeof(want));
        else
            snprintf(want, sizeof(want), "localhost");
        if (!strcmp(h, want))
            continue;
        char field[96];
        snprintf(field, sizeof(field), "env[TORCH_TPU_SLICEBUILDER_ADDRESSES] entry %ld", k);
        struct pfields f = {"slicebuilder-entry", p->name, field, h, want};
        return problem(s, true, &f,
                       "entry %ld belongs to rank %ld, a process of worker %ld; re-create the "
                       "slice's pods through the webhook",
                       k, k, k / per);
    }
    return WH_OK;
}

static enum wh_err list_rules(struct dslice *s)
{
    if (s->hosts <= 0 || s->hosts > WH_MAX_HOSTS)
        return WH_OK;
    struct dpod **at = calloc((size_t)s->hosts, sizeof(*at));
    if (!at)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < s->n; i++)
        if (s->pods[i]->host >= 0 && s->pods[i]->host < s->hosts && !at[s->pods[i]->host])
            at[s->pods[i]->host] = s->pods[i];
    enum wh_err err = s->hosts > 1 ? names_present(s) : WH_OK;
    size_t n_with;
    const char *hosts = mode_env(s, "TPU_WORKER_HOSTNAMES", &n_with);
    if (!err && s->hosts > 1)
        err = same_everywhere(s, "TPU_WORKER_HOSTNAMES", "hostnames-differ", hosts, n_with);
    if (!err && s->hosts > 1 && hosts)
        err = hostname_entries(s, hosts, at);
    if (!err && s->hosts > 1 && !hosts) {
        struct pfields f = {"hostnames-entry", "", "env[TPU_WORKER_HOSTNAMES]", "(unset)",
                            "the slice's hostname.subdomain names in worker order"};
        err = problem(s, true, &f,
                      "libtpu finds its peers through this list; re-create the "
                      "slice's pods through the webhook");
    }
    const char *sb = mode_env(s, "TORCH_TPU_SLICEBUILDER_ADDRESSES", &n_with);
    if (!err && sb)
        err = same_everywhere(s, "TORCH_TPU_SLICEBUILDER_ADDRESSES", "slicebuilder-differ", sb,
                              n_with);
    if (!err && sb)
        err = slicebuilder_entries(s, sb, at);
    free(at);
    return err;
}

/* ---- rules: Service, DNS, nodes ------------------------------------------- */

/* The slice's subdomain (the first pod's that has one). */
static const char *subdomain_of(const struct dslice *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->pods[i]->subdomain && *s->pods[i]->subdomain)
            return s->pods[i]->subdomain;
    return NULL;
}

static const char *service_fix(const struct dslice *s, const char *sub, char fix[static 512])
{
    switch (s->kind) {
    case DK_KUBERAY:
        return "KubeRay creates the headless Service <cluster>-headless for multi-host groups: "
               "check the operator's version and events";
    case DK_JOBSET:
        return "JobSet creates it unless spec.network.enableDNSHostnames is false: remove that";
    case DK_LWS: return "LeaderWorkerSet creates it: check the controller's events";
    default:
        snprintf(fix, 512,
                 "create a Service \"%.63s\" with clusterIP: None, publishNotReadyAddresses: "
                 "true and a selector matching the pods (job-name: <job>)",
                 sub);
        return fix;
    }
}

static enum wh_err selects_pods(struct dslice *s, const cJSON *svc, const char *name)
{
    const cJSON *sel = wh_json_path(svc, "spec", "selector", NULL);
    char want[300];
    if (!cJSON_IsObject(sel) || !sel->child) {
        struct pfields f = {"service-not-selecting", "", "Service spec.selector", "(none)",
                            "the labels of the slice's pods"};
        char fix[512];
        return problem(s, true, &f, "without a selector Service \"%s\" publishes no pod names; %s",
                       name, service_fix(s, name, fix));
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct dpod *p = s->pods[i];
        for (const cJSON *kv = sel->child; kv; kv = kv->next) {
            const char *v = wh_json_str(p->labels, kv->string);
            if (cJSON_IsString(kv) && v && !strcmp(v, kv->valuestring))
                continue;
            snprintf(want, sizeof(want), "%s=%s (Service \"%s\" selects it)", kv->string,
                     cJSON_IsString(kv) ? kv->valuestring : "?", name);
            char field[160]; /* the label the selector reads, not "metadata.labels holds x" */
            snprintf(field, sizeof(field), "metadata.labels[%.120s]", kv->string);
            struct pfields f = {"service-not-selecting", p->name, field, v ? v : "(no such label)",
                                want};
            return problem(s, true, &f,
                           "the pod's name does not resolve, so its peers wait for it; make "
                           "the Service's selector match the pods");
        }
    }
    return WH_OK;
}

static enum wh_err service_rules(struct doc *d, struct dslice *s)
{
    const char *sub = subdomain_of(s);
    if (!d->have_services || s->hosts <= 1 || !sub)
        return WH_OK;
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", s->ns, sub);
    const cJSON *svc = dmap_get(&d->services, key);
    if (!svc) {
        struct pfields f = {"service-missing", s->pods[0]->name, "spec.subdomain", sub,
                            "the name of a headless Service in the namespace"};
        char fix[512];
        return problem(s, true, &f, "no Service \"%s/%s\": the hosts' names do not resolve; %s",
                       s->ns, sub, service_fix(s, sub, fix));
    }
    const char *ip = wh_json_str(wh_json_get(svc, "spec"), "clusterIP");
    enum wh_err err = WH_OK;
    if (!ip || strcmp(ip, "None")) {
        struct pfields f = {"service-not-headless", "", "Service spec.clusterIP",
                            ip ? ip : "(unset)", "None"};
        err = problem(s, true, &f,
                      "only a headless Service gives each pod a DNS name; clusterIP cannot be "
                      "changed in place: delete and re-create Service \"%s\" with clusterIP: None",
                      sub);
    }
    if (!err)
        err = selects_pods(s, svc, sub);
    const cJSON *pub = wh_json_path(svc, "spec", "publishNotReadyAddresses", NULL);
    if (!err && !cJSON_IsTrue(pub)) {
        struct pfields f = {"service-not-publishing", "", "Service spec.publishNotReadyAddresses",
                            cJSON_IsFalse(pub) ? "false" : "(unset)", "true"};
        err = problem(s, true, &f,
                      "the hosts must resolve each other before they are Ready, or they wait "
                      "for each other forever: kubectl patch service %s -p "
                      "'{\"spec\":{\"publishNotReadyAddresses\":true}}'",
                      sub);
    }
    return err;
}

/* The pods that reach p by cluster-DNS name, counted as the webhook counts
 * them (megascale.h, wh_megascale_joined_slices): the slice's hosts times
 * the slices MEGASCALE joins. The pod holds its MEGASCALE_NUM_SLICES already
 * (fill off); a pod whose labels tell no slice count (KubeRay's) is taken
 * at its declared count, several when that is a valueFrom. */
static long dns_world(const struct dslice *s, const struct dpod *p)
{
    long slices = p->n_slices;
    if (slices < 1 && p->n_tpu)
        slices = num_or(env_of(&p->c[0], "MEGASCALE_NUM_SLICES"), 2);
    if (slices < 1)
        slices = 1;
    return (s->hosts > 1 ? s->hosts : 1) *
           wh_megascale_joined_slices(wh_json_get(p->spec, "containers"), slices, false);
}

static enum wh_err dns_rules(struct dslice *s)
{
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        const struct dpod *p = s->pods[i];
        /* the peers of a multi-host slice, or a multi-slice job's coordinator */
        if (dns_world(s, p) <= 1)
            continue;
        const char *pol = wh_json_str(p->spec, "dnsPolicy");
        if (!cJSON_IsTrue(wh_json_get(p->spec, "hostNetwork")) ||
            (pol && !strcmp(pol, "ClusterFirstWithHostNet")))
            continue;
        struct pfields f = {"hostnetwork-dns", p->name, "spec.dnsPolicy",
                            pol ? pol : "(unset: ClusterFirst, which is Default on hostNetwork)",
                            "ClusterFirstWithHostNet"};
        err = problem(s, true, &f,
                      "a hostNetwork pod uses the node's resolver and cannot resolve its "
                      "peers' cluster names; set dnsPolicy: ClusterFirstWithHostNet in the pod "
                      "template");
    }
    return err;
}

/* Every label of the pod's nodeSelector on node n. */
static bool node_matches(const cJSON *selector, const struct wh_node_rec *n)
{
    for (const cJSON *kv = selector ? selector->child : NULL; kv; kv = kv->next) {
        const char *v = wh_node_label(n, kv->string);
        if (!cJSON_IsString(kv) || !v || strcmp(v, kv->valuestring))
            return false;
    }
    return true;
}

/* The nodes that may carry every pair of sel (a superset; none when a
 * value is not a string: such a selector matches no node). */
static const uint32_t *selector_candidates(const struct doc *d, const cJSON *sel, size_t *n)
{
    const char *pairs[2 * 32];
    size_t k = 0;
    *n = 0;
    for (const cJSON *kv = sel->child; kv; kv = kv->next) {
        if (!cJSON_IsString(kv))
            return NULL;
        if (k < 32) { /* the first 32 pairs narrow enough; node_matches checks all */
            pairs[2 * k] = kv->string;
            pairs[2 * k + 1] = kv->valuestring;
            k++;
        }
    }
    return wh_nodeindex_candidates(d->by_label, pairs, k, n);
}

/* A pending pod that no listed node can take. Pods of one slice share a
 * selector, so each distinct selector is tried against the nodes once. */
static enum wh_err unschedulable(struct doc *d, struct dslice *s, struct dpod *p)
{
    const cJSON *sel = wh_json_get(p->spec, "nodeSelector");
    char key[1024];
    size_t used = 0;
    for (const cJSON *kv = cJSON_IsObject(sel) ? sel->child : NULL; kv; kv = kv->next) {
        int w = snprintf(key + used, sizeof(key) - used, "%s%s=%s", used ? "," : "", kv->string,
                         cJSON_IsString(kv) ? kv->valuestring : "?");
        if (w < 0 || (size_t)w >= sizeof(key) - used)
            return WH_OK; /* too long to memoise: not judged */
        used += (size_t)w;
    }
    if (!used)
        return WH_OK;
    static const char yes[] = "y", no[] = "n";
    const char *memo = dmap_get(&d->selectors, key);
    if (!memo) {
        bool any = false;
        if (d->by_label) {
            /* The candidates of the selector's rarest pair, not every node
             * per distinct selector (issue 22). */
            size_t n = 0;
            const uint32_t *ids = selector_candidates(d, sel, &n);
            for (size_t i = 0; i < n && !any; i++)
                any = node_matches(sel, &d->nrecs[ids[i]]);
        } else {
            for (size_t i = 0; i < d->n_nrecs && !any; i++)
                any = node_matches(sel, &d->nrecs[i]);
        }
        memo = any ? yes : no;
        if (dmap_put(&d->selectors, key, (void *)memo))
            return WH_ERR_NOMEM;
    }
    if (memo == yes)
        return WH_OK;
    struct pfields f = {"unschedulable", p->name, "spec.nodeSelector", key,
                        "the labels of at least one node"};
    return problem(s, true, &f,
                   "no node has all these labels, so the pod stays Pending and the slice "
                   "never starts; create a TPU node pool with accelerator %s and topology %s "
                   "(or let the cluster autoscaler / node auto-provisioning do it), or fix "
                   "the selector",
                   p->accel ? p->accel : "?", p->topology ? p->topology : "?");
}

static enum wh_err node_label_rule(struct dslice *s, const struct dpod *p,
                                   const struct wh_node_rec *n, const char *key)
{
    const char *want = wh_node_selector(p->spec, key);
    const char *have = n ? wh_node_label(n, key) : NULL;
    if (!want || (have && !strcmp(have, want)))
        return WH_OK;
    char field[160], holds[300];
    snprintf(field, sizeof(field), "node %s label %s", p->node, key);
    snprintf(holds, sizeof(holds), "%s", n ? (have ? have : "(unset)") : "(not a TPU node)");
    struct pfields f = {"node-labels-disagree", p->name, field, holds, want};
    return problem(s, true, &f,
                   "the pod runs on a node that is not the TPU slice it asks for; delete the "
                   "pod so that it is scheduled again, and check the node pool's labels");
}

/* The pods of one slice on one node pool and placement group: report the
 * pods whose node's value differs from the first placed pod's. */
static enum wh_err same_label(struct doc *d, struct dslice *s, const char *key, const char *id)
{
    const char *first = NULL, *first_pod = NULL;
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        const struct dpod *p = s->pods[i];
        const struct wh_node_rec *n = p->node ? dmap_get(&d->nodes, p->node) : NULL;
        const char *v = n ? wh_node_label(n, key) : NULL;
        if (!v)
            continue;
        if (!first) {
            first = v;
            first_pod = p->name;
            continue;
        }
        if (!strcmp(v, first))
            continue;
        char field[160], want[300];
        snprintf(field, sizeof(field), "node %s label %s", p->node, key);
        snprintf(want, sizeof(want), "%s (as pod %.60s's node)", first, first_pod);
        struct pfields f = {id, p->name, field, v, want};
        err = problem(s, true, &f,
                      "the hosts of one slice must be one ICI domain; delete the slice's pods so "
                      "that they are scheduled together (the webhook's pod affinity keeps them on "
                      "one %s)",
                      key);
    }
    return err;
}

static enum wh_err node_rules(struct doc *d, struct dslice *s)
{
    if (!d->have_nodes)
        return WH_OK;
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        struct dpod *p = s->pods[i];
        if (p->pending) {
            err = unschedulable(d, s, p);
            continue;
        }
        if (!p->node || !*p->node)
            continue;
        const struct wh_node_rec *n = dmap_get(&d->nodes, p->node);
        err = node_label_rule(s, p, n, WH_SEL_ACCELERATOR);
        if (!err)
            err = node_label_rule(s, p, n, WH_SEL_TOPOLOGY);
    }
    if (!err && s->hosts > 1)
        err = same_label(d, s, WH_KEY_NODEPOOL, "mixed-node-pools");
    if (!err && s->hosts > 1)
        err = same_label(d, s, K_PLACEMENT, "mixed-placement-groups");
    return err;
}

/* ---- rules: several slices (MEGASCALE_*, torchrun) ------------------------- */

/* The value of name in the first TPU container of slice s's pods that has
 * one, and its pod. */
static const char *slice_value(const struct dslice *s, const char *name, const struct dpod **pod)
{
    for (size_t i = 0; i < s->n; i++) {
        const char *v = s->pods[i]->n_tpu ? env_of(&s->pods[i]->c[0], name) : NULL;
        if (v) {
            *pod = s->pods[i];
            return v;
        }
    }
    return NULL;
}

/* name must hold one value across the whole group (mode of the slices'
 * values): the slices whose value differs are told. */
static enum wh_err group_same(struct dgroup *g, const char *name, const char *id, const char *fix)
{
    const char *vals[MODE_MAX];
    size_t counts[MODE_MAX], nv = 0;
    for (size_t i = 0; i < g->n; i++) {
        const struct dpod *p;
        const char *v = slice_value(g->slices[i], name, &p);
        size_t k = 0;
        while (v && k < nv && strcmp(vals[k], v))
            k++;
        if (v && k == nv && nv < MODE_MAX) {
            vals[nv] = v;
            counts[nv++] = 0;
        }
        if (v && k < nv)
            counts[k]++;
    }
    size_t best = 0;
    for (size_t k = 1; k < nv; k++)
        if (counts[k] > counts[best])
            best = k;
    enum wh_err err = WH_OK;
    for (size_t i = 0; nv > 1 && i < g->n && !err; i++) {
        const struct dpod *p;
        const char *v = slice_value(g->slices[i], name, &p);
        if (!v || !strcmp(v, vals[best]))
            continue;
        char field[96], want[400];
        snprintf(field, sizeof(field), "spec.containers[%d].env[%s]", p->c[0].index, name);
        snprintf(want, sizeof(want), "%s (as %zu of the %zu slices)", vals[best], counts[best],
                 g->n);
        struct pfields f = {id, p->name, field, v, want};
        err = problem(g->slices[i], true, &f, "%s", fix);
    }
    return err;
}

static enum wh_err slice_ids(struct dgroup *g, long n_slices)
{
    enum wh_err err = WH_OK;
    struct dslice **by_id = calloc((size_t)n_slices, sizeof(*by_id));
    if (!by_id)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < g->n && !err; i++) {
        struct dslice *s = g->slices[i];
        const struct dpod *p;
        const char *v = slice_value(s, "MEGASCALE_SLICE_ID", &p);
        long id = num_or(v, -1);
        if (!v)
            continue;
        char field[96], want[200];
        snprintf(field, sizeof(field), "spec.containers[%d].env[MEGASCALE_SLICE_ID]", p->c[0].index);
        long want_id = p->slice_no;
        if (id >= 0 && id < n_slices && !by_id[id] && (want_id < 0 || want_id == id)) {
            by_id[id] = s;
            continue;
        }
        if (want_id >= 0)
            snprintf(want, sizeof(want), "%ld (this slice's index)", want_id);
        else
            snprintf(want, sizeof(want), "0..%ld, one per slice", n_slices - 1);
        struct pfields f = {"megascale-slice-id", p->name, field, v, want};
        err = problem(s, true, &f,
                      "each slice of a multi-slice job needs its own id below "
                      "MEGASCALE_NUM_SLICES; re-create the slice's pods through the webhook");
        for (size_t j = 0; j < s->n && !err; j++) {
            /* every pod of one slice holds the slice's id */
            const char *pv = s->pods[j]->n_tpu ? env_of(&s->pods[j]->c[0], "MEGASCALE_SLICE_ID")
                                               : NULL;
            if (pv && strcmp(pv, v)) {
                struct pfields g2 = {"megascale-slice-id", s->pods[j]->name, field, pv, v};
                err = problem(s, true, &g2, "all hosts of one slice hold one slice id");
            }
        }
    }
    free(by_id);
    return err;
}

static enum wh_err megascale_rules(struct dgroup *g)
{
    const struct dpod *p = NULL;
    const char *ns = NULL;
    for (size_t i = 0; i < g->n && !ns; i++)
        ns = slice_value(g->slices[i], "MEGASCALE_NUM_SLICES", &p);
    enum wh_err err = WH_OK;
    if (ns) {
        err = group_same(g, "MEGASCALE_NUM_SLICES", "megascale-num-slices",
                         "every slice of the job must agree on the slice count");
        long n = num_or(ns, -1), want = p->n_slices >= 0 ? p->n_slices : (long)g->n;
        if (!err && n != want) {
            char holds[64], exp[160], field[96];
            snprintf(holds, sizeof(holds), "%s", ns);
            snprintf(exp, sizeof(exp), "%ld (%s)", want,
                     p->n_slices >= 0 ? "the replicated job's replicas" : "the slices found");
            snprintf(field, sizeof(field), "spec.containers[%d].env[MEGASCALE_NUM_SLICES]",
                     p->c[0].index);
            struct pfields f = {"megascale-num-slices", p->name, field, holds, exp};
            err = problem(p->slice, true, &f,
                          "the coordinator waits for MEGASCALE_NUM_SLICES slices; make it the "
                          "number of slices (replicas) the workload runs, or create the "
                          "missing slices");
        }
        if (!err && n > 0 && n <= WH_MAX_HOSTS)
            err = slice_ids(g, n);
        if (!err)
            err = group_same(g, "MEGASCALE_COORDINATOR_ADDRESS", "megascale-coordinator",
                             "every slice must dial the same coordinator (slice 0, worker 0); "
                             "re-create the slice's pods through the webhook");
    }
    /* torchrun's world is the slices MEGASCALE joins (docs/workloads.md, "One
     * world"): without it each slice is its own (torch_rules). */
    static const char *const torch[] = {"PET_NNODES", "PET_MASTER_ADDR", "PET_MASTER_PORT"};
    for (size_t i = 0; i < 3 && !err && ns; i++)
        err = group_same(g, torch[i], "torchrun-differ",
                         "torchrun's nodes must agree on the rendezvous; re-create the pods "
                         "through the webhook");
    return err;
}

/* A slice outside any group: torchrun values identical across its pods. */
static enum wh_err torch_rules(struct dslice *s)
{
    static const char *const torch[] = {"PET_NNODES", "PET_MASTER_ADDR", "PET_MASTER_PORT"};
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < 3 && !err && s->hosts > 1; i++) {
        size_t n_with;
        const char *m = mode_env(s, torch[i], &n_with);
        if (m)
            err = same_everywhere(s, torch[i], "torchrun-differ", m, n_with);
    }
    return err;
}

/* ---- drift: what the webhook would write now -------------------------------- */

/* Every variable a mutation path writes (mutate.c, workload_env.c). */
static const char *const injected[] = {
    "TPU_WORKER_ID",
    "TPU_NAME",
    "TPU_WORKER_HOSTNAMES",
    "TPU_PROCESS_ADDRESSES",
    "TPU_PROCESS_PORT",
    "TPU_DEVICE_PLUGIN_HOST_IP",
    "TPU_DEVICE_PLUGIN_ADDR",
    "MEGASCALE_SLICE_ID",
    "MEGASCALE_COORDINATOR_ADDRESS",
    "MEGASCALE_PORT",
    "TORCH_TPU_TOPOLOGY",
    "TORCH_TPU_SLICEBUILDER_ADDRESSES",
    "PET_NNODES",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    "PET_NPROC_PER_NODE",
};
#define N_INJECTED (sizeof(injected) / sizeof(injected[0]))

/* Whether the webhook mutates the pod: every KubeRay TPU pod (a legacy
 * one only with the evidence the engine re-derives its indices from);
 * another workload's pod when it opts in by label or already carries a
 * value only this webhook writes (a namespace's opt-in label is not in a
 * pod list). */
static bool webhook_serves(const struct dpod *p)
{
    if (p->kind == DK_KUBERAY)
        return !p->kuberay_legacy || wh_meta_has_label(p->obj, WH_LABEL_LEGACY_REPLICA);
    const char *in = wh_meta_label(p->obj, "tpu-webhook/inject");
    if (in)
        return !strcmp(in, "enabled");
    for (unsigned i = 0; i < p->n_tpu; i++)
        if (env_of(&p->c[i], "PET_NNODES") || env_of(&p->c[i], "TORCH_TPU_SLICEBUILDER_ADDRESSES"))
            return true;
    return false;
}

/* The pod as its controller sent it: the injected entries of its TPU
 * containers removed (a legacy KubeRay pod keeps TPU_WORKER_ID). */
static enum wh_err as_created(const struct dpod *p, cJSON **out)
{
    cJSON *pod = cJSON_Duplicate(p->obj, 1);
    if (!pod)
        return WH_ERR_NOMEM;
    cJSON *cs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "spec"),
                                                 "containers");
    for (unsigned i = 0; i < p->n_tpu; i++) {
        cJSON *c = cJSON_GetArrayItem(cs, p->c[i].index);
        cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env");
        for (cJSON *e = cJSON_IsArray(env) ? env->child : NULL, *next; e; e = next) {
            next = e->next;
            const char *name = wh_json_str(e, "name");
            bool strip = false;
            for (size_t k = 0; name && k < N_INJECTED && !strip; k++)
                strip = !strcmp(name, injected[k]);
            if (strip && p->kuberay_legacy && !strcmp(name, "TPU_WORKER_ID"))
                strip = false;
            if (strip)
                cJSON_Delete(cJSON_DetachItemViaPointer(env, e));
        }
    }
    *out = pod;
    return WH_OK;
}

/* "NAME=value; ..." of the entries that differ, in holds / want. */
static void diff_env(const struct dcont *c, const cJSON *env2, struct wh_buf *holds,
                     struct wh_buf *want, enum wh_err *err)
{
    for (size_t k = 0; k < N_INJECTED && !*err; k++) {
        struct wh_env_lookup now;
        wh_env_lookup(env2, injected[k], &now);
        const char *has = env_of(c, injected[k]);
        if (!now.exists || (has && !strcmp(has, now.value)))
            continue;
        char a[SHOW_ROOM], b[SHOW_ROOM];
        *err = wh_buf_addf(holds, "%s%s=%s", wh_buf_len(holds) ? "; " : "", injected[k],
                           show(has, a));
        if (!*err)
            *err = wh_buf_addf(want, "%s%s=%s", wh_buf_len(want) ? "; " : "", injected[k],
                               show(now.value, b));
    }
}

static enum wh_err drift_pod(struct dslice *s, const struct dpod *p, const struct wh_state *st,
                             char *errbuf)
{
    cJSON *pod = NULL, *now = NULL;
    char *denial = NULL;
    enum wh_err err = as_created(p, &pod);
    enum wh_route route = p->kind == DK_KUBERAY ? WH_ROUTE_MUTATE : WH_ROUTE_MUTATE_WORKLOAD;
    if (!err)
        err = wh_render_admit_pod(pod, route, st, &now, &denial, errbuf);
    if (!err && denial) {
        struct pfields f = {"drift", p->name, "(the whole pod)", "admitted", "refused"};
        err = problem(s, false, &f, "the webhook would refuse this pod now: %s", denial);
    }
    const cJSON *cs = now ? wh_json_path(now, "spec", "containers", NULL) : NULL;
    for (unsigned i = 0; cs && i < p->n_tpu && !err; i++) {
        struct wh_buf holds, want;
        wh_buf_init(&holds, 64 * 1024);
        wh_buf_init(&want, 64 * 1024);
        diff_env(&p->c[i], wh_json_get(cJSON_GetArrayItem(cs, p->c[i].index), "env"), &holds, &want,
                 &err);
        if (!err && wh_buf_len(&holds)) {
            char field[64];
            snprintf(field, sizeof(field), "spec.containers[%d].env", p->c[i].index);
            struct pfields f = {"drift", p->name, field, wh_buf_ptr(&holds), wh_buf_ptr(&want)};
            err = problem(s, false, &f,
                          "the pod was admitted by another webhook (or an older version), or "
                          "edited; re-create it through this webhook to get these values");
        }
        wh_buf_free(&holds);
        wh_buf_free(&want);
    }
    free(denial);
    cJSON_Delete(pod);
    cJSON_Delete(now);
    return err;
}

/* ---- input --------------------------------------------------------------- */

/* The items of a List (or an array) whose members are objects of kind
 * (when they say their kind). */
static enum wh_err items_of(const cJSON *list, const char *what, const char *kind,
                            const cJSON **items, char *errbuf)
{
    *items = cJSON_IsArray(list) ? list : wh_json_get(list, "items");
    if (cJSON_IsObject(list) && !*items && !strcmp(wh_json_str0(list, "kind"), kind)) {
        *items = NULL; /* a single object: treated by the caller as a one-item list */
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "the %s input is one %s, not a list: give `kubectl get %s -o json` "
                       "output (a List with items)",
                       what, kind, what);
    }
    if (!cJSON_IsArray(*items))
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "the %s input is not a List: it has no \"items\" array (kind %s); give "
                       "`kubectl get %s -o json` output",
                       what, cJSON_IsObject(list) ? wh_json_str0(list, "kind") : "(not an object)",
                       what);
    int i = 0;
    for (const cJSON *it = (*items)->child; it; it = it->next, i++) {
        const char *k = wh_json_str(it, "kind");
        if (!cJSON_IsObject(it) || !cJSON_IsObject(wh_json_get(it, "metadata")))
            return wh_fail(errbuf, WH_ERR_INVALID,
                           "the %s input's items[%d] is not an object with metadata", what, i);
        if (k && strcmp(k, kind))
            return wh_fail(errbuf, WH_ERR_INVALID,
                           "the %s input's items[%d] is a %.60s, expected a %s: give the %s list "
                           "to this flag",
                           what, i, k, kind, what);
    }
    return WH_OK;
}

static enum wh_err read_nodes(struct doc *d, const cJSON *items)
{
    int n = cJSON_GetArraySize(items);
    if (n > 0 && !(d->nrecs = calloc((size_t)n, sizeof(*d->nrecs))))
        return WH_ERR_NOMEM;
    for (const cJSON *it = items->child; it; it = it->next) {
        const cJSON *meta = wh_json_get(it, "metadata"), *labels = wh_json_get(meta, "labels");
        struct wh_node_rec *r = &d->nrecs[d->n_nrecs];
        r->name = wh_json_str0(meta, "name");
        size_t nl = 0;
        for (const cJSON *kv = cJSON_IsObject(labels) ? labels->child : NULL; kv; kv = kv->next)
            nl += cJSON_IsString(kv);
        const char **kv_arr = calloc(nl ? nl * 2 : 1, sizeof(*kv_arr));
        if (!kv_arr)
            return WH_ERR_NOMEM;
        for (const cJSON *kv = cJSON_IsObject(labels) ? labels->child : NULL; kv; kv = kv->next)
            if (cJSON_IsString(kv)) {
                kv_arr[r->n_labels] = kv->string;
                kv_arr[nl + r->n_labels++] = kv->valuestring;
            }
        r->keys = kv_arr;
        r->values = kv_arr + nl;
        if (!d->by_label && !(d->by_label = wh_nodeindex_new()))
            return WH_ERR_NOMEM;
        if (wh_nodeindex_add(d->by_label, (uint32_t)d->n_nrecs, r))
            return WH_ERR_NOMEM;
        d->n_nrecs++;
        if (!dmap_get(&d->nodes, r->name) && dmap_put(&d->nodes, r->name, r))
            return WH_ERR_NOMEM;
    }
    return WH_OK;
}

static enum wh_err read_services(struct doc *d, const cJSON *items)
{
    char key[600];
    for (const cJSON *it = items->child; it; it = it->next) {
        const cJSON *meta = wh_json_get(it, "metadata");
        snprintf(key, sizeof(key), "%s/%s", wh_json_str0(meta, "namespace"),
                 wh_json_str0(meta, "name"));
        if (!dmap_get(&d->services, key) && dmap_put(&d->services, key, (void *)it))
            return WH_ERR_NOMEM;
    }
    return WH_OK;
}

static enum wh_err read_pods(struct doc *d, const cJSON *items)
{
    int n = cJSON_GetArraySize(items);
    if (n > 0 && !(d->pods = calloc((size_t)n, sizeof(*d->pods))))
        return WH_ERR_NOMEM;
    enum wh_err err = WH_OK;
    for (const cJSON *it = items->child; it && !err; it = it->next) {
        bool tpu = false;
        struct dpod *p = &d->pods[d->n_pods];
        err = read_pod(d, it, p, &tpu);
        if (!err && tpu) {
            d->n_pods++;
            err = file_pod(d, p);
        } else {
            free(p->c);
            p->c = NULL;
        }
    }
    return err;
}

/* Delete every member of obj but the keys given. */
static void keep_only(cJSON *obj, const char *const *keys, size_t n)
{
    for (cJSON *m = cJSON_IsObject(obj) ? obj->child : NULL, *next; m; m = next) {
        next = m->next;
        bool keep = false;
        for (size_t i = 0; i < n && !keep; i++)
            keep = m->string && !strcmp(m->string, keys[i]);
        if (!keep)
            cJSON_Delete(cJSON_DetachItemViaPointer(obj, m));
    }
}

bool wh_doctor_keep(enum wh_doctor_list which, cJSON *obj)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(obj) || !cJSON_IsObject(meta))
        return true;                /* wh_doctor_run names it */
    if (which == WH_DOCTOR_NODES) { /* node rules and the engine: name and labels */
        static const char *const node_meta[] = {"name", "labels"};
        static const char *const node[] = {"kind", "metadata"};
        keep_only(meta, node_meta, 2);
        keep_only(obj, node, 2);
        return true;
    }
    /* Who last wrote which field: often half an object, never read. */
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    if (which == WH_DOCTOR_SERVICES) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        return true;
    }
    struct dpod p = {.obj = obj, .spec = wh_json_get(obj, "spec")};
    char eb[WH_ERRBUF_LEN];
    enum wh_err err = read_containers(&p, eb);
    free(p.c);
    if (!err && !(p.n_tpu > 0 && live(obj)))
        return false; /* not a live TPU pod: no rule reads it (read_pods) */
    /* Of the status, rules read the phase; kubectl apply's copy of the
     * manifest is read by nothing either. */
    static const char *const status[] = {"phase"};
    keep_only(cJSON_GetObjectItemCaseSensitive(obj, "status"), status, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
                                            "kubectl.kubernetes.io/last-applied-configuration");
    return true;
}

/* ---- judging and the report ------------------------------------------------ */

static enum wh_err judge(struct doc *d, const struct wh_state *st, bool no_drift)
{
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < d->n_sl && !err; i++) {
        struct dslice *s = d->sl[i];
        err = s->hosts < 0 ? topology_unknown(s) : host_rules(s);
        if (!err)
            err = list_rules(s);
        if (!err)
            err = torch_rules(s);
        if (!err)
            err = service_rules(d, s);
        if (!err)
            err = dns_rules(s);
        if (!err)
            err = node_rules(d, s);
    }
    for (size_t i = 0; i < d->n_gr && !err; i++)
        err = megascale_rules(d->gr[i]);
    for (size_t i = 0; i < d->n_pods && !err && !no_drift; i++)
        if (webhook_serves(&d->pods[i]))
            err = drift_pod(d->pods[i].slice, &d->pods[i], st, d->errbuf);
    return err;
}

static int cmp_slice(const void *a, const void *b)
{
    const struct dslice *x = *(struct dslice *const *)a, *y = *(struct dslice *const *)b;
    int c = strcmp(x->ns, y->ns);
    if (!c)
        c = strcmp(kind_names[x->kind], kind_names[y->kind]);
    return c ? c : strcmp(x->name, y->name);
}

static enum wh_err slice_json(struct dslice *s, cJSON *arr, long counts[3])
{
    cJSON *o = cJSON_CreateObject();
    const char *status = s->errors ? "broken" : s->warnings ? "warning" : "ok";
    counts[s->errors ? 2 : s->warnings ? 1 : 0]++;
    if (!o || wh_json_add(arr, o) || wh_json_set_str(o, "namespace", s->ns) ||
        wh_json_set_str(o, "kind", kind_names[s->kind]) || wh_json_set_str(o, "name", s->name) ||
        wh_json_set(o, "hostsExpected", cJSON_CreateNumber((double)s->hosts)) ||
        wh_json_set(o, "hostsPresent", cJSON_CreateNumber((double)s->n)) ||
        wh_json_set_str(o, "status", status))
        return WH_ERR_NOMEM;
    cJSON *pr = s->problems;
    s->problems = NULL;
    return wh_json_set(o, "problems", pr);
}

static enum wh_err build_report(struct doc *d, bool no_drift, cJSON **report)
{
    if (d->n_sl)
        qsort(d->sl, d->n_sl, sizeof(*d->sl), cmp_slice);
    cJSON *r = cJSON_CreateObject(), *arr = cJSON_CreateArray(), *notes = cJSON_CreateArray();
    long counts[3] = {0, 0, 0};
    enum wh_err err = r && arr && notes ? WH_OK : WH_ERR_NOMEM;
    for (size_t i = 0; i < d->n_sl && !err; i++)
        err = slice_json(d->sl[i], arr, counts);
    if (!err && !d->have_nodes)
        err = wh_json_add(notes, cJSON_CreateString("no node list: node pools, placement, node "
                                                    "labels and unschedulable pods not judged"));
    if (!err && !d->have_services)
        err = wh_json_add(notes, cJSON_CreateString("no service list: headless Services not "
                                                    "judged"));
    if (!err && no_drift)
        err = wh_json_add(notes, cJSON_CreateString("drift not judged"));
    if (err || wh_json_set(r, "pods", cJSON_CreateNumber((double)d->n_pods)) ||
        wh_json_set(r, "ok", cJSON_CreateNumber((double)counts[0])) ||
        wh_json_set(r, "warning", cJSON_CreateNumber((double)counts[1])) ||
        wh_json_set(r, "broken", cJSON_CreateNumber((double)counts[2]))) {
        cJSON_Delete(r);
        cJSON_Delete(arr);
        cJSON_Delete(notes);
        return WH_ERR_NOMEM;
    }
    err = wh_json_set(r, "slices", arr); /* takes arr and notes in every case */
    if (wh_json_set(r, "notes", notes))
        err = WH_ERR_NOMEM;
    if (err) {
        cJSON_Delete(r);
        return err;
    }
    *report = r;
    return WH_OK;
}

static void doc_free(struct doc *d)
{
    for (size_t i = 0; i < d->n_sl; i++) {
        cJSON_Delete(d->sl[i]->problems);
        free(d->sl[i]->pods);
        free(d->sl[i]);
    }
    for (size_t i = 0; i < d->n_gr; i++) {
        free(d->gr[i]->slices);
        free(d->gr[i]);
    }
    for (size_t i = 0; i < d->n_pods; i++)
        free(d->pods[i].c);
    for (size_t i = 0; i < d->n_nrecs; i++)
        free((void *)d->nrecs[i].keys);
    free(d->nrecs);
    wh_nodeindex_free(d->by_label);
    free(d->pods);
    free(d->sl);
    free(d->gr);
    dmap_free(&d->slices);
    dmap_free(&d->groups);
    dmap_free(&d->nodes);
    dmap_free(&d->services);
    dmap_free(&d->selectors);
}

enum wh_err wh_doctor_run(const struct wh_doctor_input *in, cJSON **report, char *errbuf)
{
    struct doc d = {.errbuf = errbuf, .have_nodes = in->nodes, .have_services = in->services};
    const cJSON *pods, *nodes = NULL, *services = NULL;
    struct wh_memstate *ms = NULL;
    *report = NULL;
    enum wh_err err = items_of(in->pods, "pods", "Pod", &pods, errbuf);
    if (!err && in->nodes)
        err = items_of(in->nodes, "nodes", "Node", &nodes, errbuf);
    if (!err && in->services)
        err = items_of(in->services, "services", "Service", &services, errbuf);
    if (err)
        return err;
    if (!(ms = wh_memstate_new()))
        err = WH_ERR_NOMEM;
    if (!err && nodes)
        err = wh_memstate_add_nodes(ms, nodes, NULL, errbuf);
    if (!err && nodes)
        err = read_nodes(&d, nodes);
    if (!err && services)
        err = read_services(&d, services);
    if (!err)
        err = read_pods(&d, pods);
    struct wh_state st = ms ? wh_memstate_view(ms) : (struct wh_state){0};
    if (!err)
        err = judge(&d, &st, in->no_drift);
    if (!err)
        err = build_report(&d, in->no_drift, report);
    if (err == WH_ERR_NOMEM)
        wh_fail(errbuf, err, "out of memory");
    doc_free(&d);
    wh_memstate_free(ms);
    return err;
}

bool wh_doctor_ok(const cJSON *report)
{
    const cJSON *b = wh_json_get(report, "broken");
    return cJSON_IsNumber(b) && b->valuedouble == 0;
}

/* ---- the table ------------------------------------------------------------- */

/* Widest value of key among the slices as the table shows it (escaped),
 * between min and 60. */
static int width(const cJSON *slices, const char *key, int min)
{
    int w = min;
    for (const cJSON *s = slices ? slices->child : NULL; s; s = s->next) {
        const char *v = wh_json_str0(s, key);
        size_t l = wh_term_escaped_len(v, strlen(v));
        w = (int)l > w ? (l > 60 ? 60 : (int)l) : w;
    }
    return w;
}

/* A value from the cluster, escaped (term.h: a pod's name or env value must
 * not drive the reader's terminal), then padded to pad bytes. */
static enum wh_err cell(struct wh_buf *out, const char *v, int pad)
{
    size_t before = wh_buf_len(out);
    enum wh_err err = wh_term_escape(out, v, strlen(v));
    for (size_t l = wh_buf_len(out) - before; !err && (int)l < pad; l++)
        err = wh_buf_addc(out, ' ');
    return err;
}

/* Text around escaped values: each %s of fmt is the next value of vals. */
static enum wh_err line(struct wh_buf *out, const char *fmt, const char *const *vals)
{
    enum wh_err err = WH_OK;
    for (const char *f = fmt; *f && !err; f++) {
        if (f[0] == '%' && f[1] == 's') {
            err = cell(out, *vals++, 0);
            f++;
        } else {
            err = wh_buf_addc(out, *f);
        }
    }
    return err;
}

static enum wh_err problem_lines(const cJSON *s, struct wh_buf *out)
{
    enum wh_err err = WH_OK;
    const cJSON *pr = wh_json_get(s, "problems");
    for (const cJSON *p = pr ? pr->child : NULL; p && !err; p = p->next) {
        const char *pod = wh_json_str0(p, "pod");
        err = wh_buf_add(out,
                         strcmp(wh_json_str0(p, "severity"), "error") ? "warning: " : "error: ");
        const char *const v[] = {wh_json_str0(s, "kind"), wh_json_str0(s, "namespace"),
                                 wh_json_str0(s, "name"), wh_json_str0(p, "problem")};
        if (!err)
            err = line(out, "%s %s/%s: [%s] ", v);
        if (!err && *pod)
            err = line(out, "pod %s: ", (const char *const[]){pod});
        const char *const w[] = {wh_json_str0(p, "field"), wh_json_str0(p, "holds"),
                                 wh_json_str0(p, "expected"), wh_json_str0(p, "fix")};
        if (!err)
            err = line(out, "%s holds %s, should hold %s; fix: %s\n", w);
    }
    return err;
}

enum wh_err wh_doctor_table(const cJSON *report, struct wh_buf *out)
{
    const cJSON *slices = wh_json_get(report, "slices");
    int wn = width(slices, "namespace", 9), wk = width(slices, "kind", 4),
        ws = width(slices, "name", 5);
    enum wh_err err = wh_buf_addf(out, "%-*s  %-*s  %-*s  %-7s  %-7s  %s\n", wn, "NAMESPACE", wk,
                                  "KIND", ws, "SLICE", "HOSTS", "STATUS", "PROBLEMS");
    for (const cJSON *s = slices ? slices->child : NULL; s && !err; s = s->next) {
        char hosts[48];
        double e = cJSON_GetNumberValue(wh_json_get(s, "hostsExpected"));
        double n = cJSON_GetNumberValue(wh_json_get(s, "hostsPresent"));
        if (e < 0)
            snprintf(hosts, sizeof(hosts), "%.0f/?", n);
        else
            snprintf(hosts, sizeof(hosts), "%.0f/%.0f", n, e);
        err = cell(out, wh_json_str0(s, "namespace"), wn);
        if (!err)
            err = wh_buf_add(out, "  ");
        if (!err)
            err = cell(out, wh_json_str0(s, "kind"), wk);
        if (!err)
            err = wh_buf_add(out, "  ");
        if (!err)
            err = cell(out, wh_json_str0(s, "name"), ws);
        if (!err)
            err = wh_buf_addf(out, "  %-7s  ", hosts);
        if (!err)
            err = cell(out, wh_json_str0(s, "status"), 7);
        if (!err)
            err = wh_buf_addf(out, "  %d\n", cJSON_GetArraySize(wh_json_get(s, "problems")));
    }
    if (!err && slices && slices->child)
        err = wh_buf_addc(out, '\n');
    for (const cJSON *s = slices ? slices->child : NULL; s && !err; s = s->next)
        err = problem_lines(s, out);
    const cJSON *notes = wh_json_get(report, "notes");
    for (const cJSON *nt = notes ? notes->child : NULL; nt && !err; nt = nt->next) {
        const char *text = cJSON_GetStringValue(nt);
        err = line(out, "note: %s\n", (const char *const[]){text ? text : ""});
    }
    if (!err)
        err = wh_buf_addf(out, "%.0f TPU pods in %d slices: %.0f ok, %.0f warning, %.0f broken\n",
                          cJSON_GetNumberValue(wh_json_get(report, "pods")),
                          cJSON_GetArraySize(slices),
                          cJSON_GetNumberValue(wh_json_get(report, "ok")),
                          cJSON_GetNumberValue(wh_json_get(report, "warning")),
                          cJSON_GetNumberValue(wh_json_get(report, "broken")));
    return err;
}

/* ---- Services of a rendered Job ---------------------------------------------- */

enum wh_err wh_doctor_service_warnings(const cJSON *workload, const cJSON *pods,
                                       const cJSON *services, cJSON *warnings, char *errbuf)
{
    /* JobSet and LWS controllers create their headless Services; a Job's is
     * the user's to write. */
    if (strcmp(wh_json_str0(workload, "kind"), "Job") || !cJSON_IsArray(pods) || !services)
        return WH_OK;
    /* A Service without a namespace lands where the Job does; render puts
     * the Job in "default" then. */
    cJSON *svcs = cJSON_Duplicate(services, 1);
    bool ok = svcs != NULL;
    for (cJSON *x = svcs ? svcs->child : NULL; x && ok; x = x->next) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(x, "metadata");
        if (cJSON_IsObject(meta) && !*wh_json_str0(meta, "namespace"))
            ok = !wh_json_set_str(meta, "namespace", "default");
    }
    struct wh_doctor_input in = {.pods = pods, .services = svcs};
    cJSON *report = NULL;
    enum wh_err err = ok ? wh_doctor_run(&in, &report, errbuf) : WH_ERR_NOMEM;
    cJSON_Delete(svcs);
    if (err)
        return err == WH_ERR_NOMEM ? wh_fail(errbuf, err, "out of memory") : err;
    bool none = !services->child;
    const cJSON *slices = wh_json_get(report, "slices");
    for (const cJSON *s = slices ? slices->child : NULL; s && !err; s = s->next) {
        const cJSON *pr = wh_json_get(s, "problems");
        for (const cJSON *p = pr ? pr->child : NULL; p && !err; p = p->next) {
            const char *id = wh_json_str0(p, "problem");
            if (strncmp(id, "service-", 8))
                continue;
            char text[1400];
            snprintf(text, sizeof(text), "%s[%s] %s holds %s, should hold %s; %s",
                     none ? "no Service in the input: " : "", id, wh_json_str0(p, "field"),
                     wh_json_str0(p, "holds"), wh_json_str0(p, "expected"), wh_json_str0(p, "fix"));
            err = wh_json_add(warnings, cJSON_CreateString(text));
        }
    }
    cJSON_Delete(report);
    if (err)
        wh_fail(errbuf, err, "out of memory");
    return err;
}

enum wh_err wh_doctor_collect_services(const cJSON *docs, cJSON **out)
{
    cJSON *arr = cJSON_CreateArray();
    bool ok = arr != NULL;
    for (const cJSON *d = docs ? docs->child : NULL; d && ok; d = d->next) {
        const cJSON *list = wh_json_get(d, "items");
        bool is_list = !strcmp(wh_json_str0(d, "kind"), "List") && cJSON_IsArray(list);
        for (const cJSON *x = is_list ? list->child : d; x && ok; x = is_list ? x->next : NULL)
            if (!strcmp(wh_json_str0(x, "kind"), "Service"))
                ok = cJSON_AddItemReferenceToArray(arr, (cJSON *)x);
    }
    if (!ok) {
        cJSON_Delete(arr);
        arr = NULL;
    }
    *out = arr;
    return ok ? WH_OK : WH_ERR_NOMEM;
}
