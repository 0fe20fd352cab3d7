/* workload.c: TPU pods of LeaderWorkerSets, JobSets, Indexed Jobs and single
 * pods (docs/workloads.md has the decision table and the worked examples).
 *
 * Unlike the KubeRay path, this path owns nothing: GKE, JobSet and LWS may
 * inject some of the same variables, so a variable is only ever added to a
 * TPU container that has no entry of that name (set, empty or valueFrom),
 * and the values mean what theirs mean (same worker order, same hostnames).
 * No pod-level field is written, so a second review yields no patch. Every
 * value is computed before any operation is emitted and a denial discards
 * the operations, so a patch is never partial. */
/* long: one pass per pod over four controller kinds sharing struct wl; split,
 * the struct would be every module's */
#include "wh/workload.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strncmp, strlen */

#include "wh/buf.h"       /* wh_buf */
#include "wh/decision.h"  /* WH_PATCH_MAX_BYTES */
#include "wh/json.h"      /* wh_json_* */
#include "wh/megascale.h" /* wh_megascale_world, wh_megascale_declared_port */
#include "wh/mutate.h"    /* wh_mutate_pod */
#include "wh/patch.h"     /* wh_env_writer */
#include "wh/podwarn.h"   /* wh_pod_warnings, wh_torch_* */
#include "wh/text.h"      /* wh_text */
#include "wh/podspec.h"   /* WH_SEL_*, wh_env_lookup */
#include "wh/topology.h"  /* wh_topology */
#include "wh/tpuenv.h"    /* wh_tpu_containers, wh_port_list */
#include "wh/utf8.h"      /* wh_utf8_cut, wh_utf8_trim_cut */

/* Keys the controllers put on the pods they create (docs/workloads.md). */
#define KEY_LWS_NAME "leaderworkerset.sigs.k8s.io/name"
#define KEY_LWS_WORKER_INDEX "leaderworkerset.sigs.k8s.io/worker-index"
#define KEY_LWS_SIZE "leaderworkerset.sigs.k8s.io/size"
#define KEY_LWS_LEADER_NAME "leaderworkerset.sigs.k8s.io/leader-name"
#define KEY_LWS_LEADER_TPUS "leaderworkerset.sigs.k8s.io/leader-requests-tpus"
#define KEY_LWS_SUBGROUP_SIZE "leaderworkerset.sigs.k8s.io/subgroup-size"
#define KEY_JS_NAME "jobset.sigs.k8s.io/jobset-name"
#define KEY_JS_RJOB "jobset.sigs.k8s.io/replicatedjob-name"
#define KEY_JS_RJOB_REPLICAS "jobset.sigs.k8s.io/replicatedjob-replicas"
#define KEY_JS_GLOBAL_REPLICAS "jobset.sigs.k8s.io/global-replicas"
#define KEY_JS_JOB_INDEX "jobset.sigs.k8s.io/job-index"
#define KEY_JOB_INDEX "batch.kubernetes.io/job-completion-index"
#define KEY_JOB_NAME "batch.kubernetes.io/job-name"
#define KEY_JOB_NAME_OLD "job-name"
#define KUBERAY_OPERATOR "kuberay-operator"

#define NAME_MAX_LEN 320

enum wh_workload_kind { WH_WL_KUBERAY, WH_WL_LWS, WH_WL_JOBSET, WH_WL_INDEXED_JOB, WH_WL_SINGLE };

struct wl {
    const cJSON *pod, *spec;
    const char *ns, *pod_name;
    enum wh_workload_kind kind;
    char who[768]; /* how messages name the pod and its workload */
    struct wh_tpu_containers tc;
    char topology[64];     /* the slice topology (annotation wins) */
    char accel[96];        /* "" when unknown */
    const char *topo_from; /* where the topology was read, for messages */
    struct wh_topology topo;
    bool tpu7x;
    long n_hosts; /* pods (hosts) of one slice */
    long host;    /* this pod's index in its slice */
    long n_slices, slice;
    bool identity;       /* TPU_WORKER_ID / TPU_WORKER_HOSTNAMES are ours to fill */
    struct wh_buf hosts; /* this slice's peers; "localhost" for one host */
    /* Built once for all TPU containers: TPU_PROCESS_ADDRESSES and
     * TORCH_TPU_SLICEBUILDER_ADDRESSES over hosts. */
    struct wh_port_list proc_addrs, torch_addrs;
    char master[NAME_MAX_LEN];       /* PET_MASTER_ADDR when torchrun spans the slices */
    char slice_master[NAME_MAX_LEN]; /* PET_MASTER_ADDR of a world of this slice only */
    bool megascale;                  /* MEGASCALE_NUM_SLICES may be filled */
    char coordinator[NAME_MAX_LEN];  /* MEGASCALE_COORDINATOR_ADDRESS */
    struct wh_decision *d;
};

/* Label first, then annotation (or the other way round). */
static const char *meta_value(const cJSON *pod, const char *key, bool annotation_first)
{
    const char *a = wh_meta_annotation(pod, key), *l = wh_meta_label(pod, key);
    return annotation_first ? (a ? a : l) : (l ? l : a);
}

/* The classification order of workload.h. */
static enum wh_workload_kind classify(const cJSON *pod)
{
    const char *created_by = wh_meta_label(pod, WH_LABEL_CREATED_BY);
    if (wh_meta_has_label(pod, WH_LABEL_CLUSTER) ||
        (created_by && !strcmp(created_by, KUBERAY_OPERATOR)))
        return WH_WL_KUBERAY;
    if (wh_meta_has_label(pod, KEY_LWS_NAME))
        return WH_WL_LWS;
    if (meta_value(pod, KEY_JS_NAME, false))
        return WH_WL_JOBSET;
    if (meta_value(pod, KEY_JOB_INDEX, true))
        return WH_WL_INDEXED_JOB;
    return WH_WL_SINGLE;
}

