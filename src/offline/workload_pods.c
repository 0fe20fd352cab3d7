/* workload_pods.c: the pods of a Job, JobSet or LeaderWorkerSet, offline. */
#include "wh/workload_pods.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* strcmp */

#include "wh/buf.h"     /* wh_buf */
#include "wh/hash.h"    /* wh_hash_str */
#include "wh/json.h"    /* wh_json_* */
#include "wh/kinds.h"   /* wh_kind_find, wh_kind_list_by_pods */
#include "wh/names.h"   /* wh_names_label_value, WH_NAME_MAX */
#include "wh/patch.h"   /* wh_env_entry */
#include "wh/podspec.h" /* wh_container_tpu, wh_container_requests_tpu */

#include "lws_subgroups.h" /* wh_lws_sg_* */

#define KEY_JOB_INDEX "batch.kubernetes.io/job-completion-index"
#define LWS "leaderworkerset.sigs.k8s.io/"
#define JS "jobset.sigs.k8s.io/"
#define LWS_TPU_PORT 8476u /* LWS's TPU_PROCESS_PORT of TPU container 0 */

/* A made-up but stable UID / hash from a name. */
static void fake_uid(const char *a, const char *b, char *out, size_t n)
{
    uint32_t h = wh_hash_str(wh_hash_str(2166136261u, a), b);
    snprintf(out, n, "%08x-0000-4000-8000-%012x", h, h ^ 0x5bd1e995u);
}

/* obj[key] as a mapping, created (or replacing a non-mapping) when needed. */
static cJSON *mapping(cJSON *obj, const char *key)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsObject(m))
        return m;
    m = cJSON_CreateObject();
    if (m && wh_json_set(obj, key, m))
        return NULL;
    return m;
}

static enum wh_err put(cJSON *obj, const char *key, const char *value)
{
    return obj ? wh_json_set_str(obj, key, value) : WH_ERR_NOMEM;
}

/* Set key=value as a label and an annotation (the JobSet controller's way). */
static enum wh_err put_both(cJSON *pod, const char *key, const char *value)
{
    cJSON *meta = mapping(pod, "metadata");
    enum wh_err err = put(meta ? mapping(meta, "labels") : NULL, key, value);
    if (!err)
        err = put(meta ? mapping(meta, "annotations") : NULL, key, value);
    return err;
}

static enum wh_err put_label(cJSON *pod, const char *key, const char *value)
{
    cJSON *meta = mapping(pod, "metadata");
    return put(meta ? mapping(meta, "labels") : NULL, key, value);
}

static enum wh_err put_annotation(cJSON *pod, const char *key, const char *value)
{
    cJSON *meta = mapping(pod, "metadata");
    return put(meta ? mapping(meta, "annotations") : NULL, key, value);
}

static bool has_env(const cJSON *c, const char *name)
{
    const cJSON *env = wh_json_get(c, "env");
    for (const cJSON *e = cJSON_IsArray(env) ? env->child : NULL; e; e = e->next)
        if (!strcmp(wh_json_str0(e, "name"), name))
            return true;
    return false;
}

/* Append env name (value, or valueFrom.fieldRef when field is set) to
 * container c unless it has an entry of that name. */
static enum wh_err add_env(cJSON *c, const char *name, const char *value, const char *field)
{
    if (has_env(c, name))
        return WH_OK;
    cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env");
    if (!cJSON_IsArray(env)) {
        env = cJSON_CreateArray();
        if (!env || wh_json_set(c, "env", env))
            return WH_ERR_NOMEM;
    }
    cJSON *e = wh_env_entry(name, value, field);
    if (!e)
        return WH_ERR_NOMEM;
    return wh_json_add(env, e);
}

/* Every container and init container of pod. */
static enum wh_err each_container(cJSON *pod, const char *name, const char *value, const char *field)
{
    static const char *const lists[2] = {"containers", "initContainers"};
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    enum wh_err err = WH_OK;
    for (int l = 0; l < 2 && !err; l++) {
        cJSON *cs = cJSON_GetObjectItemCaseSensitive(spec, lists[l]);
        for (cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c && !err; c = c->next)
            if (cJSON_IsObject(c))
                err = add_env(c, name, value, field);
    }
    return err;
}

