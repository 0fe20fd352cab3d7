/* kuberay.c: the worker pods KubeRay would create (docs/kuberay-pods.md §4).
 *
 * Each pod is built in the order of the recipe: generateName, namespace,
 * labels, wait-gcs-ready, rayStartParams defaults, metrics port,
 * restartPolicy, /dev/shm, command/args, init-container env, Ray-container
 * env, probes, ownerReference. The functions below follow those steps. */
#include "wh/kuberay.h"

#include <ctype.h>  /* tolower, ispunct, isdigit */
#include <errno.h>  /* errno, ERANGE */
#include <limits.h> /* INT_MIN, INT_MAX, INT32_MAX */
#include <math.h>   /* ceil */
#include <stdint.h> /* uint32_t */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* qsort, strtol */
#include <string.h> /* strcmp, strlen */
#include <strings.h> /* strcasecmp */

#include "wh/buf.h"      /* wh_buf, for the ray start command */
#include "wh/json.h"     /* wh_json_* */
#include "wh/quantity.h" /* wh_quantity_ceil */
#include "wh/mem.h" /* wh_malloc, wh_free */


static const char name_alphabet[] = "bcdfghjklmnpqrstvwxz2456789";

#define DEFAULT_AGENT_PORT "52365"
#define LEGACY_PROBE_CMD                                                                       \
    "wget --tries 1 -T 2 -q -O- http://localhost:%s/api/local_raylet_healthz | grep success"

struct ctx {
    const cJSON *cluster;
    const struct wh_kuberay_opts *opts;
    const char *name;
    const char *ns;
    char head_svc[256];
    char fqdn[512];
    char port[32];
    bool from_rayservice;
    bool overwrite_cmd;
    bool ft;
    bool autoscaler_v2;
    bool token_auth;
    bool new_ray; /* rayVersion >= 2.53.0 */
    char *errbuf;
};

/* ---- small helpers ---------------------------------------------------- */

static bool at_least(const struct wh_kuberay_opts *o, int major, int minor)
{
    return o->major > major || (o->major == major && o->minor >= minor);
}

/* Five characters from KubeRay's alphabet, derived from text (FNV-1a). */
static void invent_suffix(const char *text, long salt, char out[6])
{
    uint32_t h = 2166136261u;
    for (const char *p = text; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ (uint32_t)salt) * 16777619u;
    for (int i = 0; i < 5; i++) {
        out[i] = name_alphabet[h % (sizeof(name_alphabet) - 1)];
        h = h / (sizeof(name_alphabet) - 1) + (uint32_t)(i + 1) * 2654435761u;
    }
    out[5] = '\0';
}

/* Replace or add obj[key]; takes ownership of item. */
static enum wh_err put(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return WH_ERR_NOMEM;
    if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
        if (!cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item)) {
            cJSON_Delete(item);
            return WH_ERR_NOMEM;
        }
        return WH_OK;
    }
    return wh_json_set(obj, key, item);
}

static enum wh_err put_str(cJSON *obj, const char *key, const char *value)
{
    return put(obj, key, cJSON_CreateString(value));
}

/* obj[key] as an object/array, created when absent or of another type. */
static cJSON *child_of(cJSON *obj, const char *key, bool array)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (c && (array ? cJSON_IsArray(c) : cJSON_IsObject(c)))
        return c;
    if (put(obj, key, array ? cJSON_CreateArray() : cJSON_CreateObject()))
        return NULL;
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* A scalar as text ("" for anything else); buf holds numbers. */
static const char *scalar_text(const cJSON *v, char *buf, size_t len)
{
    if (cJSON_IsString(v))
        return v->valuestring;
    if (cJSON_IsBool(v))
        return cJSON_IsTrue(v) ? "true" : "false";
    if (cJSON_IsNumber(v)) {
        snprintf(buf, len, "%.15g", v->valuedouble);
        return buf;
    }
    return "";
}