static const char *job_name(const cJSON *pod)
{
    const char *j = wh_meta_label(pod, KEY_JOB_NAME);
    return j && *j ? j : wh_meta_label(pod, KEY_JOB_NAME_OLD);
}

static void describe(struct wl *w)
{
    const char *owner = NULL, *kind = "Pod";
    switch (w->kind) {
    case WH_WL_LWS:
        owner = wh_meta_label(w->pod, KEY_LWS_NAME);
        kind = "LeaderWorkerSet";
        break;
    case WH_WL_JOBSET:
        owner = meta_value(w->pod, KEY_JS_NAME, false);
        kind = "JobSet";
        break;
    case WH_WL_INDEXED_JOB:
        owner = job_name(w->pod);
        kind = "Indexed Job";
        break;
    default:
        owner = job_name(w->pod);
        kind = owner ? "Job" : "Pod";
        break;
    }
    wh_event_subject_of(&w->d->subject, w->pod, w->ns, kind, owner);
    /* Cut on a character boundary: a split character makes the answer
     * invalid UTF-8. */
    int pl = (int)wh_utf8_cut(w->pod_name, 253);
    if (owner && *owner)
        snprintf(w->who, sizeof(w->who), "%s \"%s/%.*s\" (pod \"%.*s\")", kind, w->ns,
                 (int)wh_utf8_cut(owner, 253), owner, pl, w->pod_name);
    else
        snprintf(w->who, sizeof(w->who), "Pod \"%s/%.*s\"", w->ns, pl, w->pod_name);
    wh_utf8_trim_cut(w->who, sizeof(w->who)); /* a long namespace */
}