/* A pod from a pod template: metadata (labels, annotations) and spec copied. */
static cJSON *pod_from_template(const cJSON *tmpl, const char *ns)
{
    cJSON *pod = cJSON_CreateObject(), *meta = cJSON_CreateObject();
    const cJSON *tm = wh_json_get(tmpl, "metadata"), *ts = wh_json_get(tmpl, "spec");
    if (!pod || !meta || wh_json_set_str(pod, "apiVersion", "v1") ||
        wh_json_set_str(pod, "kind", wh_kinds[WH_ROW_POD].kind) ||
        wh_json_set(pod, "metadata", meta)) {
        cJSON_Delete(meta);
        cJSON_Delete(pod);
        return NULL;
    }
    static const char *const keep[2] = {"labels", "annotations"};
    for (int i = 0; i < 2; i++) {
        const cJSON *m = wh_json_get(tm, keep[i]);
        if (cJSON_IsObject(m) && wh_json_set(meta, keep[i], cJSON_Duplicate(m, 1)))
            goto fail;
    }
    if (wh_json_set_str(meta, "namespace", ns) ||
        wh_json_set(pod, "spec", cJSON_IsObject(ts) ? cJSON_Duplicate(ts, 1) : cJSON_CreateObject()))
        goto fail;
    return pod;
fail:
    cJSON_Delete(pod);
    return NULL;
}

static enum wh_err too_many(long n, char *errbuf)
{
    return wh_fail(errbuf, WH_ERR_TOOBIG,
                   "the manifest makes %ld pods or more; at most %ld are "
                   "rendered",
                   n, WH_WORKLOAD_MAX_PODS);
}

/* A whole number >= 0 at obj[key]; def when absent. */
static enum wh_err count(const cJSON *obj, const char *key, const char *field, long def, long *out,
                         char *errbuf)
{
    const cJSON *v = wh_json_get(obj, key);
    *out = def;
    if (!v || cJSON_IsNull(v))
        return WH_OK;
    if (!wh_json_whole(v, 0, 1000000000L, out))
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "%s.%s is not a whole number >= 0; the API server "
                       "would refuse the object",
                       field, key);
    return WH_OK;
}

/* The pods of Job <job> in ns with spec jspec (field: how messages name
 * it); extra (may be NULL) is applied by the caller to each pod before. */
struct job_in {
    const char *ns, *job, *field;
    const cJSON *spec;
    bool jobset;              /* completionMode defaults to Indexed */
    const char *subdomain;    /* JobSet's, or NULL */
    const cJSON *jobset_keys; /* label+annotation pairs of a JobSet child */
};

static enum wh_err job_pods(const struct job_in *in, cJSON *out, char *errbuf)
{
    const char *mode = wh_json_str(in->spec, "completionMode");
    bool indexed = mode ? !strcmp(mode, "Indexed") : in->jobset;
    long parallelism, completions;
    WH_TRY(count(in->spec, "parallelism", in->field, 1, &parallelism, errbuf));
    WH_TRY(count(in->spec, "completions", in->field, indexed ? -1 : parallelism, &completions,
                 errbuf));
    if (indexed && completions < 0)
        return wh_fail(errbuf, WH_ERR_INVALID, "%s.completions is unset; an Indexed Job needs it",
                       in->field);
    long n = indexed ? completions : (completions < parallelism ? completions : parallelism);
    if (cJSON_GetArraySize(out) + n > WH_WORKLOAD_MAX_PODS)
        return too_many(cJSON_GetArraySize(out) + n, errbuf);
    char uid[64], s[400];
    fake_uid(in->ns, in->job, uid, sizeof(uid));
    const cJSON *tmpl = wh_json_get(in->spec, "template");
    for (long i = 0; i < n; i++) {
        cJSON *pod = pod_from_template(tmpl, in->ns);
        if (!pod || wh_json_add(out, pod))
            return WH_ERR_NOMEM;
        enum wh_err err = WH_OK;
        for (const cJSON *k = in->jobset_keys ? in->jobset_keys->child : NULL; k && !err;
             k = k->next)
            err = put_both(pod, k->string, k->valuestring);
        static const char *const name_keys[2] = {"batch.kubernetes.io/job-name", "job-name"};
        static const char *const uid_keys[2] = {"batch.kubernetes.io/controller-uid",
                                                "controller-uid"};
        for (int k = 0; k < 2 && !err; k++) {
            err = put_label(pod, name_keys[k], in->job);
            if (!err)
                err = put_label(pod, uid_keys[k], uid);
        }
        if (indexed) {
            snprintf(s, sizeof(s), "%ld", i);
            if (!err)
                err = put_label(pod, KEY_JOB_INDEX, s);
            if (!err)
                err = put_annotation(pod, KEY_JOB_INDEX, s);
            if (!err)
                err = each_container(pod, "JOB_COMPLETION_INDEX", NULL,
                                     "metadata.labels['" KEY_JOB_INDEX "']");
            snprintf(s, sizeof(s), "%.300s-%ld", in->job, i);
            if (!err)
                err = put(mapping(pod, "spec"), "hostname", s);
            snprintf(s, sizeof(s), "%.300s-%ld-", in->job, i);
        } else {
            snprintf(s, sizeof(s), "%.300s-", in->job);
        }
        if (!err)
            err = put(mapping(pod, "metadata"), "generateName", s);
        if (!err && in->subdomain)
            err = put(mapping(pod, "spec"), "subdomain", in->subdomain);
        if (err)
            return err;
    }
    return WH_OK;
}