static int cmp_child(const void *a, const void *b)
{
    return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* Sort an object's members by key, as Go prints its maps. */
static enum wh_err sort_object(cJSON *obj)
{
    int n = cJSON_GetArraySize(obj);
    if (n < 2)
        return WH_OK;
    cJSON **items = wh_malloc((size_t)n * sizeof(*items));
    if (!items)
        return WH_ERR_NOMEM;
    int i = 0;
    for (cJSON *c = obj->child; c; c = c->next)
        items[i++] = c;
    qsort(items, (size_t)n, sizeof(*items), cmp_child);
    for (i = 0; i < n; i++) {
        items[i]->prev = i ? items[i - 1] : items[n - 1];
        items[i]->next = i + 1 < n ? items[i + 1] : NULL;
    }
    obj->child = items[0];
    wh_free(items);
    return WH_OK;
}

static bool env_has(const cJSON *env, const char *name)
{
    for (const cJSON *e = cJSON_IsArray(env) ? env->child : NULL; e; e = e->next)
        if (!strcmp(wh_json_str0(e, "name"), name))
            return true;
    return false;
}

static cJSON *env_value(const char *name, const char *value)
{
    cJSON *e = cJSON_CreateObject();
    if (e && (wh_json_set_str(e, "name", name) || wh_json_set_str(e, "value", value))) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

static cJSON *env_field(const char *name, const char *path)
{
    cJSON *e = cJSON_CreateObject(), *vf = cJSON_CreateObject(), *fr = cJSON_CreateObject();
    if (!e || !vf || !fr || wh_json_set_str(fr, "fieldPath", path)) {
        cJSON_Delete(e);
        cJSON_Delete(vf);
        cJSON_Delete(fr);
        return NULL;
    }
    if (wh_json_set(vf, "fieldRef", fr)) {
        cJSON_Delete(e);
        cJSON_Delete(vf);
        return NULL;
    }
    if (wh_json_set_str(e, "name", name) || wh_json_set(e, "valueFrom", vf)) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

/* Append NAME=value unless unconditional is false and NAME is present. */
static enum wh_err env_put(cJSON *env, const char *name, const char *value, bool always)
{
    if (!always && env_has(env, name))
        return WH_OK;
    cJSON *e = env_value(name, value);
    if (!e)
        return WH_ERR_NOMEM;
    return wh_json_add(env, e);
}

static enum wh_err env_put_field(cJSON *env, const char *name, const char *path)
{
    cJSON *e = env_field(name, path);
    if (!e)
        return WH_ERR_NOMEM;
    return wh_json_add(env, e);
}

/* A Kubernetes quantity in whole units, rounded up, without the clamp of
 * wh_quantity_ceil (memory is reported in bytes). False when unparsable. */
static bool quantity_units(const cJSON *v, double *out)
{
    if (cJSON_IsNumber(v)) {
        *out = ceil(v->valuedouble);
        return v->valuedouble >= 0 && isfinite(v->valuedouble);
    }
    if (!cJSON_IsString(v))
        return false;
    const char *p = v->valuestring;
    char *end = NULL;
    if (*p == '-' || *p == '+' || *p == '\0')
        return false;
    if (!((*p >= '0' && *p <= '9') || *p == '.') || strpbrk(p, "xX"))
        return false; /* strtod would also take "inf", "nan" and hex */
    double m = strtod(p, &end);
    if (end == p || !isfinite(m))
        return false;
    static const struct {
        const char *s;
        double mult;
    } sfx[] = {{"", 1},     {"m", 1e-3},         {"k", 1e3},          {"M", 1e6},
               {"G", 1e9},  {"T", 1e12},         {"P", 1e15},         {"E", 1e18},
               {"Ki", 1024}, {"Mi", 1048576.0},  {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
               {"Pi", 1125899906842624.0},      {"Ei", 1152921504606846976.0}};
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
        if (!strcmp(end, sfx[i].s)) {
            *out = ceil(m * sfx[i].mult - 1e-9);
            return true;
        }
    }
    return false; /* strtod already took any exponent */
}

/* KubeRay's CheckName: keep the last 50 bytes, then a leading digit or
 * punctuation becomes 'r'. */
static void check_name(const char *in, char *out, size_t len)
{
    size_t n = strlen(in);
    const char *s = n > 50 ? in + (n - 50) : in;
    snprintf(out, len, "%s", s);
    if (isdigit((unsigned char)out[0]))
        out[0] = 'r';
    if (ispunct((unsigned char)out[0]))
        out[0] = 'r';
}

/* ---- cluster-level facts ---------------------------------------------- */

/* A decimal int at *p (leading blanks and a sign allowed, as scanf's %d);
 * moves *p past it. False, *p unchanged, without digits or beyond int. */
static bool take_int(const char **p, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (end == *p || errno == ERANGE || v < INT_MIN || v > INT_MAX)
        return false;
    *out = (int)v;
    *p = end;
    return true;
}

/* "X.Y" or "X.Y.Z..." (Z 0 when missing) and at least a.b.c. */
static bool ray_version_at_least(const char *v, int a, int b, int c)
{
    int x = 0, y = 0, z = 0;
    const char *p = v;
    if (!p || !take_int(&p, &x) || *p != '.')
        return false;
    p++;
    if (!take_int(&p, &y))
        return false;
    if (*p == '.') {
        p++;
        (void)take_int(&p, &z);
    }
    return x != a ? x > a : y != b ? y > b : z >= c;
}

static enum wh_err ctx_init(struct ctx *c, const cJSON *cluster,
                            const struct wh_kuberay_opts *opts, char *errbuf)
{
    memset(c, 0, sizeof(*c));
    c->cluster = cluster;
    c->opts = opts;
    c->errbuf = errbuf;
    const cJSON *meta = wh_json_get(cluster, "metadata");
    c->name = wh_json_str(meta, "name");
    if (!c->name || !c->name[0])
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "RayCluster has no metadata.name; give it a name");
    c->ns = wh_json_str(meta, "namespace");
    if (!c->ns || !c->ns[0])
        c->ns = "default";
    const cJSON *spec = wh_json_get(cluster, "spec");
    if (!cJSON_IsObject(spec))
        return wh_fail(errbuf, WH_ERR_INVALID, "RayCluster %s has no spec", c->name);
    const cJSON *head = wh_json_get(spec, "headGroupSpec");
    const char *svc = wh_json_str(wh_json_path(head, "headService", "metadata", NULL), "name");
    if (svc && svc[0])
        snprintf(c->head_svc, sizeof(c->head_svc), "%s", svc);
    else
        snprintf(c->head_svc, sizeof(c->head_svc), "%s-head-svc", c->name);
    char num[32];
    const cJSON *port = wh_json_path(head, "rayStartParams", "port", NULL);
    const char *p = port ? scalar_text(port, num, sizeof(num)) : "";
    snprintf(c->port, sizeof(c->port), "%s", p[0] ? p : "6379");
    snprintf(c->fqdn, sizeof(c->fqdn), "%s.%s.svc.%s", c->head_svc, c->ns,
             opts->cluster_domain ? opts->cluster_domain : "cluster.local");
    const cJSON *labels = wh_json_get(meta, "labels");
    c->from_rayservice = !strcmp(wh_json_str0(labels, "ray.io/originated-from-crd"), "RayService");
    const cJSON *ann = wh_json_get(meta, "annotations");
    c->overwrite_cmd = !strcasecmp(wh_json_str0(ann, "ray.io/overwrite-container-cmd"), "true");
    c->ft = !strcasecmp(wh_json_str0(ann, "ray.io/ft-enabled"), "true") ||
            wh_json_has(spec, "gcsFaultToleranceOptions");
    c->autoscaler_v2 = cJSON_IsTrue(wh_json_get(spec, "enableInTreeAutoscaling")) &&
                       !strcmp(wh_json_str0(wh_json_get(spec, "autoscalerOptions"), "version"),
                               "v2");
    c->token_auth = !strcmp(wh_json_str0(wh_json_get(spec, "authOptions"), "mode"), "token");
    c->new_ray = ray_version_at_least(wh_json_str(spec, "rayVersion"), 2, 53, 0);
    return WH_OK;
}

/* ---- metadata ---------------------------------------------------------- */

static enum wh_err generate_name(const struct ctx *c, const char *group, cJSON *meta)
{
    char name[512];
    if (at_least(c->opts, 1, 2)) {
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
        check_name(raw, name, sizeof(name));
    }
    for (char *q = name; *q; q++)
        *q = (char)tolower((unsigned char)*q);
    return put_str(meta, "generateName", name);
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
        WH_TRY(put(dst, l->string, cJSON_Duplicate(l, 1)));
    }
    return WH_OK;
}

static enum wh_err labels(const struct ctx *c, const cJSON *group, const char *gname,
                          const struct slot *s, long hosts, cJSON *meta)
{
    cJSON *l = child_of(meta, "labels", false);
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
    WH_TRY(put_str(l, "ray.io/is-ray-node", "yes"));
    WH_TRY(put_str(l, "ray.io/cluster", c->name));
    WH_TRY(put_str(l, "ray.io/node-type", "worker"));
    WH_TRY(put_str(l, "ray.io/group", gname));
    WH_TRY(put_str(l, "ray.io/identifier", ident));
    WH_TRY(put_str(l, "app.kubernetes.io/name", "kuberay"));
    WH_TRY(put_str(l, "app.kubernetes.io/created-by", "kuberay-operator"));
    /* User labels go on top, the group's top-level labels (1.5+) winning. */
    WH_TRY(copy_labels(l, wh_json_path(group, "template", "metadata", "labels", NULL), true));
    if (at_least(c->opts, 1, 5))
        WH_TRY(copy_labels(l, wh_json_get(group, "labels"), true));
    if (s->replica >= 0) {
        char num[32];
        snprintf(num, sizeof(num), "%ld", s->replica);
        WH_TRY(put_str(l, "ray.io/worker-group-replica-index", num));
        if (hosts > 1) {
            WH_TRY(put_str(l, "ray.io/worker-group-replica-name", s->replica_name));
            snprintf(num, sizeof(num), "%ld", s->host);
            WH_TRY(put_str(l, "ray.io/replica-host-index", num));
        }
    }
    if (c->from_rayservice)
        WH_TRY(put_str(l, "ray.io/serve", "true"));
    return sort_object(l);
}

static enum wh_err annotations(const struct ctx *c, const cJSON *group, cJSON *meta)
{
    const cJSON *src = wh_json_path(group, "template", "metadata", "annotations", NULL);
    if (!c->overwrite_cmd && !(cJSON_IsObject(src) && src->child))
        return WH_OK; /* an empty map is omitted from the JSON */
    cJSON *a = child_of(meta, "annotations", false);
    if (!a)
        return WH_ERR_NOMEM;
    for (const cJSON *x = cJSON_IsObject(src) ? src->child : NULL; x; x = x->next)
        WH_TRY(put(a, x->string, cJSON_Duplicate(x, 1)));
    if (c->overwrite_cmd)
        WH_TRY(put_str(a, "ray.io/overwrite-container-cmd", "true"));
    return sort_object(a);
}

static enum wh_err owner_ref(const struct ctx *c, cJSON *meta)
{
    cJSON *refs = child_of(meta, "ownerReferences", true), *r = cJSON_CreateObject();
    if (!refs || !r) {
        cJSON_Delete(r);
        return WH_ERR_NOMEM;
    }
    WH_TRY(wh_json_add(refs, r));
    WH_TRY(put_str(r, "apiVersion", "ray.io/v1"));
    WH_TRY(put_str(r, "kind", "RayCluster"));
    WH_TRY(put_str(r, "name", c->name));
    const char *uid = wh_json_str(wh_json_get(c->cluster, "metadata"), "uid");
    if (uid && uid[0])
        WH_TRY(put_str(r, "uid", uid));
    WH_TRY(put(r, "controller", cJSON_CreateTrue()));
    return put(r, "blockOwnerDeletion", cJSON_CreateTrue());
}

/* ---- spec -------------------------------------------------------------- */

static enum wh_err wait_gcs_ready(const struct ctx *c, cJSON *spec, const cJSON *ray)
{
    cJSON *inits = child_of(spec, "initContainers", true), *ic = cJSON_CreateObject();
    if (!inits || !ic) {
        cJSON_Delete(ic);
        return WH_ERR_NOMEM;
    }
    WH_TRY(wh_json_add(inits, ic));
    WH_TRY(put_str(ic, "name", "wait-gcs-ready"));
    static const char *const copied[] = {"image", "imagePullPolicy"};
    for (size_t i = 0; i < 2; i++)
        if (wh_json_has(ray, copied[i]))
            WH_TRY(put(ic, copied[i], cJSON_Duplicate(wh_json_get(ray, copied[i]), 1)));
    static const char *const cmd[] = {"/bin/bash", "-c", "--"};
    WH_TRY(put(ic, "command", cJSON_CreateStringArray(cmd, 3)));
    /* The operator's script, in substance: poll `ray health-check` every 5 s,
     * quietly for the first 120 s. */
    char script[2048];
    snprintf(script, sizeof(script),
             "SECONDS=0\n"
             "while true; do\n"
             "  if (( SECONDS <= 120 )); then\n"
             "    if ray health-check --address %s:%s > /dev/null 2>&1; then\n"
             "      echo \"GCS is ready.\"\n"
             "      break\n"
             "    fi\n"
             "    echo \"$SECONDS seconds elapsed: Waiting for GCS to be ready.\"\n"
             "  else\n"
             "    if ray health-check --address %s:%s; then\n"
             "      echo \"GCS is ready. Any error messages above can be safely ignored.\"\n"
             "      break\n"
             "    fi\n"
             "    echo \"$SECONDS seconds elapsed: Still waiting for GCS to be ready.\"\n"
             "  fi\n"
             "  sleep 5\n"
             "done\n",
             c->fqdn, c->port, c->fqdn, c->port);
    const char *args[] = {script};
    WH_TRY(put(ic, "args", cJSON_CreateStringArray(args, 1)));
    static const char *const more[] = {"securityContext", "env", "volumeMounts"};
    for (size_t i = 0; i < 3; i++)
        if (wh_json_has(ray, more[i]))
            WH_TRY(put(ic, more[i], cJSON_Duplicate(wh_json_get(ray, more[i]), 1)));
    cJSON *res = cJSON_CreateObject();
    if (!res)
        return WH_ERR_NOMEM;
    WH_TRY(put(ic, "resources", res));
    static const char *const kinds[] = {"limits", "requests"};
    for (size_t i = 0; i < 2; i++) {
        cJSON *q = cJSON_CreateObject();
        if (!q)
            return WH_ERR_NOMEM;
        WH_TRY(wh_json_set(res, kinds[i], q));
        WH_TRY(put_str(q, "cpu", "200m"));
        WH_TRY(put_str(q, "memory", "256Mi"));
    }
    return WH_OK;
}

/* rayStartParams with KubeRay's defaults, as strings. */
static enum wh_err start_params(const struct ctx *c, const cJSON *group, const cJSON *ray,
                                cJSON *params)
{
    char num[64];
    const cJSON *user = wh_json_get(group, "rayStartParams");
    for (const cJSON *p = cJSON_IsObject(user) ? user->child : NULL; p; p = p->next)
        WH_TRY(put_str(params, p->string, scalar_text(p, num, sizeof(num))));
    char addr[600];
    snprintf(addr, sizeof(addr), "%s:%s", c->fqdn, c->port);
    if (!wh_json_has(params, "address"))
        WH_TRY(put_str(params, "address", addr));
    if (!wh_json_has(params, "metrics-export-port"))
        WH_TRY(put_str(params, "metrics-export-port", "8080"));
    WH_TRY(put_str(params, "block", "true"));
    if (!wh_json_has(params, "dashboard-agent-listen-port"))
        WH_TRY(put_str(params, "dashboard-agent-listen-port", DEFAULT_AGENT_PORT));
    const cJSON *limits = wh_json_path(ray, "resources", "limits", NULL);
    const cJSON *requests = wh_json_path(ray, "resources", "requests", NULL);
    long cpus;
    const cJSON *cpu = wh_json_get(limits, "cpu") ? wh_json_get(limits, "cpu")
                                                  : wh_json_get(requests, "cpu");
    if (!wh_json_has(params, "num-cpus") && cpu && wh_quantity_ceil(cpu, &cpus)) {
        snprintf(num, sizeof(num), "%ld", cpus);
        WH_TRY(put_str(params, "num-cpus", num));
    }
    double bytes;
    if (!wh_json_has(params, "memory") && quantity_units(wh_json_get(limits, "memory"), &bytes)) {
        snprintf(num, sizeof(num), "%.0f", bytes);
        WH_TRY(put_str(params, "memory", num));
    }
    for (const cJSON *l = cJSON_IsObject(limits) ? limits->child : NULL; l; l = l->next) {
        size_t n = strlen(l->string);
        long gpus;
        if (n >= 3 && !strcmp(l->string + n - 3, "gpu") && !wh_json_has(params, "num-gpus") &&
            wh_quantity_ceil(l, &gpus) && gpus > 0) {
            snprintf(num, sizeof(num), "%ld", gpus);
            WH_TRY(put_str(params, "num-gpus", num));
        }
    }
    long tpus;
    const char *res = wh_json_str(params, "resources");
    /* A user `resources` param is kept as written (KubeRay would merge TPU
     * into it unless it names TPU already). */
    if (wh_quantity_ceil(wh_json_get(limits, "google.com/tpu"), &tpus) && tpus > 0 && !res) {
        snprintf(num, sizeof(num), "'{\"TPU\":%ld}'", tpus);
        WH_TRY(put_str(params, "resources", num));
    }
    const cJSON *glabels = wh_json_get(group, "labels");
    if (at_least(c->opts, 1, 5) && cJSON_IsObject(glabels) && glabels->child &&
        !wh_json_has(params, "labels")) {
        cJSON *sorted = cJSON_Duplicate(glabels, 1);
        struct wh_buf b;
        wh_buf_init(&b, 65536);
        enum wh_err err = sorted ? sort_object(sorted) : WH_ERR_NOMEM;
        for (const cJSON *l = sorted ? sorted->child : NULL; !err && l; l = l->next)
            err = wh_buf_addf(&b, "%s%s=%s", l == sorted->child ? "" : ",", l->string,
                              scalar_text(l, num, sizeof(num)));
        cJSON_Delete(sorted);
        if (!err)
            err = put_str(params, "labels", wh_buf_ptr(&b));
        wh_buf_free(&b);
        WH_TRY(err);
    }
    return sort_object(params);
}

static enum wh_err start_command(const cJSON *params, struct wh_buf *b)
{
    WH_TRY(wh_buf_add(b, "ray start "));
    for (const cJSON *p = params->child; p; p = p->next) {
        const char *v = p->valuestring;
        if (!strcasecmp(v, "true")) {
            WH_TRY(wh_buf_addf(b, " --%s ", p->string));
        } else if (!strcasecmp(v, "false") && strcmp(p->string, "log-color") &&
                   strcmp(p->string, "include-dashboard") &&
                   strcmp(p->string, "include-log-monitor")) {
            continue;
        } else {
            WH_TRY(wh_buf_addf(b, " --%s=%s ", p->string, v));
        }
    }
    return WH_OK;
}

static enum wh_err metrics_port(cJSON *ray)
{
    cJSON *ports = child_of(ray, "ports", true);
    if (!ports)
        return WH_ERR_NOMEM;
    for (const cJSON *p = ports->child; p; p = p->next)
        if (!strcmp(wh_json_str0(p, "name"), "metrics"))
            return WH_OK;
    cJSON *p = cJSON_CreateObject();
    if (!p)
        return WH_ERR_NOMEM;
    WH_TRY(wh_json_add(ports, p));
    WH_TRY(put_str(p, "name", "metrics"));
    return put(p, "containerPort", cJSON_CreateNumber(8080));
}

static enum wh_err shared_memory(cJSON *spec, cJSON *ray, const cJSON *params)
{
    if (wh_json_has(params, "plasma-directory"))
        return WH_OK;
    const cJSON *mounts = wh_json_get(ray, "volumeMounts");
    for (const cJSON *m = cJSON_IsArray(mounts) ? mounts->child : NULL; m; m = m->next)
        if (!strcmp(wh_json_str0(m, "mountPath"), "/dev/shm"))
            return WH_OK;
    cJSON *vols = child_of(spec, "volumes", true), *v = cJSON_CreateObject(),
          *ed = cJSON_CreateObject();
    if (!vols || !v || !ed) {
        cJSON_Delete(v);
        cJSON_Delete(ed);
        return WH_ERR_NOMEM;
    }
    if (wh_json_add(vols, v)) {
        cJSON_Delete(ed);
        return WH_ERR_NOMEM;
    }
    WH_TRY(put_str(v, "name", "shared-mem"));
    WH_TRY(put(v, "emptyDir", ed));
    WH_TRY(put_str(ed, "medium", "Memory"));
    const cJSON *mem = wh_json_path(ray, "resources", "limits", "memory", NULL);
    if (!mem)
        mem = wh_json_path(ray, "resources", "requests", "memory", NULL);
    if (mem)
        WH_TRY(put(ed, "sizeLimit", cJSON_Duplicate(mem, 1)));
    cJSON *ms = child_of(ray, "volumeMounts", true), *m = cJSON_CreateObject();
    if (!ms || !m) {
        cJSON_Delete(m);
        return WH_ERR_NOMEM;
    }
    WH_TRY(wh_json_add(ms, m));
    WH_TRY(put_str(m, "name", "shared-mem"));
    return put_str(m, "mountPath", "/dev/shm");
}

static enum wh_err join_strings(const cJSON *arr, struct wh_buf *b)
{
    for (const cJSON *s = cJSON_IsArray(arr) ? arr->child : NULL; s; s = s->next) {
        if (!cJSON_IsString(s))
            continue;
        if (wh_buf_len(b))
            WH_TRY(wh_buf_addc(b, ' '));
        WH_TRY(wh_buf_add(b, s->valuestring));
    }
    return WH_OK;
}

static enum wh_err command_args(const struct ctx *c, cJSON *ray, const char *start)
{
    struct wh_buf user, args;
    wh_buf_init(&user, 1 << 20);
    wh_buf_init(&args, 1 << 20);
    enum wh_err err = join_strings(wh_json_get(ray, "command"), &user);
    if (!err)
        err = join_strings(wh_json_get(ray, "args"), &user);
    if (err || strstr(wh_buf_ptr(&user), "ray start") || c->overwrite_cmd)
        goto out;
    if (wh_buf_len(&user))
        err = wh_buf_addf(&args, "%s && ", wh_buf_ptr(&user));
    if (!err)
        err = wh_buf_add(&args, at_least(c->opts, 1, 7)
                                    ? "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; "
                                    : "ulimit -n 65536; ");
    if (!err)
        err = wh_buf_add(&args, start);
    static const char *const cmd[] = {"/bin/bash", "-c", "--"};
    if (!err)
        err = put(ray, "command", cJSON_CreateStringArray(cmd, 3));
    const char *a[] = {wh_buf_ptr(&args)};
    if (!err)
        err = put(ray, "args", cJSON_CreateStringArray(a, 1));
out:
    wh_buf_free(&user);
    wh_buf_free(&args);
    return err;
}

static enum wh_err init_env(const struct ctx *c, cJSON *spec)
{
    cJSON *inits = cJSON_GetObjectItemCaseSensitive(spec, "initContainers");
    for (cJSON *ic = cJSON_IsArray(inits) ? inits->child : NULL; ic; ic = ic->next) {
        cJSON *env = child_of(ic, "env", true);
        if (!env)
            return WH_ERR_NOMEM;
        WH_TRY(env_put(env, "FQ_RAY_IP", c->fqdn, true));
        WH_TRY(env_put(env, "RAY_IP", c->head_svc, true));
    }
    return WH_OK;
}

static enum wh_err ray_env(const struct ctx *c, cJSON *ray, const char *start)
{
    cJSON *env = child_of(ray, "env", true);
    if (!env)
        return WH_ERR_NOMEM;
    if (c->ft)
        WH_TRY(env_put(env, "RAY_gcs_rpc_server_reconnect_timeout_s", "600", false));
    if (c->token_auth) {
        WH_TRY(env_put(env, "RAY_AUTH_MODE", "token", true));
        const char *secret =
            wh_json_str(wh_json_path(c->cluster, "spec", "authOptions", NULL), "secretName");
        char name[128];
        check_name(c->name, name, sizeof(name));
        cJSON *e = cJSON_CreateObject(), *vf = cJSON_CreateObject(), *ref = cJSON_CreateObject();
        if (!e || !vf || !ref) {
            cJSON_Delete(e);
            cJSON_Delete(vf);
            cJSON_Delete(ref);
            return WH_ERR_NOMEM;
        }
        WH_TRY(wh_json_add(env, e));
        if (wh_json_set(vf, "secretKeyRef", ref)) {
            cJSON_Delete(vf);
            return WH_ERR_NOMEM;
        }
        WH_TRY(put_str(e, "name", "RAY_AUTH_TOKEN"));
        WH_TRY(put(e, "valueFrom", vf));
        WH_TRY(put_str(ref, "name", secret && secret[0] ? secret : name));
        WH_TRY(put_str(ref, "key", "auth_token"));
    }
    WH_TRY(env_put(env, "FQ_RAY_IP", c->fqdn, true));
    WH_TRY(env_put(env, "RAY_IP", c->head_svc, true));
    WH_TRY(env_put_field(env, "RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']"));
    if (at_least(c->opts, 1, 6))
        WH_TRY(env_put_field(env, "RAY_CLUSTER_NAMESPACE", "metadata.namespace"));
    WH_TRY(env_put_field(env, "RAY_CLOUD_INSTANCE_ID", "metadata.name"));
    WH_TRY(env_put_field(env, "RAY_NODE_TYPE_NAME", "metadata.labels['ray.io/group']"));
    WH_TRY(env_put(env, "KUBERAY_GEN_RAY_START_CMD", start, true));
    WH_TRY(env_put(env, "RAY_PORT", c->port, false));
    if (c->from_rayservice) {
        WH_TRY(env_put(env, "RAY_timeout_ms_task_wait_for_death_info", "0", false));
        WH_TRY(env_put(env, "RAY_gcs_server_request_timeout_seconds", "5", false));
        WH_TRY(env_put(env, "RAY_SERVE_KV_TIMEOUT_S", "5", false));
    }
    char addr[600];
    snprintf(addr, sizeof(addr), "%s:%s", c->fqdn, c->port);
    WH_TRY(env_put(env, "RAY_ADDRESS", addr, false));
    WH_TRY(env_put(env, "RAY_USAGE_STATS_KUBERAY_IN_USE", "1", false));
    return env_put(env, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "1", false);
}

static long serve_port(const cJSON *ray)
{
    const cJSON *ports = wh_json_get(ray, "ports");
    for (const cJSON *p = cJSON_IsArray(ports) ? ports->child : NULL; p; p = p->next) {
        const cJSON *cp = wh_json_get(p, "containerPort");
        if (!strcmp(wh_json_str0(p, "name"), "serve") && cJSON_IsNumber(cp))
            return (long)cp->valuedouble;
    }
    return 8000;
}

static enum wh_err probe(const struct ctx *c, cJSON *ray, const char *key, const char *agent,
                         bool readiness)
{
    if (wh_json_has(ray, key))
        return WH_OK;
    cJSON *p = cJSON_CreateObject();
    if (!p)
        return WH_ERR_NOMEM;
    WH_TRY(wh_json_set(ray, key, p));
    bool serve = readiness && c->from_rayservice;
    if (c->new_ray && at_least(c->opts, 1, 6) && !serve) {
        cJSON *h = cJSON_CreateObject();
        if (!h)
            return WH_ERR_NOMEM;
        WH_TRY(wh_json_set(p, "httpGet", h));
        WH_TRY(put_str(h, "path", "/api/healthz"));
        long port = strtol(agent, NULL, 10);
        WH_TRY(put(h, "port", cJSON_CreateNumber((double)(port > 0 ? port : 52365))));
    } else {
        char cmd[512];
        int n = snprintf(cmd, sizeof(cmd), LEGACY_PROBE_CMD, agent);
        if (serve && n > 0 && (size_t)n < sizeof(cmd))
            snprintf(cmd + n, sizeof(cmd) - (size_t)n,
                     " && wget --tries 1 -T 2 -q -O- http://localhost:%ld/-/healthz | grep "
                     "success",
                     serve_port(ray));
        const char *argv[] = {"bash", "-c", cmd};
        cJSON *ex = cJSON_CreateObject();
        if (!ex)
            return WH_ERR_NOMEM;
        WH_TRY(wh_json_set(p, "exec", ex));
        WH_TRY(put(ex, "command", cJSON_CreateStringArray(argv, 3)));
    }
    WH_TRY(put(p, "initialDelaySeconds", cJSON_CreateNumber(readiness ? 10 : 30)));
    WH_TRY(put(p, "timeoutSeconds", cJSON_CreateNumber(2)));
    WH_TRY(put(p, "periodSeconds", cJSON_CreateNumber(5)));
    WH_TRY(put(p, "successThreshold", cJSON_CreateNumber(1)));
    return put(p, "failureThreshold", cJSON_CreateNumber(readiness ? (serve ? 1 : 10) : 120));
}

/* ---- one pod ------------------------------------------------------------ */

static enum wh_err build_spec(const struct ctx *c, const cJSON *group, cJSON *spec)
{
    cJSON *containers = cJSON_GetObjectItemCaseSensitive(spec, "containers");
    cJSON *ray = cJSON_IsArray(containers) ? containers->child : NULL;
    if (!cJSON_IsObject(ray))
        return WH_ERR_INVALID; /* checked by the caller with a message */
    WH_TRY(wait_gcs_ready(c, spec, ray));
    cJSON *params = cJSON_CreateObject();
    if (!params)
        return WH_ERR_NOMEM;
    struct wh_buf start;
    wh_buf_init(&start, 1 << 20);
    enum wh_err err = start_params(c, group, ray, params);
    if (!err)
        err = metrics_port(ray);
    if (!err && c->autoscaler_v2)
        err = put_str(spec, "restartPolicy", "Never");
    if (!err)
        err = shared_memory(spec, ray, params);
    if (!err)
        err = start_command(params, &start);
    if (!err)
        err = command_args(c, ray, wh_buf_ptr(&start));
    if (!err)
        err = init_env(c, spec);
    if (!err)
        err = ray_env(c, ray, wh_buf_ptr(&start));
    const char *agent = wh_json_str(params, "dashboard-agent-listen-port");
    if (!err)
        err = probe(c, ray, "livenessProbe", agent ? agent : DEFAULT_AGENT_PORT, false);
    if (!err)
        err = probe(c, ray, "readinessProbe", agent ? agent : DEFAULT_AGENT_PORT, true);
    wh_buf_free(&start);
    cJSON_Delete(params);
    return err;
}

static enum wh_err build_pod(const struct ctx *c, const cJSON *group, const char *gname,
                             const struct slot *s, long hosts, cJSON *pods)
{
    cJSON *pod = cJSON_CreateObject();
    if (!pod)
        return WH_ERR_NOMEM;
    WH_TRY(wh_json_add(pods, pod));
    WH_TRY(put_str(pod, "apiVersion", "v1"));
    WH_TRY(put_str(pod, "kind", "Pod"));
    cJSON *meta = child_of(pod, "metadata", false);
    if (!meta)
        return WH_ERR_NOMEM;
    WH_TRY(generate_name(c, gname, meta));
    WH_TRY(put_str(meta, "namespace", c->ns));
    WH_TRY(labels(c, group, gname, s, hosts, meta));
    WH_TRY(annotations(c, group, meta));
    WH_TRY(owner_ref(c, meta));
    cJSON *spec = cJSON_Duplicate(wh_json_path(group, "template", "spec", NULL), 1);
    if (!spec)
        return WH_ERR_NOMEM;
    WH_TRY(wh_json_set(pod, "spec", spec));
    return build_spec(c, group, spec);
}

static enum wh_err check_group(const struct ctx *c, const cJSON *group, int i, const char **gname)
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
    return WH_OK;
}

