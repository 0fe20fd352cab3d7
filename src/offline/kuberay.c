/* kuberay.c: the worker pods KubeRay would create (docs/kuberay-pods.md §4).
 *
 * Each pod is built in the order of the recipe: generateName, namespace,
 * labels, annotations and ownerReference here; the spec (wait-gcs-ready,
 * rayStartParams defaults, metrics port, restartPolicy, /dev/shm,
 * command/args, env, probes) in kuberay_spec.c; the facts the pods of one
 * cluster share in kuberay_cluster.c. */
#include "wh/kuberay.h"

#include <ctype.h>  /* tolower, ispunct */
#include <stdint.h> /* INT32_MAX */
#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, memset */

#include "wh/json.h"            /* wh_json_* */
#include "wh/kinds.h"           /* wh_kinds, wh_kind_find, wh_kind_list_by_pods */
#include "wh/kuberay_cluster.h" /* wh_kr_cluster, wh_kr_at_least, wh_kr_invent_suffix */
#include "wh/kuberay_json.h"    /* wh_kr_put, wh_kr_child, wh_kr_sort_object */
#include "wh/kuberay_spec.h"    /* wh_kr_build_spec */

/* ---- metadata ---------------------------------------------------------- */

static enum wh_err generate_name(const struct wh_kr_cluster *c, const char *group, cJSON *meta)
{
    char name[512];
    if (wh_kr_at_least(c->opts, 1, 2)) {
        char prefix[256];
        snprintf(prefix, sizeof(prefix), "%s-%s", c->name, group);
        prefix[50 < strlen(prefix) ? 50 : strlen(prefix)] = '\0';
        snprintf(name, sizeof(name), "%s-worker-", prefix);
    } else {
        /* CheckName keeps the last 50 bytes of the whole string; cutting
         * name and group to their last 50 first keeps those bytes and lets
         * no fixed buffer truncate the end. */
        char raw[128];
        size_t nn = strlen(c->name), gn = strlen(group);
        snprintf(raw, sizeof(raw), "%s-worker-%s-", c->name + (nn > 50 ? nn - 50 : 0),
                 group + (gn > 50 ? gn - 50 : 0));
        wh_kr_check_name(raw, name, sizeof(name));
    }
    for (char *q = name; *q; q++)
        *q = (char)tolower((unsigned char)*q);
    return wh_kr_put_str(meta, "generateName", name);
}

struct slot {
    long replica; /* -1 on the legacy path: KubeRay records none */
    long host;
    const char *replica_name;
};

static enum wh_err copy_labels(cJSON *dst, const cJSON *src, bool protect)
{
    for (const cJSON *l = cJSON_IsObject(src) ? src->child : NULL; l; l = l->next) {
        if (protect && (!strcmp(l->string, "ray.io/node-type") ||
                        !strcmp(l->string, "ray.io/group") || !strcmp(l->string, "ray.io/cluster")))
            continue;
        WH_TRY(wh_kr_put(dst, l->string, cJSON_Duplicate(l, 1)));
    }
    return WH_OK;
}