static const char *ns_of(const cJSON *obj)
{
    const char *ns = wh_json_str(wh_json_get(obj, "metadata"), "namespace");
    return ns && *ns ? ns : "default";
}

static enum wh_err name_of(const cJSON *obj, const char **name, char *errbuf)
{
    *name = wh_json_str(wh_json_get(obj, "metadata"), "name");
    if (!*name || !**name)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "%s has neither metadata.name nor metadata.generateName, which the "
                       "API server refuses; give it one (the controller derives pod names "
                       "from it)",
                       wh_json_str0(obj, "kind"));
    return WH_OK;
}

static enum wh_err job(const cJSON *obj, cJSON *out, char *errbuf)
{
    struct job_in in = {.ns = ns_of(obj), .field = "spec", .spec = wh_json_get(obj, "spec")};
    WH_TRY(name_of(obj, &in.job, errbuf));
    return job_pods(&in, out, errbuf);
}

/* One Job of a JobSet, for the labels the JobSet controller gives it. */
struct js_job {
    const char *ns, *jobset, *uid;
    const char *global; /* global-replicas, as text */
    const char *rjob;   /* the replicated job's name */
    const char *child;  /* the Job's name */
    long replicas;      /* of the replicated job */
    long index;         /* within the replicated job */
    long global_index;  /* within the JobSet */
};

/* The jobset.sigs.k8s.io keys of the Job jj, put into keys. */
static enum wh_err put_job_keys(cJSON *keys, const struct js_job *jj)
{
    char s[64];
    snprintf(s, sizeof(s), "%ld", jj->replicas);
    enum wh_err err = put(keys, JS "jobset-name", jj->jobset);
    if (!err)
        err = put(keys, JS "jobset-uid", jj->uid);
    if (!err)
        err = put(keys, JS "replicatedjob-name", jj->rjob);
    if (!err)
        err = put(keys, JS "replicatedjob-replicas", s);
    if (!err)
        err = put(keys, JS "global-replicas", jj->global);
    snprintf(s, sizeof(s), "%ld", jj->index);
    if (!err)
        err = put(keys, JS "job-index", s);
    snprintf(s, sizeof(s), "%ld", jj->global_index);
    if (!err)
        err = put(keys, JS "job-global-index", s);
    if (!err)
        err = put(keys, JS "restart-attempt", "0");
    if (!err)
        err = put(keys, JS "group-name", "default");
    if (!err)
        err = put(keys, JS "group-replicas", jj->global);
    if (!err)
        err = put(keys, JS "job-group-index", wh_json_str0(keys, JS "job-global-index"));
    char key[64];
    fake_uid(jj->ns, jj->child, key, sizeof(key));
    if (!err)
        err = put(keys, JS "job-key", key);
    return err;
}

/* JobSet's spec.coordinator: the endpoint its controller writes as label
 * and annotation JS "coordinator" on every child Job and pod
 * (CoordinatorEndpoint, JobSet v0.12.0: <js>-<rjob>-<jobIndex>-<podIndex>.
 * <subdomain>), into ep (empty without a coordinator); refused as JobSet's
 * own webhook refuses it (validateCoordinator, validateCoordinatorLabelValue),
 * since it then creates no Job. */
