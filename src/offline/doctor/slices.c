/* slices.c: a pod read into the model, and filed under its slice and its
 * multi-slice group (doctor_impl.h): which workload made it, its host
 * index, its slice's key and name. */
#include "doctor_impl.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* snprintf, vsnprintf */
#include <stdlib.h> /* calloc, free, realloc */
#include <string.h> /* memset, strcmp, strlen, strncmp */

#include "wh/topology.h"     /* wh_topology_*, wh_is_tpu7x */
#include "wh/tpuenv.h"       /* wh_tpu_containers_* */
#include "wh/workload_pod.h" /* wh_wl_classify, wh_wl_job_name, wh_wl_meta_value, WH_KEY_* */

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

enum wh_err wh_dr_read_containers(struct dpod *p, char *errbuf)
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
    const struct wh_node_rec *nr = p->node ? wh_dr_map_get(&d->nodes, p->node) : NULL;
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
    const char *lws = wh_meta_label(p->obj, WH_KEY_LWS_NAME);
    lws = lws ? lws : "?";
    const char *leader = wh_meta_annotation(p->obj, WH_KEY_LWS_LEADER_NAME);
    bool is_leader = !leader;
    const char *tpus = wh_meta_annotation(p->obj, WH_KEY_LWS_LEADER_TPUS);
    bool leader_tpu = is_leader || (tpus && !strcmp(tpus, "true"));
    if (is_leader)
        leader = p->name;
    long w = num_or(wh_meta_label(p->obj, WH_KEY_LWS_WORKER_INDEX), -1);
    size_t ll = strlen(leader);
    if (w < 0 && !strcmp(p->name, leader))
        w = 0;
    else if (w < 0 && !strncmp(p->name, leader, ll) && p->name[ll] == '-')
        w = num_or(p->name + ll + 1, -1);
    p->host = w < 0 ? -1 : w - (leader_tpu ? 0 : 1);
    p->index_field = "metadata.labels[" WH_KEY_LWS_WORKER_INDEX "]";
    key_put(k, k->name, sizeof(k->name), "%s/%s", lws, leader);
    key_put(k, k->slice, sizeof(k->slice), "L\x1f%s\x1f%s\x1f%s", p->ns, lws, leader);
}

static void jobset_keys(struct dpod *p, struct keys *k)
{
    const char *js = lab(p, WH_KEY_JS_NAME), *rj = lab(p, WH_KEY_JS_RJOB),
               *job = lab(p, WH_KEY_JS_JOB_INDEX);
    rj = rj ? rj : "?";
    job = job ? job : "?";
    p->host = num_or(wh_wl_meta_value(p->obj, WH_KEY_JOB_INDEX, true), -1);
    p->index_field = "metadata.labels[" WH_KEY_JOB_INDEX "]";
    p->slice_no = num_or(job, -1);
    p->n_slices = num_or(lab(p, WH_KEY_JS_RJOB_REPLICAS), -1);
    key_put(k, k->name, sizeof(k->name), "%s/%s/%s", js, rj, job);
    key_put(k, k->group, sizeof(k->group), "S\x1f%s\x1f%s\x1f%s", p->ns, js, rj);
    key_put(k, k->slice, sizeof(k->slice), "%s\x1f%s", k->group, job);
}

/* The slice of p, as the admission path classifies the pod
 * (wh_wl_classify) and names its peers: an Indexed Job's pods by the
 * Job's name (wh_wl_job_name), so a pod with none is a slice of its own. */
static void keys_of(struct dpod *p, struct keys *k)
{
    k->group[0] = '\0';
    p->slice_no = p->n_slices = -1;
    const char *job = NULL;
    switch (wh_wl_classify(p->obj)) {
    case WH_WL_KUBERAY:
        p->kind = WH_ROW_RAYCLUSTER;
        kuberay_keys(p, k);
        return;
    case WH_WL_LWS:
        p->kind = WH_ROW_LWS;
        lws_keys(p, k);
        return;
    case WH_WL_JOBSET:
        p->kind = WH_ROW_JOBSET;
        jobset_keys(p, k);
        return;
    case WH_WL_INDEXED_JOB: job = wh_wl_job_name(p->obj); break;
    case WH_WL_SINGLE: break;
    }
    if (job && *job) {
        p->kind = WH_ROW_JOB;
        p->host = num_or(wh_wl_meta_value(p->obj, WH_KEY_JOB_INDEX, true), -1);
        p->index_field = "metadata.labels[" WH_KEY_JOB_INDEX "]";
        key_put(k, k->name, sizeof(k->name), "%s", job);
        key_put(k, k->slice, sizeof(k->slice), "J\x1f%s\x1f%s", p->ns, job);
    } else {
        p->kind = WH_ROW_POD;
        p->host = 0;
        key_put(k, k->name, sizeof(k->name), "%s", p->name);
        key_put(k, k->slice, sizeof(k->slice), "P\x1f%s\x1f%s", p->ns, p->name);
    }
}

/* Whether a pod takes part: a live TPU pod. */
bool wh_dr_live(const cJSON *pod)
{
    const char *phase = wh_json_str(wh_json_get(pod, "status"), "phase");
    return !wh_json_has(wh_json_get(pod, "metadata"), "deletionTimestamp") &&
           !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
}

enum wh_err wh_dr_file_pod(struct doc *d, struct dpod *p)
{
    struct keys k = {.cut = false};
    keys_of(p, &k);
    if (k.cut)
        return wh_fail(d->errbuf, WH_ERR_INVALID,
                       "pod %.253s/%.253s: its namespace, name or slice labels are longer than "
                       "Kubernetes allows (63 characters for a namespace or label value, 253 for "
                       "a name); give the pod list as the API server returns it",
                       p->ns ? p->ns : "", p->name ? p->name : "");
    struct dslice *s = wh_dr_map_get(&d->slices, k.slice);
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
        err = wh_dr_map_put(&d->slices, k.slice, s);
        struct dgroup *g = k.group[0] ? wh_dr_map_get(&d->groups, k.group) : NULL;
        if (!err && k.group[0] && !g) {
            if (!(g = calloc(1, sizeof(*g))) || push(&d->gr, &d->n_gr, &d->cap_gr, g)) {
                free(g);
                return WH_ERR_NOMEM;
            }
            err = wh_dr_map_put(&d->groups, k.group, g);
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

enum wh_err wh_dr_read_pod(struct doc *d, const cJSON *obj, struct dpod *p, bool *tpu)
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
    enum wh_err err = wh_dr_read_containers(p, d->errbuf);
    *tpu = !err && p->n_tpu > 0 && wh_dr_live(obj);
    if (*tpu)
        read_tpu(d, p);
    return err;
}