static enum wh_err labels(const struct wh_kr_cluster *c, const cJSON *group, const char *gname,
                          const struct slot *s, long hosts, cJSON *meta)
{
    cJSON *l = wh_kr_child(meta, "labels", false);
    if (!l)
        return WH_ERR_NOMEM;
    /* CheckLabel keeps the last 63 bytes of the whole "<cluster>-worker",
     * so cut the name before formatting (a long name must still end in
     * "-worker"). */
    char ident[64];
    size_t n = strlen(c->name) + sizeof("-worker") - 1;
    snprintf(ident, sizeof(ident), "%s-worker", c->name + (n > 63 ? n - 63 : 0));
    if (ispunct((unsigned char)ident[0]))
        ident[0] = 'r';
    WH_TRY(wh_kr_put_str(l, "ray.io/is-ray-node", "yes"));
    WH_TRY(wh_kr_put_str(l, "ray.io/cluster", c->name));
    WH_TRY(wh_kr_put_str(l, "ray.io/node-type", "worker"));
    WH_TRY(wh_kr_put_str(l, "ray.io/group", gname));
    WH_TRY(wh_kr_put_str(l, "ray.io/identifier", ident));
    WH_TRY(wh_kr_put_str(l, "app.kubernetes.io/name", "kuberay"));
    WH_TRY(wh_kr_put_str(l, "app.kubernetes.io/created-by", "kuberay-operator"));
    /* User labels go on top, the group's top-level labels (1.5+) winning. */
    WH_TRY(copy_labels(l, wh_json_path(group, "template", "metadata", "labels", NULL), true));
    if (wh_kr_at_least(c->opts, 1, 5))
        WH_TRY(copy_labels(l, wh_json_get(group, "labels"), true));
    if (s->replica >= 0) {
        char num[32];
        snprintf(num, sizeof(num), "%ld", s->replica);
        WH_TRY(wh_kr_put_str(l, "ray.io/worker-group-replica-index", num));
        if (hosts > 1) {
            WH_TRY(wh_kr_put_str(l, "ray.io/worker-group-replica-name", s->replica_name));
            snprintf(num, sizeof(num), "%ld", s->host);
            WH_TRY(wh_kr_put_str(l, "ray.io/replica-host-index", num));
        }
    }
    if (c->from_rayservice)
        WH_TRY(wh_kr_put_str(l, "ray.io/serve", "true"));
    return wh_kr_sort_object(l);
}

static enum wh_err annotations(const struct wh_kr_cluster *c, const cJSON *group, cJSON *meta)
{
    const cJSON *src = wh_json_path(group, "template", "metadata", "annotations", NULL);
    if (!c->overwrite_cmd && !(cJSON_IsObject(src) && src->child))
        return WH_OK; /* an empty map is omitted from the JSON */
    cJSON *a = wh_kr_child(meta, "annotations", false);
    if (!a)
        return WH_ERR_NOMEM;
    for (const cJSON *x = cJSON_IsObject(src) ? src->child : NULL; x; x = x->next)
        WH_TRY(wh_kr_put(a, x->string, cJSON_Duplicate(x, 1)));
    if (c->overwrite_cmd)
        WH_TRY(wh_kr_put_str(a, "ray.io/overwrite-container-cmd", "true"));
    return wh_kr_sort_object(a);
}

static enum wh_err owner_ref(const struct wh_kr_cluster *c, cJSON *meta)
{
    cJSON *refs = wh_kr_child(meta, "ownerReferences", true), *r = cJSON_CreateObject();
    if (!refs || !r) {
        cJSON_Delete(r);
        return WH_ERR_NOMEM;
    }
    WH_TRY(wh_json_add(refs, r));
    WH_TRY(wh_kr_put_str(r, "apiVersion", wh_kinds[WH_ROW_RAYCLUSTER].api_version));
    WH_TRY(wh_kr_put_str(r, "kind", wh_kinds[WH_ROW_RAYCLUSTER].kind));
    WH_TRY(wh_kr_put_str(r, "name", c->name));
    const char *uid = wh_json_str(wh_json_get(c->cluster, "metadata"), "uid");
    if (uid && uid[0])
        WH_TRY(wh_kr_put_str(r, "uid", uid));
    WH_TRY(wh_kr_put(r, "controller", cJSON_CreateTrue()));
    return wh_kr_put(r, "blockOwnerDeletion", cJSON_CreateTrue());
}

/* ---- one pod ------------------------------------------------------------ */