static enum wh_err coordinator(const cJSON *spec, const char *js, const char *sub, char *ep,
                               size_t len, char *errbuf)
{
    const cJSON *co = wh_json_get(spec, "coordinator");
    *ep = '\0';
    if (!co || cJSON_IsNull(co))
        return WH_OK;
    const char *rname = wh_json_str0(co, "replicatedJob");
    long job, pod, replicas = 0, completions = -1;
    WH_TRY(count(co, "jobIndex", "spec.coordinator", 0, &job, errbuf));
    WH_TRY(count(co, "podIndex", "spec.coordinator", 0, &pod, errbuf));
    const cJSON *rjobs = wh_json_get(spec, "replicatedJobs"), *rj = NULL;
    for (rj = cJSON_IsArray(rjobs) ? rjobs->child : NULL; rj; rj = rj->next)
        if (!strcmp(wh_json_str0(rj, "name"), rname))
            break;
    const cJSON *jspec = wh_json_path(rj, "template", "spec", NULL);
    const char *mode = wh_json_str(jspec, "completionMode");
    if (!rj)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "spec.coordinator.replicatedJob \"%.64s\" is not a replicated job of the "
                       "JobSet; JobSet's webhook refuses it: name one of spec.replicatedJobs",
                       rname);
    WH_TRY(count(rj, "replicas", "spec.replicatedJobs[]", 1, &replicas, errbuf));
    if (job >= replicas)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "spec.coordinator.jobIndex %ld is not a Job of replicated job \"%.64s\" "
                       "(%ld replicas); JobSet's webhook refuses it: use 0 to %ld",
                       job, rname, replicas, replicas - 1);
    WH_TRY(count(jspec, "completions", "spec.replicatedJobs[].template.spec", -1, &completions,
                 errbuf));
    if ((mode && strcmp(mode, "Indexed")) || completions < 0)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "spec.coordinator names replicated job \"%.64s\", whose Jobs are not "
                       "Indexed with completions set; JobSet's webhook refuses it: set "
                       "completionMode Indexed and completions",
                       rname);
    if (pod >= completions)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "spec.coordinator.podIndex %ld is not a pod of replicated job \"%.64s\" "
                       "(completions %ld); JobSet's webhook refuses it: use 0 to %ld",
                       pod, rname, completions, completions - 1);
    int n = snprintf(ep, len, "%s-%s-%ld-%ld.%s", js, rname, job, pod, sub);
    const char *rule = n < 0 || (size_t)n >= len ? "must be no more than 63 characters"
                                                 : wh_names_label_value(ep);
    if (rule)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "the coordinator endpoint \"%.100s\" is no valid value for label " JS
                       "coordinator (%s); JobSet's webhook refuses it: shorten the JobSet, "
                       "replicated job or subdomain name",
                       ep, rule);
    return WH_OK;
}