static enum wh_err group_pods(const struct ctx *c, const cJSON *group, const char *gname,
                              cJSON *pods)
{
    long replicas, hosts;
    wh_kuberay_group_size(group, &replicas, &hosts);
    bool native = c->opts->multihost_indexing;
    for (long r = 0; r < replicas; r++) {
        char rname[320], sfx[6], seed[300];
        snprintf(seed, sizeof(seed), "%s/%s", c->name, gname);
        invent_suffix(seed, r, sfx);
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
    o->multihost_indexing = at_least(o, 1, 6);
}

enum wh_err wh_kuberay_parse_version(const char *s, int *major, int *minor, char *errbuf)
{
    const char *p = s && (s[0] == 'v' || s[0] == 'V') ? s + 1 : s;
    int a = -1, b = -1;
    bool parsed = p && take_int(&p, &a) && *p == '.' && (p++, take_int(&p, &b));
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
    struct ctx c;
    *pods = NULL;
    WH_TRY(ctx_init(&c, cluster, opts, errbuf));
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
        WH_TRY(put_str(meta, "namespace", "default"));
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(cluster, "spec");
    cJSON *groups = cJSON_GetObjectItemCaseSensitive(spec, "workerGroupSpecs");
    for (cJSON *g = cJSON_IsArray(groups) ? groups->child : NULL; g; g = g->next)
        if (cJSON_IsObject(g) && !wh_json_has(g, "numOfHosts"))
            WH_TRY(put(g, "numOfHosts", cJSON_CreateNumber(1)));
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
    WH_TRY(put_str(c, "apiVersion", "ray.io/v1"));
    WH_TRY(put_str(c, "kind", "RayCluster"));
    char sfx[6], cname[320];
    invent_suffix(name, 0, sfx);
    snprintf(cname, sizeof(cname), "%s-%s", name, sfx);
    WH_TRY(put_str(m, "name", cname));
    if (wh_json_str(meta, "namespace"))
        WH_TRY(put_str(m, "namespace", wh_json_str(meta, "namespace")));
    WH_TRY(wh_json_set(m, "labels", l));
    WH_TRY(put_str(l, "ray.io/originated-from-crd", kind));
    WH_TRY(put_str(l, "ray.io/originated-from-cr-name", name));
    return wh_json_set(c, "spec", cJSON_Duplicate(cspec, 1));
}

enum wh_err wh_kuberay_cluster_of(const cJSON *obj, cJSON **cluster, char *errbuf)
{
    *cluster = NULL;
    const char *kind = wh_json_str(obj, "kind");
    const char *name = wh_json_str0(wh_json_get(obj, "metadata"), "name");
    const char *field = NULL;
    if (!kind)
        return wh_fail(errbuf, WH_ERR_KIND, "the object has no kind; expected RayCluster, "
                                            "RayJob or RayService");
    if (!strcmp(kind, "RayCluster")) {
        *cluster = cJSON_Duplicate(obj, 1);
        return *cluster ? WH_OK : WH_ERR_NOMEM;
    }
    if (!strcmp(kind, "RayJob"))
        field = "rayClusterSpec";
    else if (!strcmp(kind, "RayService"))
        field = "rayClusterConfig";
    else
        return wh_fail(errbuf, WH_ERR_KIND,
                       "%s %s is not a RayCluster, RayJob or RayService", kind, name);
    if (!name[0]) /* the RayCluster is named after it: "-xxxxx" is no name */
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "%s has no metadata.name; give it a name (KubeRay names its RayCluster "
                       "<name>-<5 characters>)",
                       kind);
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