static enum wh_err build_pod(const struct wh_kr_cluster *c, const cJSON *group, const char *gname,
                             const struct slot *s, long hosts, cJSON *pods)
{
    cJSON *pod = cJSON_CreateObject();
    if (!pod)
        return WH_ERR_NOMEM;
    WH_TRY(wh_json_add(pods, pod));
    WH_TRY(wh_kr_put_str(pod, "apiVersion", wh_kinds[WH_ROW_POD].api_version));
    WH_TRY(wh_kr_put_str(pod, "kind", wh_kinds[WH_ROW_POD].kind));
    cJSON *meta = wh_kr_child(pod, "metadata", false);
    if (!meta)
        return WH_ERR_NOMEM;
    WH_TRY(generate_name(c, gname, meta));
    WH_TRY(wh_kr_put_str(meta, "namespace", c->ns));
    WH_TRY(labels(c, group, gname, s, hosts, meta));
    WH_TRY(annotations(c, group, meta));
    WH_TRY(owner_ref(c, meta));
    cJSON *spec = cJSON_Duplicate(wh_json_path(group, "template", "spec", NULL), 1);
    if (!spec)
        return WH_ERR_NOMEM;
    WH_TRY(wh_json_set(pod, "spec", spec));
    return wh_kr_build_spec(c, group, spec);
}

static enum wh_err check_group(const struct wh_kr_cluster *c, const cJSON *group, int i,
                               const char **gname)
{
    *gname = wh_json_str(group, "groupName");
    if (!cJSON_IsObject(group) || !*gname || !(*gname)[0])
        return wh_fail(c->errbuf, WH_ERR_INVALID,
                       "RayCluster %s: spec.workerGroupSpecs[%d].groupName is missing; every "
                       "worker group needs a name",
                       c->name, i);
    const cJSON *containers = wh_json_path(group, "template", "spec", "containers", NULL);
    if (!cJSON_IsArray(containers) || !cJSON_IsObject(containers->child))
        return wh_fail(c->errbuf, WH_ERR_INVALID,
                       "RayCluster %s: worker group %s has no "
                       "template.spec.containers; KubeRay needs the Ray container first",
                       c->name, *gname);
    /* KubeRay refuses such a group; rendering it would build minReplicas
     * pods (up to the render limit) that KubeRay never creates. */
    const cJSON *min = wh_json_get(group, "minReplicas"), *max = wh_json_get(group, "maxReplicas");
    if (cJSON_IsNumber(min) && cJSON_IsNumber(max) && min->valuedouble > max->valuedouble)
        return wh_fail(c->errbuf, WH_ERR_INVALID,
                       "RayCluster %s: worker group %s has minReplicas %.0f greater than "
                       "maxReplicas %.0f, which KubeRay refuses; lower minReplicas or raise "
                       "maxReplicas",
                       c->name, *gname, min->valuedouble, max->valuedouble);
    return WH_OK;
}

static enum wh_err group_pods(const struct wh_kr_cluster *c, const cJSON *group, const char *gname,
                              cJSON *pods)
{
    long replicas, hosts;
    wh_kuberay_group_size(group, &replicas, &hosts);
    bool native = c->opts->multihost_indexing;
    for (long r = 0; r < replicas; r++) {
        char rname[320], sfx[6], seed[300];
        snprintf(seed, sizeof(seed), "%s/%s", c->name, gname);
        wh_kr_invent_suffix(seed, r, sfx);
        snprintf(rname, sizeof(rname), "%s-%s", gname, sfx);
        for (long h = 0; h < hosts; h++) {
            struct slot s = {native ? r : -1, h, rname};
            WH_TRY(build_pod(c, group, gname, &s, hosts, pods));
        }
    }
    return WH_OK;
}

/* ---- API ------------------------------------------------------------- */

void wh_kuberay_opts_init(struct wh_kuberay_opts *o, int major, int minor)
{
    memset(o, 0, sizeof(*o));
    o->major = major;
    o->minor = minor;
    o->multihost_indexing = wh_kr_at_least(o, 1, 6);
}

enum wh_err wh_kuberay_parse_version(const char *s, int *major, int *minor, char *errbuf)
{
    const char *p = s && (s[0] == 'v' || s[0] == 'V') ? s + 1 : s;
    int a = -1, b = -1;
    bool parsed = p && wh_kr_take_int(&p, &a) && *p == '.' && (p++, wh_kr_take_int(&p, &b));
    if (!parsed || a != 1 || b < 0 || b > 99 || (*p != '\0' && *p != '.'))
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "KubeRay version '%s' is not of the form 1.MINOR (e.g. 1.6 or v1.7.0)",
                       s ? s : "");
    *major = a;
    *minor = b;
    return WH_OK;
}