static enum wh_err jobset(const cJSON *obj, cJSON *out, char *errbuf)
{
    const char *js;
    WH_TRY(name_of(obj, &js, errbuf));
    const cJSON *spec = wh_json_get(obj, "spec");
    const cJSON *rjobs = wh_json_get(spec, "replicatedJobs");
    const cJSON *dns = wh_json_path(spec, "network", "enableDNSHostnames", NULL);
    const char *sub = wh_json_str(wh_json_get(spec, "network"), "subdomain");
    if (!sub || !*sub)
        sub = js;
    long global = 0, before = 0;
    for (const cJSON *rj = cJSON_IsArray(rjobs) ? rjobs->child : NULL; rj; rj = rj->next) {
        long r;
        WH_TRY(count(rj, "replicas", "spec.replicatedJobs[]", 1, &r, errbuf));
        global += r;
    }
    char uid[64], gs[32], field[160], child[400];
    fake_uid(ns_of(obj), js, uid, sizeof(uid));
    snprintf(gs, sizeof(gs), "%ld", global);
    const char *excl = wh_meta_annotation(obj, "alpha.jobset.sigs.k8s.io/exclusive-topology");
    char coord[WH_NAME_MAX + 2];
    WH_TRY(coordinator(spec, js, sub, coord, sizeof(coord), errbuf));
    int i = 0;
    enum wh_err err = WH_OK;
    for (const cJSON *rj = cJSON_IsArray(rjobs) ? rjobs->child : NULL; rj && !err;
         rj = rj->next, i++) {
        long replicas;
        snprintf(field, sizeof(field), "spec.replicatedJobs[%d]", i);
        WH_TRY(count(rj, "replicas", field, 1, &replicas, errbuf));
        const char *rname = wh_json_str(rj, "name");
        if (!rname || !*rname)
            return wh_fail(errbuf, WH_ERR_INVALID, "%s.name is missing", field);
        snprintf(field, sizeof(field), "spec.replicatedJobs[%d].template.spec", i);
        for (long j = 0; j < replicas && !err; j++) {
            cJSON *keys = cJSON_CreateObject();
            if (!keys)
                return WH_ERR_NOMEM;
            snprintf(child, sizeof(child), "%.120s-%.60s-%ld", js, rname, j);
            struct js_job jj = {.ns = ns_of(obj),
                                .jobset = js,
                                .uid = uid,
                                .global = gs,
                                .rjob = rname,
                                .child = child,
                                .replicas = replicas,
                                .index = j,
                                .global_index = before + j};
            err = put_job_keys(keys, &jj);
            if (!err && *coord)
                err = put(keys, JS "coordinator", coord);
            size_t first = cJSON_GetArraySize(out) > 0 ? (size_t)cJSON_GetArraySize(out) : 0;
            struct job_in in = {.ns = ns_of(obj),
                                .job = child,
                                .field = field,
                                .spec = wh_json_path(rj, "template", "spec", NULL),
                                .jobset = true,
                                .subdomain = cJSON_IsFalse(dns) ? NULL : sub,
                                .jobset_keys = keys};
            if (!err)
                err = job_pods(&in, out, errbuf);
            /* The exclusive-placement annotation is an annotation only. */
            for (cJSON *p = cJSON_GetArrayItem(out, (int)first); p && excl && !err; p = p->next)
                err = put_annotation(p, "alpha.jobset.sigs.k8s.io/exclusive-topology", excl);
            cJSON_Delete(keys);
        }
        before += replicas;
    }
    return err;
}

/* The TPU containers of pod as LWS's pod webhook lists them: the regular
 * containers, then the init containers. Returns how many; fills the first
 * room of them into out. */
static size_t lws_tpu_containers(cJSON *pod, cJSON **out, size_t room)
{
    static const char *const lists[2] = {"containers", "initContainers"};
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    size_t k = 0;
    for (int l = 0; l < 2; l++) {
        cJSON *cs = cJSON_GetObjectItemCaseSensitive(spec, lists[l]);
        for (cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next)
            if (cJSON_IsObject(c) && wh_container_requests_tpu(c)) {
                if (k < room)
                    out[k] = c;
                k++;
            }
    }
    return k;
}

/* The value of env name in container c, "" when it has none. */
static const char *env_value(const cJSON *c, const char *name)
{
    const cJSON *env = wh_json_get(c, "env");
    for (const cJSON *e = cJSON_IsArray(env) ? env->child : NULL; e; e = e->next)
        if (!strcmp(wh_json_str0(e, "name"), name))
            return wh_json_str0(e, "value");
    return "";
}

/* A TPU container's process port: its own TPU_PROCESS_PORT, or dflt. */
struct port {
    const char *text;
    char dflt[24];
};

/* LWS's host list of pods first..last of leader's group (0: the leader),
 * each host once per port, into list and procs (host:port), both
 * initialized here; the caller frees them. */
static enum wh_err lws_hosts(struct wh_buf *list, struct wh_buf *procs, const char *leader,
                             const char *sub, long first, long last, const struct port *ports,
                             size_t n_ports)
{
    wh_buf_init(list, (size_t)1 << 30);
    wh_buf_init(procs, (size_t)1 << 30);
    char host[400];
    enum wh_err err = WH_OK;
    for (long k = first; k <= last && !err; k++) {
        if (k == 0)
            snprintf(host, sizeof(host), "%.253s.%.63s", leader, sub);
        else
            snprintf(host, sizeof(host), "%.250s-%ld.%.63s", leader, k, sub);
        for (size_t c = 0; c < n_ports && !err; c++) {
            const char *sep = wh_buf_len(list) ? "," : "";
            err = wh_buf_addf(list, "%s%s", sep, host);
            if (!err)
                err = wh_buf_addf(procs, "%s%s:%s", sep, host, ports[c].text);
        }
    }
    return err;
}