static enum wh_err deny(struct wl *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The decision's verdict is the only one: a step that denied the pod has
 * cleared d->allowed (wh_decision_deny), and the steps after it are skipped. */
static bool denied(const struct wl *w)
{
    return !w->d->allowed;
}

/* "<who>: <message>". */
static enum wh_err deny(struct wl *w, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    wh_utf8_trim_cut(msg, sizeof(msg));
    return wh_decision_deny(w->d, "%s: %s", w->who, msg);
}

/* Admit unchanged: a short warning (what to do) for the user, the full
 * text (who, why, what to do) for the log and the workload's Event. */
static enum wh_err skip(struct wl *w, bool *skipped, enum wh_pod_warning k, const char *why)
{
    *skipped = true;
    const char *todo = wh_pod_warnings[k].fix + strlen("no TPU env injected: ");
    enum wh_err err = wh_decision_warn(w->d, "%s", wh_pod_warnings[k].fix);
    if (!err)
        err = wh_decision_note(w->d, "%s: no TPU variables injected: %s; %s", w->who, why, todo);
    wh_decision_event(w->d, wh_pod_warnings[k].reason, "%s: no TPU variables injected: %s; %s",
                      w->who, why, todo);
    return err;
}

/* ---- topology and generation ------------------------------------------ */

struct pool_scan {
    const char *pool;
    char accel[96], topology[64];
};

static int pool_node(void *arg, const struct wh_node_rec *n)
{
    struct pool_scan *ps = arg;
    const char *pool = wh_node_label(n, WH_KEY_NODEPOOL);
    if (!pool || strcmp(pool, ps->pool))
        return 0;
    const char *a = wh_node_label(n, WH_SEL_ACCELERATOR), *t = wh_node_label(n, WH_SEL_TOPOLOGY);
    snprintf(ps->accel, sizeof(ps->accel), "%s", a ? a : "");
    snprintf(ps->topology, sizeof(ps->topology), "%s", t ? t : "");
    return 1;
}

/* Step 3 of docs/workloads.md: a pod that names its node pool but not its
 * accelerator or topology gets them from the pool's TPU nodes. */
static enum wh_err from_node_pool(struct wl *w, const struct wh_state *st, char *errbuf)
{
    const char *pool = wh_node_selector(w->spec, WH_KEY_NODEPOOL);
    if (!pool || !*pool || !st || !st->ops || !st->ops->each_node)
        return WH_OK;
    struct pool_scan ps = {.pool = pool};
    enum wh_err err = st->ops->each_node(st->impl, pool_node, &ps, errbuf);
    if (err)
        return err;
    if (!*w->accel)
        snprintf(w->accel, sizeof(w->accel), "%s", ps.accel);
    if (!*w->topology && *ps.topology) {
        snprintf(w->topology, sizeof(w->topology), "%s", ps.topology);
        w->topo_from = "the TPU nodes of node pool";
    }
    return WH_OK;
}

/* The first TPU container's preset TORCH_TPU_TOPOLOGY, "" when none. */
static const char *preset_topology(const struct wl *w)
{
    struct wh_env_lookup lk;
    wh_env_lookup(wh_json_get(w->tc.items[0].obj, "env"), "TORCH_TPU_TOPOLOGY", &lk);
    return lk.value;
}

/* The workload path's topology rule, which differs on purpose from the
 * KubeRay path's (mutate.c, before wh_slice_topology, says why): an empty
 * annotation counts as absent, the node pool's TPU nodes are asked last,
 * and an unknown topology skips the pod (admitted unchanged, a warning). */
static enum wh_err read_topology(struct wl *w, const struct wh_state *st, bool *skipped,
                                 char *errbuf)
{
    const char *t = wh_meta_annotation(w->pod, WH_ANN_SLICE_TOPOLOGY);
    w->topo_from = "annotation \"" WH_ANN_SLICE_TOPOLOGY "\"";
    if (!t || !*t) {
        t = wh_node_selector(w->spec, WH_SEL_TOPOLOGY);
        w->topo_from = "spec.nodeSelector[\"" WH_SEL_TOPOLOGY "\"]";
    }
    snprintf(w->topology, sizeof(w->topology), "%s", t ? t : "");
    const char *a = wh_node_selector(w->spec, WH_SEL_ACCELERATOR);
    snprintf(w->accel, sizeof(w->accel), "%s", a ? a : "");
    enum wh_err err = WH_OK;
    if (!*w->topology || !*w->accel)
        err = from_node_pool(w, st, errbuf);
    if (err)
        return err;
    if (!*w->topology)
        return skip(w, skipped, WH_PW_TOPOLOGY_UNKNOWN, "the TPU topology is unknown");
    char why[WH_ERRBUF_LEN];
    if (wh_topology_parse(w->topology, &w->topo, why))
        return deny(w, "%s: %s; use the form AxB or AxBxC, for example \"2x2x1\" or \"4x4\"",
                    w->topo_from, why);
    if (*w->accel) {
        /* The generation table's rules (topology.h); a pod of a workload the
         * validating entry did not see is refused here, before it hangs. */
        struct wh_tpu_shape shape = {.accel = w->accel,
                                     .accel_field = "spec.nodeSelector[\"" WH_SEL_ACCELERATOR "\"]",
                                     .topology = w->topology,
                                     .topo_field = w->topo_from,
                                     .chips = w->tc.chips,
                                     .chips_field = "the TPU containers' google.com/tpu"};
        struct wh_topology parsed;
        const struct wh_tpu_gen_info *gen;
        struct wh_shape_problem p;
        if (!wh_tpu_shape_check(&shape, &parsed, &gen, &p))
            return deny(w, "%s", p.text);
        w->tpu7x = gen->devices_per_chip == 2;
        return WH_OK;
    }
    /* No accelerator: a preset TorchTPU topology still tells TPU7x (4
     * fields, two devices per chip) from the others (3 fields). */
    long product;
    int fields = wh_torch_fields(preset_topology(w), &product);
    if (fields == 4 || fields == 3) {
        w->tpu7x = fields == 4;
        return WH_OK;
    }
    return skip(w, skipped, WH_PW_GENERATION_UNKNOWN, "the TPU generation is unknown");
}

/* ---- identity per kind ---------------------------------------------------- */

/* A whole number >= 0 from a label/annotation; denial naming it otherwise. */
static enum wh_err index_of(struct wl *w, const char *key, const char *v, long *out)
{
    if (!wh_parse_long(v, out) || *out < 0)
        return deny(w,
                    "\"%s\" is \"%s\", not a whole number >= 0; it is set by the "
                    "controller that creates the pod, remove the hand-written value",
                    key, v ? v : "(absent)");
    return WH_OK;
}

/* Peer list "<prefix><k>.<subdomain>" for k < n. */
static enum wh_err dns_list(struct wl *w, const char *prefix, long n, const char *subdomain)
{
    enum wh_err err = wh_buf_reserve(&w->hosts,
                                     (size_t)n * (strlen(prefix) + strlen(subdomain) + 8));
    for (long k = 0; k < n && !err; k++)
        err = wh_buf_addf(&w->hosts, "%s%s%ld.%s", k ? "," : "", prefix, k, subdomain);
    return err;
}

static const char *subdomain_of(const struct wl *w)
{
    const char *s = wh_json_str(w->spec, "subdomain");
    return s && *s ? s : NULL;
}

static enum wh_err single_host(struct wl *w)
{
    w->identity = w->kind != WH_WL_LWS;
    snprintf(w->master, sizeof(w->master), "localhost");
    return wh_buf_add(&w->hosts, "localhost");
}

static enum wh_err indexed_job(struct wl *w)
{
    long index;
    const char *v = meta_value(w->pod, KEY_JOB_INDEX, true);
    enum wh_err err = index_of(w, KEY_JOB_INDEX, v, &index);
    if (err || denied(w))
        return err;
    if (w->n_hosts == 1)
        return single_host(w); /* independent single-host pods */
    const char *job = job_name(w->pod), *sub = subdomain_of(w);
    if (!job || !*job)
        return deny(w,
                    "label \"%s\" is missing, so the names of the %ld hosts of the "
                    "slice are unknown; let the Job controller create the pod",
                    KEY_JOB_NAME, w->n_hosts);
    if (!sub)
        return deny(w,
                    "spec.subdomain is empty but topology %s with %ld chips per pod "
                    "needs %ld hosts that reach each other by name; set "
                    "spec.template.spec.subdomain to a headless Service selecting "
                    "job-name=%s",
                    w->topology, w->tc.chips, w->n_hosts, job);
    if (index >= w->n_hosts)
        return deny(w,
                    "completion index %ld is beyond the %ld hosts of topology %s with "
                    "%ld chips per pod; set parallelism and completions to %ld",
                    index, w->n_hosts, w->topology, w->tc.chips, w->n_hosts);
    w->identity = true;
    w->host = index;
    char prefix[NAME_MAX_LEN];
    snprintf(prefix, sizeof(prefix), "%.250s-", job);
    snprintf(w->master, sizeof(w->master), "%.250s-0.%.63s", job, sub);
    return dns_list(w, prefix, w->n_hosts, sub);
}

static enum wh_err jobset(struct wl *w)
{
    const char *js = meta_value(w->pod, KEY_JS_NAME, false);
    const char *rj = meta_value(w->pod, KEY_JS_RJOB, false);
    const char *rep_s = meta_value(w->pod, KEY_JS_RJOB_REPLICAS, false);
    const char *glob_s = meta_value(w->pod, KEY_JS_GLOBAL_REPLICAS, false);
    long index, job, replicas = 1, global = -1;
    enum wh_err err = index_of(w, KEY_JOB_INDEX, meta_value(w->pod, KEY_JOB_INDEX, true), &index);
    if (!err && !denied(w))
        err = index_of(w, KEY_JS_JOB_INDEX, meta_value(w->pod, KEY_JS_JOB_INDEX, false), &job);
    if (!err && !denied(w) && rep_s)
        err = index_of(w, KEY_JS_RJOB_REPLICAS, rep_s, &replicas);
    if (!err && !denied(w) && glob_s)
        err = index_of(w, KEY_JS_GLOBAL_REPLICAS, glob_s, &global);
    if (err || denied(w))
        return err;
    if (!rj || !*rj)
        return deny(w, "label \"%s\" is missing; let the JobSet controller create the pod",
                    KEY_JS_RJOB);
    if (replicas < 1 || job >= replicas)
        return deny(w,
                    "\"%s\" is %ld but \"%s\" is %ld; let the JobSet controller create "
                    "the pod",
                    KEY_JS_JOB_INDEX, job, KEY_JS_RJOB_REPLICAS, replicas);
    if (index >= w->n_hosts)
        return deny(w,
                    "completion index %ld is beyond the %ld hosts of topology %s with "
                    "%ld chips per pod; set parallelism and completions of replicated "
                    "job \"%s\" to %ld",
                    index, w->n_hosts, w->topology, w->tc.chips, rj, w->n_hosts);
    w->identity = true;
    w->host = index;
    w->slice = job;
    w->n_slices = replicas;
    if (w->n_hosts * replicas == 1)
        return single_host(w);
    const char *sub = subdomain_of(w);
    if (!sub)
        return deny(w,
                    "spec.subdomain is empty but the %ld pods of replicated job \"%s\" "
                    "must reach each other by name; do not set "
                    "spec.network.enableDNSHostnames to false",
                    w->n_hosts * replicas, rj);
    snprintf(w->master, sizeof(w->master), "%.120s-%.60s-0-0.%.63s", js, rj, sub);
    if (w->n_hosts == 1)
        snprintf(w->slice_master, sizeof(w->slice_master), "localhost");
    else
        snprintf(w->slice_master, sizeof(w->slice_master), "%.120s-%.60s-%ld-0.%.63s", js, rj, job,
                 sub);
    /* With other replicated jobs in the JobSet the slice count is ambiguous
     * (per replicated job or global): only a declared MEGASCALE_NUM_SLICES
     * turns MEGASCALE_* on then. */
    w->megascale = replicas > 1 && (global < 0 || global == replicas);
    snprintf(w->coordinator, sizeof(w->coordinator), "%s", w->master);
    if (w->n_hosts == 1)
        return wh_buf_add(&w->hosts, "localhost");
    char prefix[NAME_MAX_LEN];
    snprintf(prefix, sizeof(prefix), "%.120s-%.60s-%ld-", js, rj, job);
    return dns_list(w, prefix, w->n_hosts, sub);
}

/* The index after "<leader>-" in a worker pod's name. */
static bool worker_index_from_name(const char *name, const char *leader, long *out)
{
    size_t ll = strlen(leader);
    if (!strcmp(name, leader)) {
        *out = 0;
        return true;
    }
    return !strncmp(name, leader, ll) && name[ll] == '-' && wh_parse_long(name + ll + 1, out) &&
           *out > 0;
}

static enum wh_err lws(struct wl *w, bool *skipped)
{
    if (wh_meta_has_annotation(w->pod, KEY_LWS_SUBGROUP_SIZE))
        return skip(w, skipped, WH_PW_LWS_SUBGROUPS, "LeaderWorkerSet subgroups are not supported");
    const char *leader = wh_meta_annotation(w->pod, KEY_LWS_LEADER_NAME);
    bool is_leader = !leader;
    if (is_leader)
        leader = w->pod_name;
    const char *tpus = wh_meta_annotation(w->pod, KEY_LWS_LEADER_TPUS);
    bool leader_tpu = is_leader || (tpus && !strcmp(tpus, "true"));
    long size = -1, worker;
    const char *size_s = wh_meta_annotation(w->pod, KEY_LWS_SIZE);
    enum wh_err err = size_s ? index_of(w, KEY_LWS_SIZE, size_s, &size) : WH_OK;
    if (err || denied(w))
        return err;
    const char *wi = wh_meta_label(w->pod, KEY_LWS_WORKER_INDEX);
    if (wi)
        err = index_of(w, KEY_LWS_WORKER_INDEX, wi, &worker);
    else if (!worker_index_from_name(w->pod_name, leader, &worker))
        return deny(w,
                    "no label \"%s\" and the pod name \"%s\" is not \"%s-<index>\"; let "
                    "the LeaderWorkerSet controller create the pod",
                    KEY_LWS_WORKER_INDEX, w->pod_name, leader);
    if (err || denied(w))
        return err;
    long tpu_hosts = size - (leader_tpu ? 0 : 1);
    if (size >= 0 && tpu_hosts != w->n_hosts)
        return deny(w,
                    "size %ld gives %ld TPU hosts per group but topology %s with %ld "
                    "chips per pod needs %ld; set spec.leaderWorkerTemplate.size to %ld",
                    size, tpu_hosts, w->topology, w->tc.chips, w->n_hosts,
                    w->n_hosts + (leader_tpu ? 0 : 1));
    w->host = worker - (leader_tpu ? 0 : 1);
    if (w->host < 0 || w->host >= w->n_hosts)
        return deny(w, "worker index %ld is outside the group's %ld TPU hosts", worker, w->n_hosts);
    if (w->n_hosts == 1)
        return single_host(w);
    const char *sub = subdomain_of(w);
    if (!sub)
        return deny(w,
                    "spec.subdomain is empty but the %ld hosts of the group must reach "
                    "each other by name; let the LeaderWorkerSet controller create "
                    "the pod",
                    w->n_hosts);
    /* LWS's own order: the leader (when it has TPUs), then -1 .. -(size-1). */
    for (long k = 0; k < w->n_hosts && !err; k++) {
        long ord = k + (leader_tpu ? 0 : 1);
        if (ord == 0)
            err = wh_buf_addf(&w->hosts, "%s.%s", leader, sub);
        else
            err = wh_buf_addf(&w->hosts, "%s%s-%ld.%s", k ? "," : "", leader, ord, sub);
    }
    const char *comma = strchr(wh_buf_ptr(&w->hosts), ',');
    size_t first = comma ? (size_t)(comma - wh_buf_ptr(&w->hosts)) : wh_buf_len(&w->hosts);
    snprintf(w->master, sizeof(w->master), "%.*s", (int)(first < NAME_MAX_LEN ? first : 0),
             wh_buf_ptr(&w->hosts));
    return err;
}

/* ---- per-container env ------------------------------------------------ */

struct cenv {
    struct wl *w;
    unsigned ci;
    const cJSON *env;
    struct wh_env_writer wr;
};

/* Add name=value unless the container has an entry of that name. */
static enum wh_err add(struct cenv *c, const char *name, const char *value)
{
    struct wh_env_lookup lk;
    wh_env_lookup(c->env, name, &lk);
    return lk.first_index >= 0 ? WH_OK : wh_env_set(&c->wr, name, value);
}

static enum wh_err addl(struct cenv *c, const char *name, long v)
{
    char s[24];
    struct wh_text t;
    wh_text_init(&t, s, sizeof(s));
    wh_text_addl(&t, v);
    return add(c, name, s);
}

static enum wh_err identity_env(struct cenv *c)
{
    struct wl *w = c->w;
    if (!w->identity)
        return WH_OK;
    enum wh_err err = addl(c, "TPU_WORKER_ID", wh_tpu_worker_id(w->host, w->tc.n, c->ci, w->tpu7x));
    if (!err)
        err = add(c, "TPU_WORKER_HOSTNAMES", wh_buf_ptr(&w->hosts));
    if (err || !w->tpu7x || (w->n_hosts == 1 && w->tc.n < 2))
        return err;
    /* TPU7x: one JAX process per TPU container (as on the KubeRay path,
     * docs/internals/reference-behaviour.md §2.7.5). */
    struct wh_env_lookup lk;
    wh_env_lookup(c->env, "TPU_PROCESS_ADDRESSES", &lk);
    if (lk.first_index < 0) {
        const char *addrs;
        bool too_many;
        err = wh_port_list_get(&w->proc_addrs, w->d, wh_buf_ptr(&w->hosts), (long)w->tc.n,
                               WH_PATCH_MAX_BYTES, &addrs, &too_many);
        if (!err && !too_many)
            err = wh_env_set(&c->wr, "TPU_PROCESS_ADDRESSES", addrs);
    }
    if (!err)
        err = addl(c, "TPU_PROCESS_PORT", WH_TPU_PROCESS_PORT_BASE + (long)c->ci);
    return err;
}

/* The slices a TPU container's MEGASCALE_* joins (megascale.h); the
 * torchrun world (PET_*) is the same set of slices. */
static enum wh_ms_world world_of(const struct wl *w, const cJSON *env, const char **declared)
{
    *declared = "";
    if (w->kind != WH_WL_JOBSET || !*w->coordinator)
        return WH_MS_SLICE;
    return wh_megascale_world(env, w->n_slices, w->megascale, declared);
}

/* TPU7x with several TPU containers: each libtpu process binds its own
 * MEGASCALE_PORT in the pod's one network, base + container index as on
 * the KubeRay path (docs/internals/reference-behaviour.md §2.7.4). */
static bool per_container_ports(const struct wl *w)
{
    return w->tpu7x && w->tc.n > 1;
}

static long megascale_port(const struct wl *w, unsigned ci)
{
    long p = wh_megascale_declared_port(wh_json_get(w->tc.items[ci].obj, "env"));
    return p >= 0 ? p : WH_MEGASCALE_PORT + (long)ci;
}

/* MEGASCALE_* (docs/workloads.md, JobSet): filled when the replicated job
 * has more than one slice, or when the user declared MEGASCALE_NUM_SLICES
 * with a value; a declared empty MEGASCALE_NUM_SLICES turns them off. */
static enum wh_err megascale_env(struct cenv *c)
{
    struct wl *w = c->w;
    const char *declared;
    if (world_of(w, c->env, &declared) == WH_MS_SLICE)
        return WH_OK;
    struct wh_env_lookup lk;
    wh_env_lookup(c->env, "MEGASCALE_NUM_SLICES", &lk);
    enum wh_err err = lk.first_index < 0 ? addl(c, "MEGASCALE_NUM_SLICES", w->n_slices) : WH_OK;
    if (!err)
        err = addl(c, "MEGASCALE_SLICE_ID", w->slice);
    if (err || !per_container_ports(w))
        return err ? err : add(c, "MEGASCALE_COORDINATOR_ADDRESS", w->coordinator);
    /* The coordinator is slice 0's worker 0: container 0, on its port. */
    char coordinator[NAME_MAX_LEN + 24];
    snprintf(coordinator, sizeof(coordinator), "%s:%ld", w->coordinator, megascale_port(w, 0));
    err = add(c, "MEGASCALE_COORDINATOR_ADDRESS", coordinator);
    if (!err)
        err = addl(c, "MEGASCALE_PORT", megascale_port(w, c->ci));
    return err;
}

static enum wh_err torch_env(struct cenv *c)
{
    struct wl *w = c->w;
    char topo[96];
    wh_torch_topology(&w->topo, w->tpu7x, topo, sizeof(topo));
    long per_chip = w->tpu7x ? 2 : 1;
    long per_host = w->topo.chips / w->n_hosts * per_chip; /* processes of the pod */
    struct wh_env_lookup lk;
    wh_env_lookup(c->env, "TORCH_TPU_TOPOLOGY", &lk);
    enum wh_err err = WH_OK;
    if (lk.first_index < 0) {
        err = add(c, "TORCH_TPU_TOPOLOGY", topo);
    } else if (*lk.value && strcmp(lk.value, topo)) {
        /* Kept: the user's grid is what torch_tpu will use, so the address
         * list follows it when it divides over the hosts. */
        long product;
        if (wh_torch_fields(lk.value, &product) && product % w->n_hosts == 0)
            per_host = product / w->n_hosts;
        if (*w->accel) {
            const char *cname = wh_json_str0(w->tc.items[c->ci].obj, "name");
            char text[WH_WARNING_MAX + 1];
            wh_torch_kept_text(text, sizeof(text), cname, lk.value, w->topology, topo);
            err = wh_decision_warn_text(w->d, text);
            if (!err)
                err = wh_decision_note(w->d,
                                       "%s: container \"%s\": preset TORCH_TPU_TOPOLOGY "
                                       "\"%s\" kept although topology %s gives \"%s\"",
                                       w->who, cname, lk.value, w->topology, topo);
            wh_decision_event(w->d, wh_pod_warnings[WH_PW_TORCH_TOPOLOGY].reason,
                              "%s: container \"%s\": preset TORCH_TPU_TOPOLOGY \"%.32s\" kept "
                              "although topology %s gives \"%s\"; remove it from the "
                              "template or set \"%s\"",
                              w->who, cname, lk.value, w->topology, topo, topo);
        }
    }
    wh_env_lookup(c->env, "TORCH_TPU_SLICEBUILDER_ADDRESSES", &lk);
    if (!err && lk.first_index < 0) {
        const char *addrs;
        bool too_many;
        err = wh_port_list_get(&w->torch_addrs, w->d, wh_buf_ptr(&w->hosts), per_host,
                               WH_PATCH_MAX_BYTES, &addrs, &too_many);
        if (!err && too_many)
            err = deny(w,
                       "TORCH_TPU_SLICEBUILDER_ADDRESSES for topology %s would have "
                       "more than %ld entries; set it in the container to skip it",
                       w->topology, WH_MAX_TORCH_ADDRESSES);
        else if (!err)
            err = wh_env_set(&c->wr, "TORCH_TPU_SLICEBUILDER_ADDRESSES", addrs);
    }
    if (err || denied(w))
        return err;
    /* torchrun defaults (PET_*). Each TPU container of a multi-container
     * pod is one torchrun node, as it is one TPU worker. Never WORLD_SIZE,
     * RANK or LOCAL_RANK: torch_tpu turns distributed when WORLD_SIZE is set. */
    long n = (long)w->tc.n;
    long nproc = n > 1 ? w->tc.items[c->ci].chips * per_chip : per_host;
    const char *declared;
    enum wh_ms_world world = world_of(w, c->env, &declared);
    if (world == WH_MS_OWN) { /* the slices and their order are the user's */
        char text[WH_WARNING_MAX + 1];
        wh_megascale_own_text(text, sizeof(text), wh_json_str0(w->tc.items[c->ci].obj, "name"));
        err = wh_decision_warn_text(w->d, text);
        wh_decision_event(w->d, wh_pod_warnings[WH_PW_MEGASCALE_OWN].reason,
                          "%s: %s; torchrun's world is then not the webhook's to set", w->who, text);
    }
    /* torchrun's world is the slices MEGASCALE joins: one slice without it. */
    bool all = world == WH_MS_REPLICAS;
    if (!err && world != WH_MS_OWN)
        err = addl(c, "PET_NNODES", w->n_hosts * (all ? w->n_slices : 1) * n);
    if (!err && world != WH_MS_OWN)
        err = addl(c, "PET_NODE_RANK",
                   ((all ? w->slice * w->n_hosts : 0) + w->host) * n + (long)c->ci);
    if (!err && world != WH_MS_OWN)
        err = add(c, "PET_MASTER_ADDR", all ? w->master : w->slice_master);
    if (!err)
        err = addl(c, "PET_MASTER_PORT", WH_TORCH_MASTER_PORT);
    if (!err)
        err = addl(c, "PET_NPROC_PER_NODE", nproc);
    return err;
}

/* ---- entry -------------------------------------------------------------- */

/* About the patch's size, to size its text once: per TPU container the
 * host list, TPU7x's process addresses and the TorchTPU addresses (one per
 * chip, two on TPU7x, each about a host list entry and a port), a quarter
 * more for the rest. */
static size_t patch_estimate(const struct wl *w)
{
    size_t hosts = wh_buf_len(&w->hosts), mult = w->tpu7x ? 2 : 1;
    size_t entry = hosts / (size_t)(w->n_hosts > 0 ? w->n_hosts : 1) + 6;
    size_t per = 1024 + hosts * mult +
                 (size_t)(w->topo.chips > 0 ? w->topo.chips : 0) * mult * entry;
    return (per + per / 4) * w->tc.n;
}

/* One world (docs/workloads.md): the slice count MEGASCALE is given is the
 * replicated job's, and the libtpu processes of one pod bind distinct
 * MEGASCALE ports. */
static enum wh_err one_world(struct wl *w)
{
    for (unsigned i = 0; i < w->tc.n; i++) {
        const cJSON *env = wh_json_get(w->tc.items[i].obj, "env");
        const char *declared, *name = wh_json_str0(w->tc.items[i].obj, "name");
        enum wh_ms_world world = world_of(w, env, &declared);
        if (world == WH_MS_CONFLICT)
            return deny(w,
                        "container \"%s\" (spec.containers[%d]) sets MEGASCALE_NUM_SLICES "
                        "\"%.32s\" but replicated job \"%s\" has %ld slices (label %s), so its "
                        "slices would wait for ones that never join; remove it (the webhook "
                        "sets %ld), or set it to \"\" for independent slices",
                        name, w->tc.items[i].index, declared, meta_value(w->pod, KEY_JS_RJOB, false),
                        w->n_slices, KEY_JS_RJOB_REPLICAS, w->n_slices);
        if (world == WH_MS_SLICE)
            continue;
        /* Every slice of the replicated job is made from one template: a
         * literal slice id is the same in all of them. One equal to the job
         * index is this pod's own (the webhook's, on reinvocation). */
        struct wh_env_lookup id;
        long idn;
        wh_env_lookup(env, "MEGASCALE_SLICE_ID", &id);
        if (w->n_slices > 1 && *id.value && !(wh_parse_long(id.value, &idn) && idn == w->slice))
            return deny(w,
                        "container \"%s\" (spec.containers[%d]) sets MEGASCALE_SLICE_ID \"%.32s\" "
                        "but the %ld slices of replicated job \"%s\" share one template, so "
                        "they all get that id; remove it (the webhook sets the job index), or "
                        "set it with a valueFrom",
                        name, w->tc.items[i].index, id.value, w->n_slices,
                        meta_value(w->pod, KEY_JS_RJOB, false));
        if (!per_container_ports(w))
            continue;
        for (unsigned k = 0; k < i; k++)
            if (megascale_port(w, k) == megascale_port(w, i))
                return deny(w,
                            "TPU containers \"%s\" and \"%s\" both use MEGASCALE_PORT %ld in "
                            "the pod's one network; remove MEGASCALE_PORT (the webhook gives "
                            "%ld + the container's index) or give each its own",
                            wh_json_str0(w->tc.items[k].obj, "name"), name, megascale_port(w, i),
                            (long)WH_MEGASCALE_PORT);
    }
    return WH_OK;
}

/* One identity per slice (docs/workloads.md): a single-host identity in a
 * container of a multi-host pod contradicts the peers built here; and the
 * names built here must resolve (hostNetwork needs ClusterFirstWithHostNet). */
static enum wh_err one_identity(struct wl *w)
{
    for (unsigned i = 0; i < w->tc.n; i++) {
        struct wh_identity_check ic = {.hosts = w->n_hosts,
                                       .host = w->host,
                                       .worker_id = wh_tpu_worker_id(w->host, w->tc.n, i, w->tpu7x),
                                       .check_id = true};
        struct wh_identity_problem ip[2];
        int n = wh_identity_conflicts(wh_json_get(w->tc.items[i].obj, "env"), &ic, ip);
        if (n)
            return deny(w, "container \"%s\" (spec.containers[%d]) %s%s%s",
                        wh_json_str0(w->tc.items[i].obj, "name"), w->tc.items[i].index, ip[0].text,
                        n > 1 ? "; it also " : "", n > 1 ? ip[1].text : "");
    }
    char dns[640]; /* names that resolve */
    if (wh_hostnet_dns_conflict(w->spec, "spec", w->n_hosts * w->n_slices, dns, sizeof(dns)))
        return deny(w, "%s", dns);
    return one_world(w);
}

/* Issue 10: the kubelet uses the last entry of a name, the lookup the first. */
static enum wh_err env_duplicates(struct wl *w)
{
    for (unsigned i = 0; i < w->tc.n; i++) {
        int first, second;
        const char *name = wh_env_duplicate(wh_json_get(w->tc.items[i].obj, "env"), &first, &second);
        if (name)
            return deny(w,
                        "container \"%s\" sets %s twice (spec.containers[%d].env[%d] "
                        "and env[%d]); the kubelet uses the last one and the webhook "
                        "edits one of them, so the value the container gets is "
                        "ambiguous; keep one %s entry",
                        wh_json_str0(w->tc.items[i].obj, "name"), name, w->tc.items[i].index, first,
                        second, name);
    }
    return WH_OK;
}

static enum wh_err decide(struct wl *w, const struct wh_state *st, char *errbuf)
{
    bool skipped = false;
    const cJSON *containers = wh_json_get(w->spec, "containers");
    if (!cJSON_IsArray(containers))
        return WH_OK; /* no containers: nothing to inject (the API server refuses it) */
    char why[WH_ERRBUF_LEN];
    enum wh_err err = wh_tpu_containers_collect(containers, &w->tc, why);
    if (err == WH_ERR_INVALID)
        return deny(w, "%s", why);
    if (err || w->tc.n == 0)
        return err; /* no TPU: admitted unchanged */
    w->d->n_tpu_containers = w->tc.n;
    if ((err = env_duplicates(w)) || denied(w))
        return err;
    if ((err = read_topology(w, st, &skipped, errbuf)) || denied(w) || skipped)
        return err;
    if (w->tc.chips > w->topo.chips || w->topo.chips % w->tc.chips)
        return deny(w,
                    "the pod's TPU containers request %ld google.com/tpu in all, which "
                    "does not divide the %ld chips of topology %s (%s); request a "
                    "divisor of %ld chips per pod",
                    w->tc.chips, w->topo.chips, w->topology, w->topo_from, w->topo.chips);
    w->n_hosts = w->topo.chips / w->tc.chips;
    if (w->n_hosts > WH_MAX_HOSTS)
        return deny(w,
                    "topology %s with %ld chips per pod gives %ld hosts; at most %ld "
                    "are supported; request more google.com/tpu per pod",
                    w->topology, w->tc.chips, w->n_hosts, WH_MAX_HOSTS);
    w->n_slices = 1;
    switch (w->kind) {
    case WH_WL_LWS: err = lws(w, &skipped); break;
    case WH_WL_JOBSET: err = jobset(w); break;
    case WH_WL_INDEXED_JOB: err = indexed_job(w); break;
    default:
        if (w->n_hosts > 1) {
            char what[256];
            snprintf(what, sizeof(what),
                     "%ld of the %ld chips of topology %s is one of %ld hosts "
                     "or part of one host",
                     w->tc.chips, w->topo.chips, w->topology, w->n_hosts);
            return skip(w, &skipped, WH_PW_NOT_INDEXED, what);
        }
        err = single_host(w);
        break;
    }
    if (err || denied(w) || skipped)
        return err;
    if (!*w->slice_master)
        snprintf(w->slice_master, sizeof(w->slice_master), "%s", w->master);
    if ((err = one_identity(w)) || denied(w))
        return err;
    w->d->host = w->host;
    w->d->n_hosts = w->n_hosts;
    w->d->replica = w->slice;
    w->d->worker_id = w->identity ? wh_tpu_worker_id(w->host, w->tc.n, 0, w->tpu7x) : -1;
    err = wh_patch_reserve(w->d, patch_estimate(w));
    for (unsigned i = 0; i < w->tc.n && !err && !denied(w); i++) {
        struct cenv c = {.w = w, .ci = i, .env = wh_json_get(w->tc.items[i].obj, "env")};
        wh_env_writer_init(&c.wr, w->d, w->tc.items[i].index, c.env);
        err = identity_env(&c);
        if (!err)
            err = megascale_env(&c);
        if (!err)
            err = torch_env(&c);
    }
    /* The guard the KubeRay path has too: only names the API server accepts
     * (checked as the operations are written, patch.h). */
    if (!err && !denied(w) && w->d->bad_name)
        err = deny(w, "%s", w->d->bad_name);
    return err;
}

enum wh_err wh_mutate_workload(const struct wh_review *rv, const struct wh_state *st,
                               struct wh_decision *d, char *errbuf)
{
    const struct wh_review_info *in = wh_review_info(rv);
    const cJSON *pod = wh_json_get(wh_review_request(rv), "object");
    if (strcmp(in->operation, "CREATE"))
        return WH_OK; /* only creation is mutated */
    if (!cJSON_IsObject(pod))
        return wh_decision_deny(d, "request.object is not a Pod object; send the Pod being created");
    struct wl w = {.pod = pod, .spec = wh_json_get(pod, "spec"), .d = d};
    w.kind = classify(pod);
    if (w.kind == WH_WL_KUBERAY)
        return wh_mutate_pod(rv, st, d, errbuf);
    const char *optout = wh_meta_label(pod, WH_LABEL_INJECT);
    if (optout && !strcmp(optout, "disabled"))
        return WH_OK;
    w.ns = in->ns;
    /* As wh_mutate_pod's: the pod's own name or generateName. */
    w.pod_name = wh_meta_name(wh_json_get(pod, "metadata"));
    describe(&w);
    /* Every value is part of the patch, which stops at its limit (patch.h). */
    wh_buf_init(&w.hosts, WH_PATCH_MAX_BYTES);
    wh_port_list_init(&w.proc_addrs);
    wh_port_list_init(&w.torch_addrs);
    enum wh_err err = decide(&w, st, errbuf);
    if (err == WH_ERR_TOOBIG)
        err = deny(&w,
                   "the mutation patch for topology %s (%ld hosts; TPU containers "
                   "per pod: %u) would pass the %zu-byte limit of what the API server can "
                   "store (etcd keeps objects under 1.5 MiB); set "
                   "TORCH_TPU_SLICEBUILDER_ADDRESSES in the containers, or give each "
                   "pod one TPU container",
                   w.topology, w.n_hosts, w.tc.n, WH_PATCH_MAX_BYTES);
    wh_buf_free(&w.hosts);
    wh_port_list_free(&w.proc_addrs);
    wh_port_list_free(&w.torch_addrs);
    wh_tpu_containers_free(&w.tc);
    if (err) {
        wh_buf_free(&d->patch);
        d->n_ops = 0;
    }
    return err;
}