void wh_kuberay_group_size(const cJSON *group, long *replicas, long *hosts)
{
    const cJSON *min = wh_json_get(group, "minReplicas"), *max = wh_json_get(group, "maxReplicas");
    const cJSON *rep = wh_json_get(group, "replicas"), *noh = wh_json_get(group, "numOfHosts");
    double lo = cJSON_IsNumber(min) ? min->valuedouble : 0;
    double hi = cJSON_IsNumber(max) ? max->valuedouble : (double)INT32_MAX;
    double r = cJSON_IsNumber(rep) ? rep->valuedouble : lo;
    if (r > hi)
        r = hi;
    if (r < lo)
        r = lo;
    if (r < 0 || cJSON_IsTrue(wh_json_get(group, "suspend")))
        r = 0;
    *replicas = r > (double)INT32_MAX ? INT32_MAX : (long)r;
    double h = cJSON_IsNumber(noh) ? noh->valuedouble : 1;
    *hosts = h < 1 ? 1 : h > (double)INT32_MAX ? INT32_MAX : (long)h;
}

enum wh_err wh_kuberay_worker_pods(const cJSON *cluster, const struct wh_kuberay_opts *opts,
                                   cJSON **pods, char *errbuf)
{
    struct wh_kr_cluster c;
    *pods = NULL;
    WH_TRY(wh_kr_cluster_init(&c, cluster, opts, errbuf));
    const cJSON *groups = wh_json_path(cluster, "spec", "workerGroupSpecs", NULL);
    if (groups && !cJSON_IsArray(groups))
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "RayCluster %s: spec.workerGroupSpecs must be a list", c.name);
    long total = 0;
    int i = 0;
    for (const cJSON *g = groups ? groups->child : NULL; g; g = g->next, i++) {
        const char *gname;
        WH_TRY(check_group(&c, g, i, &gname));
        long r, h;
        wh_kuberay_group_size(g, &r, &h);
        if ((double)r * (double)h > (double)(WH_KUBERAY_MAX_PODS - total))
            return wh_fail(errbuf, WH_ERR_TOOBIG,
                           "RayCluster %s: worker group %s needs %ld x %ld pods, over the "
                           "render limit of %ld pods in all",
                           c.name, gname, r, h, WH_KUBERAY_MAX_PODS);
        total += r * h;
    }
    cJSON *out = cJSON_CreateArray();
    if (!out)
        return WH_ERR_NOMEM;
    enum wh_err err = WH_OK;
    for (const cJSON *g = groups ? groups->child : NULL; !err && g; g = g->next)
        err = group_pods(&c, g, wh_json_str(g, "groupName"), out);
    if (err) {
        cJSON_Delete(out);
        if (err == WH_ERR_NOMEM)
            wh_fail(errbuf, err, "out of memory building the pods of RayCluster %s", c.name);
        return err;
    }
    *pods = out;
    return WH_OK;
}

enum wh_err wh_kuberay_apply_defaults(cJSON *cluster)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(cluster, "metadata");
    if (cJSON_IsObject(meta) && !wh_json_str(meta, "namespace"))
        WH_TRY(wh_kr_put_str(meta, "namespace", "default"));
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(cluster, "spec");
    cJSON *groups = cJSON_GetObjectItemCaseSensitive(spec, "workerGroupSpecs");
    for (cJSON *g = cJSON_IsArray(groups) ? groups->child : NULL; g; g = g->next)
        if (cJSON_IsObject(g) && !wh_json_has(g, "numOfHosts"))
            WH_TRY(wh_kr_put(g, "numOfHosts", cJSON_CreateNumber(1)));
    return WH_OK;
}