/* LWS's five TPU variables on container c, in its order (each unless c has
 * an entry of the name). */
static enum wh_err lws_identity(cJSON *c, const char *hosts, const char *id, const char *leader,
                                const char *procs, const char *port)
{
    enum wh_err err = add_env(c, "TPU_WORKER_HOSTNAMES", hosts, NULL);
    if (!err)
        err = add_env(c, "TPU_WORKER_ID", id, NULL);
    if (!err)
        err = add_env(c, "TPU_NAME", leader, NULL);
    if (!err)
        err = add_env(c, "TPU_PROCESS_ADDRESSES", procs, NULL);
    return err ? err : add_env(c, "TPU_PROCESS_PORT", port, NULL);
}

/* LWS's pod webhook: TPU identity for the TPU containers (docs/workloads.md),
 * as LWS v0.9.0's AddTPUVariables writes it: container i of every host is
 * one process on port i, its own TPU_PROCESS_PORT or 8476 + i. */
static enum wh_err lws_tpu_env(cJSON *pod, const char *leader, long size, long worker,
                               bool leader_tpu, const char *sub)
{
    size_t n_tpu = lws_tpu_containers(pod, NULL, 0);
    if (!n_tpu)
        return WH_OK;
    cJSON **tpu = calloc(n_tpu, sizeof(*tpu));
    struct port *ports = calloc(n_tpu, sizeof(*ports));
    if (!tpu || !ports) {
        free(tpu);
        free(ports);
        return WH_ERR_NOMEM;
    }
    lws_tpu_containers(pod, tpu, n_tpu);
    if (has_env(tpu[0], "TPU_WORKER_HOSTNAMES") || has_env(tpu[0], "TPU_WORKER_ID")) {
        free(tpu);
        free(ports);
        return WH_OK;
    }
    for (size_t c = 0; c < n_tpu; c++) {
        snprintf(ports[c].dflt, sizeof(ports[c].dflt), "%zu", LWS_TPU_PORT + c);
        ports[c].text = has_env(tpu[c], "TPU_PROCESS_PORT")
                            ? env_value(tpu[c], "TPU_PROCESS_PORT") /* as written, LWS's way */
                            : ports[c].dflt;
    }
    struct wh_buf list, procs;
    enum wh_err err = lws_hosts(&list, &procs, leader, sub, leader_tpu ? 0 : 1, size - 1, ports,
                                n_tpu);
    for (size_t c = 0; c < n_tpu && !err; c++) {
        char id[32];
        snprintf(id, sizeof(id), "%ld", (worker - (leader_tpu ? 0 : 1)) * (long)n_tpu + (long)c);
        err = lws_identity(tpu[c], wh_buf_ptr(&list), id, leader, wh_buf_ptr(&procs), ports[c].text);
    }
    wh_buf_free(&list);
    wh_buf_free(&procs);
    free(tpu);
    free(ports);
    return err;
}

/* The controller's subgroup annotations (the policy type on leaders only)
 * and the pod webhook's subgroup labels on pod w of leader's group. */
static enum wh_err lws_subgroup_keys(cJSON *pod, const struct wh_lws_sg *sg, long size,
                                     const char *leader, long w)
{
    char v[32], key[64];
    snprintf(v, sizeof(v), "%ld", sg->size);
    enum wh_err err = w ? WH_OK : put_annotation(pod, LWS "subgroup-policy-type", sg->type);
    if (!err)
        err = put_annotation(pod, LWS "subgroup-size", v);
    if (!err && sg->excl)
        err = put_annotation(pod, LWS "subgroup-exclusive-topology", sg->excl);
    long i = wh_lws_sg_index(sg, size, w);
    if (err || i < 0)
        return err;
    snprintf(v, sizeof(v), "%ld", i);
    fake_uid(leader, v, key, sizeof(key)); /* LWS: sha1 of "<leader>/<index>" */
    err = put_label(pod, LWS "subgroup-index", v);
    return err ? err : put_label(pod, LWS "subgroup-key", key);
}

/* LWS v0.9.0's TPU identity with subgroups (addTPUVariablesSubGroup): only
 * the first TPU container, one port, the span of lws_subgroups.h. A
 * LeaderExcluded leader with TPUs has no subgroup index: LWS's pod webhook
 * refuses it. */
static enum wh_err lws_tpu_env_subgroup(cJSON *pod, const struct wh_lws_sg *sg, long size,
                                        const char *leader, long w, bool leader_tpu,
                                        const char *sub, char *errbuf)
{
    cJSON *c = NULL;
    if (!lws_tpu_containers(pod, &c, 1) || has_env(c, "TPU_WORKER_HOSTNAMES") ||
        has_env(c, "TPU_WORKER_ID"))
        return WH_OK;
    long i = wh_lws_sg_index(sg, size, w), first, last, id;
    if (i < 0)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "leader pod %.253s requests google.com/tpu but subGroupPolicyType "
                       "LeaderExcluded gives it no subgroup: LWS's pod webhook refuses it; "
                       "request no google.com/tpu in spec.leaderWorkerTemplate.leaderTemplate "
                       "(a leader with TPUs makes no slice with subgroups, docs/workloads.md)",
                       leader);
    wh_lws_sg_span(sg, w, i, leader_tpu, &first, &last, &id);
    struct port one = {.text = has_env(c, "TPU_PROCESS_PORT") ? env_value(c, "TPU_PROCESS_PORT")
                                                              : "8476"};
    struct wh_buf list, procs;
    enum wh_err err = lws_hosts(&list, &procs, leader, sub, first, last, &one, 1);
    char ids[32];
    snprintf(ids, sizeof(ids), "%ld", id);
    if (!err)
        err = lws_identity(c, wh_buf_ptr(&list), ids, leader, wh_buf_ptr(&procs), one.text);
    wh_buf_free(&list);
    wh_buf_free(&procs);
    return err;
}

bool wh_workload_template_requests_tpu(const cJSON *tmpl)
{
    const cJSON *cs = wh_json_path(tmpl, "spec", "containers", NULL);
    char why[WH_ERRBUF_LEN];
    for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next) {
        /* A google.com/tpu that is not a quantity counts: the validation
         * denies it, so check must judge the object (issue 24). */
        struct wh_tpu_request rq;
        if (wh_container_tpu(c, &rq, why) != WH_OK || rq.requests_tpu)
            return true;
    }
    return false;
}

/* One LWS group's shape, as every pod of it is built. */
struct lws_group {
    const char *name, *ns, *policy; /* the LWS, its namespace, subdomainPolicy */
    bool unique;                    /* subdomainPolicy UniquePerReplica */
    bool leader_tpu;                /* the leader template requests TPUs */
    long size;
    struct wh_lws_sg sg;
    char leader[400], key[64], sz[32];
};

/* Pod w of group g: name, hostname, subdomain, the controllers' labels and
 * annotations, LWS's pod webhook's labels and variables. */
static enum wh_err lws_pod(cJSON *pod, const struct lws_group *g, long gi, long w, char *errbuf)
{
    char s[400];
    const char *sub = g->unique ? g->leader : g->name;
    if (w)
        snprintf(s, sizeof(s), "%.300s-%ld", g->leader, w);
    else
        snprintf(s, sizeof(s), "%s", g->leader);
    enum wh_err err = put(mapping(pod, "metadata"), "name", s);
    if (!err)
        err = put(mapping(pod, "spec"), "hostname", s);
    if (!err)
        err = put(mapping(pod, "spec"), "subdomain", sub);
    if (!err && g->unique)
        err = put_annotation(pod, LWS "subdomainPolicy", g->policy);
    if (!err)
        err = put_label(pod, LWS "name", g->name);
    snprintf(s, sizeof(s), "%ld", gi);
    if (!err)
        err = put_label(pod, LWS "group-index", s);
    snprintf(s, sizeof(s), "%ld", w);
    if (!err)
        err = put_label(pod, LWS "worker-index", s);
    if (!err)
        err = put_label(pod, LWS "group-key", g->key);
    if (!err)
        err = put_annotation(pod, LWS "size", g->sz);
    if (!err && w)
        err = put_annotation(pod, LWS "leader-name", g->leader);
    if (!err && w && g->leader_tpu)
        err = put_annotation(pod, LWS "leader-requests-tpus", "true");
    if (!err && g->sg.size)
        err = lws_subgroup_keys(pod, &g->sg, g->size, g->leader, w);
    snprintf(s, sizeof(s), "%.250s.%.63s.%.63s", g->leader, sub, g->ns);
    if (!err)
        err = each_container(pod, "LWS_LEADER_ADDRESS", s, NULL);
    if (!err)
        err = each_container(pod, "LWS_GROUP_SIZE", g->sz, NULL);
    snprintf(s, sizeof(s), "%ld", w);
    if (!err)
        err = each_container(pod, "LWS_WORKER_INDEX", s, NULL);
    if (err)
        return err;
    return g->sg.size
               ? lws_tpu_env_subgroup(pod, &g->sg, g->size, g->leader, w, g->leader_tpu, sub, errbuf)
               : lws_tpu_env(pod, g->leader, g->size, w, g->leader_tpu, sub);
}