static enum wh_err wrap_cluster(const cJSON *obj, const char *kind, const cJSON *cspec,
                                cJSON **cluster)
{
    const cJSON *meta = wh_json_get(obj, "metadata");
    const char *name = wh_json_str0(meta, "name");
    cJSON *c = cJSON_CreateObject(), *m = cJSON_CreateObject(), *l = cJSON_CreateObject();
    if (!c || !m || !l) {
        cJSON_Delete(c);
        cJSON_Delete(m);
        cJSON_Delete(l);
        return WH_ERR_NOMEM;
    }
    *cluster = c;
    if (wh_json_set(c, "metadata", m)) {
        cJSON_Delete(l);
        return WH_ERR_NOMEM;
    }
    WH_TRY(wh_kr_put_str(c, "apiVersion", wh_kinds[WH_ROW_RAYCLUSTER].api_version));
    WH_TRY(wh_kr_put_str(c, "kind", wh_kinds[WH_ROW_RAYCLUSTER].kind));
    char sfx[6], cname[320];
    wh_kr_invent_suffix(name, 0, sfx);
    snprintf(cname, sizeof(cname), "%s-%s", name, sfx);
    WH_TRY(wh_kr_put_str(m, "name", cname));
    if (wh_json_str(meta, "namespace"))
        WH_TRY(wh_kr_put_str(m, "namespace", wh_json_str(meta, "namespace")));
    WH_TRY(wh_json_set(m, "labels", l));
    WH_TRY(wh_kr_put_str(l, "ray.io/originated-from-crd", kind));
    WH_TRY(wh_kr_put_str(l, "ray.io/originated-from-cr-name", name));
    return wh_json_set(c, "spec", cJSON_Duplicate(cspec, 1));
}

enum wh_err wh_kuberay_cluster_of(const cJSON *obj, cJSON **cluster, char *errbuf)
{
    *cluster = NULL;
    const char *kind = wh_json_str(obj, "kind");
    const char *name = wh_json_str0(wh_json_get(obj, "metadata"), "name");
    const char *field = NULL;
    char kinds[96]; /* the KubeRay kinds, for messages */
    wh_kind_list_by_pods(kinds, sizeof(kinds), WH_PODS_BIT(WH_PODS_KUBERAY), "or");
    if (!kind)
        return wh_fail(errbuf, WH_ERR_KIND, "the object has no kind; expected %s", kinds);
    /* A KubeRay kind's row says where its RayCluster spec sits. */
    const struct wh_kind_def *def = wh_kind_find(kind);
    if (def && def->pods == WH_PODS_KUBERAY && !name[0]) /* (render names a generateName) */
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "%s has neither metadata.name nor metadata.generateName, which the API "
                       "server refuses; give it one (KubeRay names its pods after it)",
                       kind);
    if (def && def->review == WH_KIND_RAYCLUSTER) {
        *cluster = cJSON_Duplicate(obj, 1);
        return *cluster ? WH_OK : WH_ERR_NOMEM;
    }
    if (def && def->pods == WH_PODS_KUBERAY && def->cluster_spec && strchr(def->cluster_spec, '.'))
        field = strchr(def->cluster_spec, '.') + 1; /* "spec.rayClusterSpec" */
    else
        return wh_fail(errbuf, WH_ERR_KIND, "%s %s is not a %s", kind, name, kinds);
    const cJSON *cspec = wh_json_path(obj, "spec", field, NULL);
    if (!cJSON_IsObject(cspec)) {
        bool selector = wh_json_has(wh_json_get(obj, "spec"), "clusterSelector");
        return wh_fail(errbuf, WH_ERR_INVALID, "%s %s has no spec.%s%s", kind, name, field,
                       selector ? " (it runs on an existing cluster chosen by "
                                  "spec.clusterSelector; render that RayCluster instead)"
                                : "");
    }
    enum wh_err err = wrap_cluster(obj, kind, cspec, cluster);
    if (err) {
        cJSON_Delete(*cluster);
        *cluster = NULL;
    }
    return err;
}