static enum wh_err lws(const cJSON *obj, cJSON *out, char *errbuf)
{
    struct lws_group g = {.ns = ns_of(obj)};
    WH_TRY(name_of(obj, &g.name, errbuf));
    const cJSON *spec = wh_json_get(obj, "spec"), *lwt = wh_json_get(spec, "leaderWorkerTemplate");
    long replicas;
    WH_TRY(count(spec, "replicas", "spec", 1, &replicas, errbuf));
    WH_TRY(count(lwt, "size", "spec.leaderWorkerTemplate", 1, &g.size, errbuf));
    if (g.size < 1)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "spec.leaderWorkerTemplate.size is 0; it must be "
                       "at least 1");
    if (replicas * g.size > WH_WORKLOAD_MAX_PODS)
        return too_many(replicas * g.size, errbuf);
    WH_TRY(wh_lws_sg_parse(obj, g.size, &g.sg, errbuf));
    const cJSON *wt = wh_json_get(lwt, "workerTemplate"), *lt = wh_json_get(lwt, "leaderTemplate");
    if (!cJSON_IsObject(lt))
        lt = wt;
    g.leader_tpu = wh_workload_template_requests_tpu(lt);
    /* LWS's subdomainPolicy (docs/workloads.md, "What each controller puts
     * on a pod"): Shared, the default, is one headless Service named after
     * the LWS; UniquePerReplica is one per group, named after its leader. */
    g.policy = wh_json_str(wh_json_get(spec, "networkConfig"), "subdomainPolicy");
    g.unique = g.policy && !strcmp(g.policy, "UniquePerReplica");
    if (g.policy && !g.unique && strcmp(g.policy, "Shared"))
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "spec.networkConfig.subdomainPolicy is \"%.64s\"; expected \"Shared\" or "
                       "\"UniquePerReplica\"",
                       g.policy);
    snprintf(g.sz, sizeof(g.sz), "%ld", g.size);
    enum wh_err err = WH_OK;
    for (long gi = 0; gi < replicas && !err; gi++) {
        snprintf(g.leader, sizeof(g.leader), "%.250s-%ld", g.name, gi);
        fake_uid(g.ns, g.leader, g.key, sizeof(g.key));
        for (long w = 0; w < g.size && !err; w++) {
            cJSON *pod = pod_from_template(w ? wt : lt, g.ns);
            if (!pod || wh_json_add(out, pod))
                return WH_ERR_NOMEM;
            err = lws_pod(pod, &g, gi, w, errbuf);
        }
    }
    return err;
}

enum wh_err wh_workload_pods(const cJSON *obj, cJSON **pods, char *errbuf)
{
    *pods = NULL;
    const char *kind = wh_json_str0(obj, "kind");
    const struct wh_kind_def *def = wh_kind_find(kind);
    char kinds[160];
    if (!def || def->pods != WH_PODS_WORKLOAD)
        return wh_fail(errbuf, WH_ERR_KIND, "kind \"%.64s\" is not a %s", kind,
                       wh_kind_list_by_pods(kinds, sizeof(kinds), WH_PODS_BIT(WH_PODS_WORKLOAD),
                                            "or"));
    cJSON *out = cJSON_CreateArray();
    if (!out)
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    enum wh_err err = def->identity == WH_IDENTITY_JOB_INDEX ? job(obj, out, errbuf)
                      : def->identity == WH_IDENTITY_JOBSET  ? jobset(obj, out, errbuf)
                                                             : lws(obj, out, errbuf);
    if (err == WH_ERR_NOMEM)
        wh_fail(errbuf, err, "out of memory building the pods");
    if (err) {
        cJSON_Delete(out);
        return err;
    }
    *pods = out;
    return WH_OK;
}
