/* workload_validate.c: Jobs, JobSets and LeaderWorkerSets whose TPU pod
 * template spans several hosts (docs/workloads.md, "Validation").
 *
 * Too many pods stay Pending forever, too few start and hang waiting for
 * peers on hardware billed by the hour; both are cheaper to refuse when the
 * object is written. Problems of every template are joined into one denial. */
/* long: every workload rule (Job, JobSet, LWS) shares the vctx that keys its
 * findings for the ratchet and carries its fix; split by kind behind a
 * private header when it grows. */
#include "wh/workload_validate.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, memset */

#include "wh/buf.h"        /* wh_buf */
#include "wh/envverdict.h" /* wh_env_judge, wh_env_rules, wh_torchrun_overridden, ... */
#include "wh/json.h"       /* wh_json_* */
#include "wh/kinds.h"      /* wh_kind_find */
#include "wh/megascale.h" /* wh_megascale_world, wh_megascale_joined_slices, wh_megascale_shared_slice_id, wh_megascale_shared_port */
#include "wh/podspec.h"   /* WH_SEL_*, WH_KEY_NODEPOOL, WH_ANN_SLICE_TOPOLOGY, wh_env_lookup */
#include "wh/podwarn.h"   /* wh_pod_warnings, wh_torch_*, wh_event_subject_object */
#include "wh/topology.h" /* wh_topology, wh_subslice_fits, wh_tpu_topology_undocumented, wh_tpu_gen_fit_list, wh_tpu_fits_text */
#include "wh/tpuenv.h"   /* wh_tpu_containers, wh_torch_topology, wh_env_duplicate, WH_MAX_* */
#include "wh/utf8.h"     /* wh_utf8_cut, wh_utf8_trim_cut */
#include "wh/violations.h"        /* wh_violations_add_fix, wh_suggest_edit */
#include "wh/workload.h"          /* WH_LABEL_INJECT */
#include "wh/workload_identity.h" /* wh_lws_subgroup_fault */
#include "wh/workload_topology.h" /* wh_pool_tpu_read, wh_subslice_exempt */

#define PROBLEMS_MAX (64 * 1024)
#define EXCLUSIVE_TOPOLOGY "alpha.jobset.sigs.k8s.io/exclusive-topology"

struct vctx {
    const char *kind, *ns, *name;
    const char *trainjob;          /* the TrainJob that made the object, NULL when none */
    const cJSON *labels;           /* the object's metadata.labels (a queue's managed mark) */
    const struct wh_kind_def *def; /* kind's row of wh_kinds (NULL: none) */
    struct wh_buf problems;
    size_t n_problems;
    bool full; /* the problems so far fill the message; the rest are counted */
    struct wh_decision *d;
    struct wh_violations *out; /* NULL when not asked for */
    const char *part;          /* the replicated job judged, "" for the object */
    const struct wh_state *st; /* the known TPU nodes; NULL when none */
    char *errbuf;              /* a failing state callback's reason */
    struct wh_suggestion fix;  /* the next problem's fix as data; vproblem takes it */
};

/* "<Kind> \"ns/name\": <problem>", joined by "; ". value: what the
 * ratchet compares (ratchet.h), NULL for the text itself, which names the
 * fields the rule reads; a rule whose text counts a JobSet's replicas gives
 * its own, without them. */
__attribute__((format(printf, 3, 0))) static enum wh_err vproblem(struct vctx *v, const char *value,
                                                                  const char *fmt, va_list ap)
{
    if (v->out) {
        char text[WH_VIOLATION_MESSAGE_MAX + 1];
        va_list aq;
        va_copy(aq, ap);
        vsnprintf(text, sizeof(text), fmt, aq);
        va_end(aq);
        enum wh_err err = wh_violations_add_fix(v->out, fmt, v->part, value ? value : text, text,
                                                &v->fix);
        WH_TRY(err);
    }
    if (v->fix.n)
        memset(&v->fix, 0, sizeof(v->fix)); /* it was this problem's */
    v->n_problems++;
    if (v->full)
        return WH_OK;
    /* Each problem is under 2 KiB (names and values are cut), so stopping
     * at half the limit never overflows the buffer. */
    if (v->problems.len > PROBLEMS_MAX / 2) {
        v->full = true;
        return wh_buf_add(&v->problems, "; and more problems of the same kind");
    }
    /* cut between characters: the answer must stay UTF-8 */
    enum wh_err err = wh_buf_addf(&v->problems,
                                  "%s%.64s \"%.*s/%.*s\": ", v->n_problems > 1 ? "; " : "", v->kind,
                                  (int)wh_utf8_cut(v->ns, 253), v->ns,
                                  (int)wh_utf8_cut(v->name, 253), v->name);
    return err ? err : wh_buf_vaddf(&v->problems, fmt, ap);
}

static enum wh_err problem(struct vctx *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum wh_err problem(struct vctx *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum wh_err err = vproblem(v, NULL, fmt, ap);
    va_end(ap);
    return err;
}

/* A problem whose ratchet value is value, not its text. */
static enum wh_err problem_valued(struct vctx *v, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum wh_err problem_valued(struct vctx *v, const char *value, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum wh_err err = vproblem(v, value, fmt, ap);
    va_end(ap);
    return err;
}

/* What a pod template implies: hosts per slice (0 when it requests no TPU
 * or its topology is unknown: nothing to check). */
struct tmpl_hosts {
    long slices;       /* in: the replicas of a JobSet replicated job, else 1 */
    bool fill;         /* in: the pods fill MEGASCALE_NUM_SLICES (megascale.h) */
    const char *label; /* in: how warnings name the template ("" for a Job's) */
    long made;         /* in: the pods it makes of a slice, 0 one per host (LWS's leaderTemplate
                        * makes 1, the group's rank 0) */
    long hosts, chips;
    const char *topology;
    bool tpu7x;     /* two devices per chip (the generation, or a 4-field TORCH_TPU_TOPOLOGY) */
    unsigned n_tpu; /* TPU containers */
    struct wh_pool_tpu pool; /* what the node pool's TPU nodes say (topology may point here) */
    /* in, for the fixes of the shape rules (violations.h): the template's
     * RFC 6901 pointer, and the fields that count its hosts (plus
     * hosts_plus), changed with its chips: a Job spec's parallelism and
     * completions, an LWS's size; named together as hosts_field. */
    const char *ptr;
    const char *count_ptr[2], *count_field[2];
    const char *hosts_field;
    long hosts_plus;
    const char *mode_ptr; /* a Job's completionMode, Indexed when hosts > 1; NULL: JobSet's default */
    const cJSON *job_spec;  /* the Job spec mode_ptr points into */
    bool mode_default;      /* an unset completionMode is Indexed (JobSet defaults it) */
    const char *mode_field; /* mode_ptr's field as messages name it */
    /* An LWS with subgroups: its size (field, pointer) keeps size_groups
     * subgroups of the new subGroupSize, plus size_plus (a leader without
     * TPUs); NULL when the size stays. */
    const char *size_ptr, *size_field;
    long size_groups, size_plus;
};

static enum wh_err template_shape(struct vctx *v, const cJSON *tmpl, const char *field,
                                  const struct wh_tpu_containers *tc, struct tmpl_hosts *out);

/* The pod path's first rule (workload.c, env_duplicates): a TPU container
 * with two entries of a variable the webhook reads or writes. */
static enum wh_err env_duplicates(struct vctx *v, const char *field,
                                  const struct wh_tpu_containers *tc)
{
    for (unsigned i = 0; i < tc->n; i++) {
        int first, second;
        const char *name = wh_env_duplicate(wh_json_get(tc->items[i].obj, "env"), &first, &second);
        if (name)
            WH_TRY(problem(v,
                           "container \"%.*s\" sets %s twice (%s.spec.containers[%d].env[%d] "
                           "and env[%d]); the kubelet uses the last one and the webhook edits one "
                           "of them, so its pods are refused; keep one %s entry",
                           (int)wh_utf8_cut(wh_json_str0(tc->items[i].obj, "name"), 63),
                           wh_json_str0(tc->items[i].obj, "name"), name, field, tc->items[i].index,
                           first, second, name));
    }
    return WH_OK;
}

static enum wh_err template_hosts(struct vctx *v, const cJSON *tmpl, const char *field,
                                  struct tmpl_hosts *out)
{
    out->hosts = 0;
    const cJSON *spec = wh_json_get(tmpl, "spec");
    const cJSON *containers = wh_json_get(spec, "containers");
    if (!cJSON_IsArray(containers))
        return WH_OK;
    struct wh_tpu_containers tc;
    char why[WH_ERRBUF_LEN];
    enum wh_err err = wh_tpu_containers_collect(containers, &tc, why);
    if (err == WH_ERR_INVALID)
        return problem(v, "%s.spec.%s", field, why);
    if (err)
        return err;
    out->chips = tc.chips;
    out->n_tpu = tc.n;
    err = out->chips ? env_duplicates(v, field, &tc) : WH_OK;
    if (!err && out->chips)
        err = template_shape(v, tmpl, field, &tc, out);
    wh_tpu_containers_free(&tc);
    return err;
}

/* A warning the pod path would give each pod of the template (workload.h),
 * given here where the user reads it. */
static enum wh_err pod_warning(struct vctx *v, const struct tmpl_hosts *th, enum wh_pod_warning k)
{
    const char *l = th->label ? th->label : "";
    return wh_decision_warn(v->d, "%.40s%s%s", l, *l ? ": " : "", wh_pod_warnings[k].fix);
}

/* The pod path's warnings about a template whose shape is possible: a
 * topology or generation it cannot tell (unless a node pool may tell it), a
 * preset TORCH_TPU_TOPOLOGY that differs from the topology's. */
static enum wh_err shape_warnings(struct vctx *v, const cJSON *spec, const struct tmpl_hosts *th,
                                  const struct wh_tpu_containers *tc,
                                  const struct wh_topology *topo, const struct wh_tpu_gen_info *gen)
{
    const char *pool = wh_node_selector(spec, WH_KEY_NODEPOOL);
    bool from_pool = pool && *pool; /* the pod path reads the pool's nodes */
    if (!topo->ndims)
        return from_pool ? WH_OK : pod_warning(v, th, WH_PW_TOPOLOGY_UNKNOWN);
    if (!gen) {
        struct wh_env_lookup lk;
        long product;
        wh_env_lookup(wh_json_get(tc->items[0].obj, "env"), "TORCH_TPU_TOPOLOGY", &lk);
        int fields = wh_torch_fields(lk.value, &product);
        return from_pool || fields == 3 || fields == 4
                   ? WH_OK
                   : pod_warning(v, th, WH_PW_GENERATION_UNKNOWN);
    }
    char want[96];
    wh_torch_topology(topo, gen->devices_per_chip == 2, want, sizeof(want));
    for (unsigned i = 0; i < tc->n; i++) {
        struct wh_env_lookup lk;
        wh_env_lookup(wh_json_get(tc->items[i].obj, "env"), "TORCH_TPU_TOPOLOGY", &lk);
        if (!*lk.value || !strcmp(lk.value, want))
            continue;
        char text[WH_WARNING_MAX + 1];
        wh_torch_kept_text(text, sizeof(text), wh_json_str0(tc->items[i].obj, "name"), lk.value,
                           th->topology, want);
        WH_TRY(wh_decision_warn_text(v->d, text));
    }
    return WH_OK;
}

/* The pod path's TorchTPU limit (workload_env.c, torch_env): a preset
 * TORCH_TPU_TOPOLOGY whose grid divides over the hosts sizes the
 * slicebuilder list (unless the container sets it), and one over
 * WH_MAX_TORCH_ADDRESSES entries is refused. */
static enum wh_err torch_addresses(struct vctx *v, const char *field,
                                   const struct wh_tpu_containers *tc,
                                   const struct wh_topology *topo, const struct tmpl_hosts *th)
{
    char want[96];
    wh_torch_topology(topo, th->tpu7x, want, sizeof(want));
    for (unsigned i = 0; i < tc->n; i++) {
        struct wh_env_lookup lk, sb;
        long product;
        wh_env_lookup(wh_json_get(tc->items[i].obj, "env"), "TORCH_TPU_TOPOLOGY", &lk);
        wh_env_lookup(wh_json_get(tc->items[i].obj, "env"), "TORCH_TPU_SLICEBUILDER_ADDRESSES", &sb);
        if (sb.first_index >= 0 || !*lk.value || !strcmp(lk.value, want) ||
            !wh_torch_fields(lk.value, &product) || product % th->hosts ||
            product <= WH_MAX_TORCH_ADDRESSES)
            continue;
        WH_TRY(problem(v,
                       "container \"%.63s\" (%s.spec.containers[%d]) sets TORCH_TPU_TOPOLOGY "
                       "\"%.32s\", so TORCH_TPU_SLICEBUILDER_ADDRESSES would have %ld entries, "
                       "more than %ld, and its pods are refused; fix TORCH_TPU_TOPOLOGY, or set "
                       "TORCH_TPU_SLICEBUILDER_ADDRESSES in the container to skip it",
                       wh_json_str0(tc->items[i].obj, "name"), field, tc->items[i].index, lk.value,
                       product, WH_MAX_TORCH_ADDRESSES));
    }
    return WH_OK;
}

/* The slices the torchrun world of a TPU container with env `env` spans,
 * as the pod path counts them (workload_env.c, torch_env: the slices
 * MEGASCALE joins); 0 when the container sets its own MEGASCALE world. */
static long torch_slices(const struct vctx *v, const cJSON *env, const struct tmpl_hosts *th)
{
    const char *declared;
    if (v->def && v->def->identity == WH_IDENTITY_JOBSET) {
        enum wh_ms_world w = th->hosts * th->slices > 1
                                 ? wh_megascale_world(env, th->slices, th->fill, &declared)
                                 : WH_MS_SLICE;
        return w == WH_MS_SLICE ? 1 : w == WH_MS_REPLICAS ? th->slices : 0;
    }
    /* A Job or LWS is one slice, unless the user joins it to others. */
    struct wh_env_lookup lk;
    long n;
    wh_env_lookup(env, "MEGASCALE_NUM_SLICES", &lk);
    return !lk.exists || (wh_parse_long(lk.value, &n) && n == 1) ? 1 : 0;
}

/* Preset torchrun values the slice contradicts (envverdict.h), judged as
 * one value for every pod of the template: a denied one is a problem, a
 * warned one a warning. A JobSet Kubeflow Trainer made is fixed at its
 * TrainJob, so the problem names the TrainJob's field. */
static enum wh_err torch_presets(struct vctx *v, const char *field,
                                 const struct wh_tpu_containers *tc, const struct tmpl_hosts *th,
                                 const struct wh_tpu_gen_info *gen)
{
    long per_chip = gen ? gen->devices_per_chip : th->tpu7x ? 2 : 0;
    for (unsigned i = 0; i < tc->n; i++) {
        const cJSON *c = tc->items[i].obj, *env = wh_json_get(c, "env");
        long slices = torch_slices(v, env, th);
        long pods = th->hosts * (slices ? slices : 1);
        /* The rank is known where the template makes one pod of a world of one slice. */
        bool one_pod = pods == 1 || (th->made == 1 && slices == 1);
        struct wh_torch_world w = {.devices = tc->items[i].chips * per_chip,
                                   .nnodes = slices ? pods * (long)tc->n : 0,
                                   .pods = pods,
                                   .rank = one_pod ? (long)i : -1,
                                   .overridden = wh_torchrun_overridden(c)};
        struct wh_env_finding f[WH_ENV_FINDINGS_MAX];
        int n = wh_env_judge(env, &w, f);
        for (int k = 0; k < n; k++) {
            const struct wh_env_rule *r = &wh_env_rules[f[k].rule];
            const char *name = wh_json_str0(c, "name");
            if (r->verdict == WH_VERDICT_WARN) { /* the pod path's warning (workload_env.c) */
                char text[WH_WARNING_MAX + 1];
                wh_env_warning_text(text, sizeof(text), name, &f[k]);
                WH_TRY(wh_decision_warn_text(v->d, text));
                continue;
            }
            if (v->trainjob && r->trainjob) {
                WH_TRY(problem_valued(
                    v, f[k].value,
                    "container \"%.63s\" (%s.spec.containers[%d]) %s, through TrainJob "
                    "\"%.63s/%.63s\", which owns this JobSet: its %s (Kubeflow Trainer writes %s "
                    "from it over the JobSet%s)",
                    name, field, tc->items[i].index, f[k].text, v->ns, v->trainjob, r->trainjob,
                    wh_envtab[r->var].name,
                    r->var == WH_ENV_PET_NPROC_PER_NODE
                        ? "; `auto` with no GPU in resourcesPerNode gives the CPU count"
                        : ""));
                continue;
            }
            WH_TRY(problem_valued(v, f[k].value, "container \"%.63s\" (%s.spec.containers[%d]) %s",
                                  name, field, tc->items[i].index, f[k].text));
        }
    }
    return WH_OK;
}

/* LWS's pod webhook injects the TPU identity (TPU_WORKER_ID,
 * TPU_WORKER_HOSTNAMES, TPU_NAME, TPU_PROCESS_*) only when the first TPU
 * container carries neither TPU_WORKER_ID nor TPU_WORKER_HOSTNAMES
 * (docs/workloads.md); this webhook leaves them to LWS, so on a multi-host
 * group either one leaves the pods without their peers. */
static enum wh_err lws_identity_skip(struct vctx *v, const struct wh_tpu_containers *tc,
                                     const char *field)
{
    static const char *const names[2] = {"TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES"};
    const cJSON *c = tc->items[0].obj;
    for (int k = 0; k < 2; k++) {
        struct wh_env_lookup lk;
        wh_env_lookup(wh_json_get(c, "env"), names[k], &lk);
        if (lk.first_index >= 0)
            return problem(v,
                           "container \"%.63s\" (%s.spec.containers[%d]) sets %s (env[%d]); LWS "
                           "then injects none of TPU_WORKER_ID, TPU_WORKER_HOSTNAMES, TPU_NAME, "
                           "TPU_PROCESS_ADDRESSES, TPU_PROCESS_PORT, so the pods of this "
                           "multi-host group get no peers; remove it: LWS sets the TPU identity "
                           "of each pod only when the template carries neither",
                           wh_json_str0(c, "name"), field, tc->items[0].index, names[k],
                           lk.first_index);
    }
    return WH_OK;
}

/* One identity per slice at the template. A literal TPU_WORKER_ID is one
 * value for every pod of the template; LWS sets its own per pod, so there
 * only "localhost" is judged here, and what makes LWS skip its identity. */
static enum wh_err template_identity(struct vctx *v, const struct wh_tpu_containers *tc,
                                     const char *field, long hosts)
{
    bool lws = v->def && v->def->identity == WH_IDENTITY_LWS;
    if (lws && hosts > 1)
        WH_TRY(lws_identity_skip(v, tc, field));
    for (unsigned i = 0; i < tc->n; i++) {
        struct wh_identity_check ic = {.hosts = hosts, .host = -1, .check_id = !lws};
        struct wh_identity_problem ip[2];
        int n = wh_identity_conflicts(wh_json_get(tc->items[i].obj, "env"), &ic, ip);
        for (int k = 0; k < n; k++)
            WH_TRY(problem(v, "container \"%.63s\" (%s.spec.containers[%d]) %s",
                           wh_json_str0(tc->items[i].obj, "name"), field, tc->items[i].index,
                           ip[k].text));
    }
    return WH_OK;
}

/* What the template's pods learn from their node pool's TPU nodes (the pod
 * path's step 3, workload_topology.h, read by the same function): an
 * accelerator or topology the template does not state, with the field
 * that names the pool (pf, the caller's). */
static enum wh_err pool_shape(struct vctx *v, const cJSON *spec, struct wh_tpu_shape *shape,
                              struct wh_pool_tpu *pt, char *pf, size_t pf_len)
{
    bool accel = shape->accel && *shape->accel, topology = shape->topology && *shape->topology;
    if (accel && topology)
        return WH_OK;
    const char *pool = wh_node_selector(spec, WH_KEY_NODEPOOL);
    enum wh_err err = wh_pool_tpu_read(v->st, pool, pt, v->errbuf);
    if (err == WH_ERR_UNAVAILABLE) {
        /* The node cache has not synced: judged on what the template says,
         * as with no nodes known; refusing would fail the user's apply for
         * a cache, and the pods are judged again with the nodes. */
        pt->accel[0] = pt->topology[0] = '\0';
        return wh_decision_note(v->d, "node pool \"%.63s\" not read (%s); judged on the template",
                                pool ? pool : "", v->errbuf);
    }
    if (err)
        return err;
    snprintf(pf, pf_len, "the TPU nodes of node pool \"%.63s\"", pool ? pool : "");
    if (!accel && *pt->accel) {
        shape->accel = pt->accel;
        shape->accel_field = pf;
    }
    if (!topology && *pt->topology) {
        shape->topology = pt->topology;
        shape->topo_field = pf;
    }
    return WH_OK;
}

/* The subslice rule of every path (topology.h, wh_subslice_fits): the
 * subslice the template's annotation states (sub, field sf) must fit its
 * parent node pool's topology, the template's node selector or else what
 * the pool's TPU nodes say (pool, read here when pool_shape did not); a
 * bigger one is admitted by no node pool, and its pods stay Pending. Not
 * judged when the parent is unknown or the slice exempt. */
static enum wh_err subslice_fits(struct vctx *v, const cJSON *tmpl, const char *field,
                                 const char *sf, const char *sub, struct wh_pool_tpu *pool)
{
    if (wh_subslice_exempt(v->labels, wh_json_get(tmpl, "metadata")))
        return WH_OK;
    const cJSON *spec = wh_json_get(tmpl, "spec");
    const char *parent = wh_node_selector(spec, WH_SEL_TOPOLOGY);
    const char *pool_name = wh_node_selector(spec, WH_KEY_NODEPOOL);
    char from[360];
    snprintf(from, sizeof(from), "%s.spec.nodeSelector[\"" WH_SEL_TOPOLOGY "\"]", field);
    if (!parent || !*parent) {
        if (!*pool->topology && pool_name && *pool_name) {
            enum wh_err err = wh_pool_tpu_read(v->st, pool_name, pool, v->errbuf);
            if (err == WH_ERR_UNAVAILABLE) /* judged with the nodes, at the pods */
                return WH_OK;
            WH_TRY(err);
        }
        parent = pool->topology;
        snprintf(from, sizeof(from), "the TPU nodes of node pool \"%.63s\"",
                 pool_name ? pool_name : "");
    }
    char fit[512];
    if (!*parent || wh_subslice_fits(sub, parent, fit, sizeof(fit)))
        return WH_OK;
    return problem(v, "%s: %s (the parent is %s), so its pods would stay Pending", sf, fit, from);
}

/* A topology t (stated at field tf) outside the generation's documented
 * list (topology.h): a warning on the object, the whole text in its Event. */
static enum wh_err undocumented(struct vctx *v, const struct wh_tpu_gen_info *gen,
                                const struct wh_topology *topo, const char *t, const char *tf)
{
    char text[768], brief[100];
    if (!wh_tpu_topology_undocumented(gen, topo, t, tf, text, sizeof(text), brief, sizeof(brief)))
        return WH_OK;
    wh_decision_event(v->d, WH_REASON_TOPOLOGY_UNDOCUMENTED, "%s", text);
    return *v->part ? wh_decision_warn(v->d, "replicated job \"%.40s\": %s", v->part, brief)
                    : wh_decision_warn(v->d, "%s", brief);
}

/* The fix of the next problem: per fit, the chips per pod of the template
 * (chips field cf) with the counts of its hosts (and a Job's Indexed mode,
 * an LWS's size of whole subgroups), changed together; the text names the
 * same edits, written from them, into vals (n bytes). *more: some option
 * has an edit past the chips and host counts. */
static void fix_fits(struct vctx *v, const struct tmpl_hosts *th, const char *cf,
                     const struct wh_tpu_fit *f, size_t nf, char *vals, size_t n, bool *more)
{
    const char *mode = th->job_spec ? wh_json_str(th->job_spec, "completionMode") : NULL;
    char mp[200];
    snprintf(mp, sizeof(mp), "%s/completionMode", th->mode_ptr ? th->mode_ptr : "");
    size_t l = 0;
    vals[0] = '\0';
    *more = false;
    for (size_t i = 0; i < nf && l < n; i++) {
        long hosts = f[i].hosts + th->hosts_plus;
        l += (size_t)snprintf(vals + l, n - l, "%s%ld", i ? (th->hosts_field ? ", or " : ", ") : "",
                              f[i].chips);
        if (th->hosts_field && l < n)
            l += (size_t)snprintf(vals + l, n - l, " with %s %ld", th->hosts_field, hosts);
        if (th->ptr) {
            wh_suggest_edit(&v->fix, i, WH_EDIT_CHIPS, cf, th->ptr, f[i].chips, NULL);
            for (int k = 0; k < 2 && th->count_ptr[k]; k++)
                wh_suggest_edit(&v->fix, i, WH_EDIT_NUMBER, th->count_field[k], th->count_ptr[k],
                                hosts, NULL);
        }
        if (th->ptr && th->mode_ptr && th->mode_field && f[i].hosts > 1 &&
            !(mode && !strcmp(mode, "Indexed")) && !(th->mode_default && !mode)) {
            wh_suggest_edit(&v->fix, i, WH_EDIT_STRING, th->mode_field, mp, 0, "Indexed");
            if (l < n)
                l += (size_t)snprintf(vals + l, n - l, " and %s \"Indexed\"", th->mode_field);
            *more = true;
        }
        if (th->ptr && th->size_ptr) {
            long size = th->size_groups * hosts + th->size_plus;
            wh_suggest_edit(&v->fix, i, WH_EDIT_NUMBER, th->size_field, th->size_ptr, size, NULL);
            if (l < n)
                l += (size_t)snprintf(vals + l, n - l, " and %s %ld", th->size_field, size);
            *more = true;
        }
    }
    wh_utf8_trim_cut(vals, n);
}

/* The fits of topology topo (generation gen) with at most WH_MAX_HOSTS
 * hosts, their fix, and their text in vals (n bytes): "" when none. The
 * text's tail for them: how they change together. */
static const char *template_fits(struct vctx *v, const struct tmpl_hosts *th, const char *cf,
                                 const struct wh_tpu_gen_info *gen, const struct wh_topology *topo,
                                 char *vals, size_t n)
{
    struct wh_tpu_fit all[WH_TPU_FITS_MAX], f[WH_TPU_FITS_MAX];
    size_t na = wh_tpu_gen_fit_list(gen, topo, all, WH_TPU_FITS_MAX), nf = 0;
    for (size_t i = 0; i < na; i++)
        if (all[i].hosts <= WH_MAX_HOSTS)
            f[nf++] = all[i];
    vals[0] = '\0';
    if (!nf)
        return "";
    bool more;
    fix_fits(v, th, cf, f, nf, vals, n, &more);
    if (!th->hosts_field)
        return "";
    return more ? " (change them together)" : " (change both together)";
}

/* The denial of a shape the generation's table refuses (sp), with its fix
 * (fix_fits): when an option edits more than the chips and host counts,
 * the text's values are rewritten from the edits, so that it names each. */
static enum wh_err shape_denial(struct vctx *v, const struct tmpl_hosts *out, const char *cf,
                                const struct wh_shape_problem *sp)
{
    char vals[512], base[512];
    bool more = false;
    if (sp->n_fits)
        fix_fits(v, out, cf, sp->fits, sp->n_fits, vals, sizeof(vals), &more);
    wh_tpu_fits_text(sp->fits, sp->n_fits, out->hosts_field, out->hosts_plus, base, sizeof(base));
    const char *at = more && *base ? strstr(sp->text, base) : NULL;
    if (!at) /* the text names every edit */
        return problem(v, "%s", sp->text);
    const char *rest = at + strlen(base), *both = "change both together";
    const char *bt = strstr(rest, both);
    return problem(v, "%.*s%s%.*s%s%s", (int)(at - sp->text), sp->text, vals,
                   bt ? (int)(bt - rest) : (int)strlen(rest), rest,
                   bt ? "change them together" : "", bt ? bt + strlen(both) : "");
}

/* The hosts of a possible shape (topology topo of generation gen): the
 * chips per pod divide the topology's, into no more hosts than a slice may
 * have. Each denial names its fix (template_fits). *counted: out->hosts
 * holds them. */
static enum wh_err template_count(struct vctx *v, const char *field, const char *cf,
                                  const struct wh_tpu_gen_info *gen, const struct wh_topology *topo,
                                  struct tmpl_hosts *out, bool *counted)
{
    const char *t = out->topology;
    *counted = false;
    char vals[512];
    if (out->chips > topo->chips || topo->chips % out->chips) {
        const char *tail = template_fits(v, out, cf, gen, topo, vals, sizeof(vals));
        return problem(v,
                       "%s.spec.containers request %ld google.com/tpu per pod, which does not "
                       "divide the %ld chips of topology %s; expected a divisor of %ld%s%s%s",
                       field, out->chips, topo->chips, t, topo->chips,
                       *vals ? "; valid values: " : "", vals, tail);
    }
    out->hosts = topo->chips / out->chips;
    if (out->hosts > WH_MAX_HOSTS) { /* the pod path's limit (workload.c, decide) */
        long hosts = out->hosts;
        out->hosts = 0; /* nothing else to judge */
        const char *tail = template_fits(v, out, cf, gen, topo, vals, sizeof(vals));
        return problem(v,
                       "%s.spec.containers request %ld google.com/tpu per pod, so topology %s "
                       "gives %ld hosts; at most %ld are supported, so its pods are refused; "
                       "request more google.com/tpu per pod%s%s%s",
                       field, out->chips, t, hosts, WH_MAX_HOSTS, *vals ? "; valid values: " : "",
                       vals, tail);
    }
    *counted = true;
    return WH_OK;
}

/* The shape of a TPU template: the generation table's rules, the chips'
 * divisor rule, one identity per slice. */
static enum wh_err template_shape(struct vctx *v, const cJSON *tmpl, const char *field,
                                  const struct wh_tpu_containers *tc, struct tmpl_hosts *out)
{
    const cJSON *spec = wh_json_get(tmpl, "spec");
    /* The workload path's topology rule, the one its pods get
     * (workload_topology.h; mutate.c says why the KubeRay path's differs): an
     * empty annotation counts as absent, the node pool's TPU nodes (when
     * known) tell what the template does not, and a template naming a node
     * pool is not warned about what they may tell its pods. */
    const char *t = wh_meta_annotation(tmpl, WH_ANN_SLICE_TOPOLOGY);
    bool from_annotation = t && *t;
    if (!from_annotation)
        t = wh_node_selector(spec, WH_SEL_TOPOLOGY);
    /* The generation table's rules (topology.h), at the object the user
     * applies: its pods would be refused or hang. */
    char af[320], tf[320], cf[320];
    snprintf(af, sizeof(af), "%s.spec.nodeSelector[\"" WH_SEL_ACCELERATOR "\"]", field);
    snprintf(tf, sizeof(tf),
             from_annotation ? "%s.metadata.annotations[\"" WH_ANN_SLICE_TOPOLOGY "\"]"
                             : "%s.spec.nodeSelector[\"" WH_SEL_TOPOLOGY "\"]",
             field);
    snprintf(cf, sizeof(cf), "%s.spec.containers[].resources[\"google.com/tpu\"]", field);
    struct wh_tpu_shape shape = {.accel = wh_node_selector(spec, WH_SEL_ACCELERATOR),
                                 .accel_field = af,
                                 .topology = t,
                                 .topo_field = tf,
                                 .chips = out->chips,
                                 .chips_field = cf,
                                 .hosts_field = out->hosts_field,
                                 .hosts_plus = out->hosts_plus};
    char pf[100];
    bool stated = t && *t; /* not the pool's: its nodes exist, so its topology does */
    WH_TRY(pool_shape(v, spec, &shape, &out->pool, pf, sizeof(pf)));
    out->topology = t = shape.topology;
    struct wh_topology topo;
    const struct wh_tpu_gen_info *gen;
    struct wh_shape_problem sp;
    if (!wh_tpu_shape_check(&shape, &topo, &gen, &sp)) {
        return shape_denial(v, out, cf, &sp);
    }
    if (from_annotation)
        WH_TRY(subslice_fits(v, tmpl, field, tf, t, &out->pool));
    if (stated)
        WH_TRY(undocumented(v, gen, &topo, t, tf));
    out->tpu7x = gen && gen->devices_per_chip == 2;
    if (!(shape.accel && *shape.accel)) { /* as the pod path: a 4-field preset tells TPU7x */
        struct wh_env_lookup lk;
        long product;
        wh_env_lookup(wh_json_get(tc->items[0].obj, "env"), "TORCH_TPU_TOPOLOGY", &lk);
        out->tpu7x = wh_torch_fields(lk.value, &product) == 4;
    }
    WH_TRY(shape_warnings(v, spec, out, tc, &topo, gen));
    if (!topo.ndims)
        return WH_OK;
    bool counted;
    WH_TRY(template_count(v, field, cf, gen, &topo, out, &counted));
    if (!counted)
        return WH_OK;
    WH_TRY(torch_addresses(v, field, tc, &topo, out));
    WH_TRY(torch_presets(v, field, tc, out, gen));
    /* Names that resolve, for the pods the pod path counts (workload.c,
     * one_identity): the hosts times the slices MEGASCALE joins. Its own
     * format: the ratchet keys a problem by its format. */
    char dns[800], sf[330];
    snprintf(sf, sizeof(sf), "%s.spec", field);
    long world = out->hosts * wh_megascale_joined_slices(wh_json_get(spec, "containers"),
                                                         out->slices, out->fill);
    if (wh_hostnet_dns_conflict(spec, sf, world, WH_DNS_NAMES_WORKLOAD, dns, sizeof(dns)))
        WH_TRY(problem_valued(v, wh_json_str0(spec, "dnsPolicy"), "%.799s", dns));
    return template_identity(v, tc, field, out->hosts);
}

/* An integer field; def when absent, -1 when not a whole number >= 0. */
static long int_field(const cJSON *obj, const char *key, long def)
{
    const cJSON *x = wh_json_get(obj, key);
    if (!x || cJSON_IsNull(x))
        return def;
    long n;
    return wh_json_whole(x, 0, 999999999999999L, &n) ? n : -1;
}

static void value_text(const cJSON *obj, const char *key, char *out, size_t n)
{
    const cJSON *x = wh_json_get(obj, key);
    if (!x || cJSON_IsNull(x))
        snprintf(out, n, "unset");
    else if (cJSON_IsNumber(x))
        snprintf(out, n, "%g", x->valuedouble);
    else if (cJSON_IsString(x))
        snprintf(out, n, "\"%.64s\"", x->valuestring);
    else
        snprintf(out, n, "not a number");
}

/* A Job spec (a Job's, or a JobSet replicated job's template.spec) whose
 * pods need `hosts` hosts. jobset: completionMode and subdomain are
 * JobSet's to default. */
static enum wh_err check_job_spec(struct vctx *v, const cJSON *spec, const char *field,
                                  const struct tmpl_hosts *th, bool jobset)
{
    enum wh_err err = WH_OK;
    const char *mode = wh_json_str(spec, "completionMode");
    if (!(jobset && !mode) && (!mode || strcmp(mode, "Indexed"))) {
        char mf[200], mp[200];
        snprintf(mf, sizeof(mf), "%s.completionMode", field);
        snprintf(mp, sizeof(mp), "%s/completionMode", th->mode_ptr ? th->mode_ptr : "");
        wh_suggest_edit(&v->fix, 0, WH_EDIT_STRING, mf, mp, 0, "Indexed");
        err = problem(v,
                      "%s.completionMode is %s%.64s%s, expected \"Indexed\" (topology %s with %ld "
                      "chips per pod needs %ld hosts, each with its index)",
                      field, mode ? "\"" : "", mode ? mode : "unset", mode ? "\"" : "",
                      th->topology, th->chips, th->hosts);
    }
    static const char *const keys[2] = {"parallelism", "completions"};
    for (int i = 0; i < 2 && !err; i++) {
        long n = int_field(spec, keys[i], i == 0 ? 1 : -2);
        if (n == th->hosts)
            continue;
        char got[96];
        value_text(spec, keys[i], got, sizeof(got));
        for (int k = 0; k < 2; k++) /* both: a Job runs min(parallelism, completions) pods */
            wh_suggest_edit(&v->fix, 0, WH_EDIT_NUMBER, th->count_field[k], th->count_ptr[k],
                            th->hosts, NULL);
        err = problem(v,
                      "%s.%s is %s, expected %ld (topology %s with %ld chips per pod needs %ld "
                      "hosts; set %s to %ld)",
                      field, keys[i], got, th->hosts, th->topology, th->chips, th->hosts,
                      th->hosts_field, th->hosts);
    }
    const char *sub = wh_json_str(wh_json_path(spec, "template", "spec", NULL), "subdomain");
    if (!err && !jobset && (!sub || !*sub))
        err = problem(v,
                      "%s.template.spec.subdomain is unset, expected the name of a headless "
                      "Service selecting the Job's pods (the %ld hosts find each other by name)",
                      field, th->hosts);
    return err;
}

static enum wh_err validate_job(struct vctx *v, const cJSON *obj)
{
    const cJSON *spec = wh_json_get(obj, "spec");
    struct tmpl_hosts th = {.slices = 1,
                            .ptr = "/spec/template",
                            .count_ptr = {"/spec/parallelism", "/spec/completions"},
                            .count_field = {"spec.parallelism", "spec.completions"},
                            .hosts_field = "spec.parallelism and spec.completions",
                            .mode_ptr = "/spec",
                            .job_spec = spec,
                            .mode_field = "spec.completionMode"};
    enum wh_err err = template_hosts(v, wh_json_get(spec, "template"), "spec.template", &th);
    if (!err && th.hosts > 1)
        err = check_job_spec(v, spec, "spec", &th, false);
    return err;
}

/* The pod path's denial of two TPU containers of one pod on one MEGASCALE
 * port (workload_env.c, wh_wl_one_world; the rule is megascale.h's):
 * container `c` (containers[i]) against the TPU containers before it. */
static enum wh_err shared_port(struct vctx *v, const cJSON *cs, const cJSON *c, int i,
                               const char *field, const char *rj)
{
    const cJSON *o;
    int ki;
    long port;
    if (!wh_megascale_shared_port(cs, c, &o, &ki, &port))
        return WH_OK;
    return problem(v,
                   "TPU containers \"%.63s\" (%s.spec.containers[%d]) and \"%.63s\" "
                   "(containers[%d]) of replicated job \"%.63s\" both use MEGASCALE_PORT "
                   "%ld in the pod's one network, so its pods are refused; remove "
                   "MEGASCALE_PORT (the webhook gives %ld + the TPU container's index) "
                   "or give each its own",
                   wh_json_str0(o, "name"), field, ki, wh_json_str0(c, "name"), i, rj, port,
                   (long)WH_MEGASCALE_PORT);
}

/* One world (docs/workloads.md): a literal MEGASCALE_NUM_SLICES other than
 * the replicas is refused, as its pods are; with other replicated jobs
 * beside it (the pods' global-replicas differ from their replicas) the pods
 * cannot tell the slice count, so a replicated job of several slices that
 * does not declare it is told how to join them. */
static enum wh_err jobset_megascale(struct vctx *v, const cJSON *tmpl, const char *field,
                                    const char *rj, long replicas, long all_replicas,
                                    const struct tmpl_hosts *th)
{
    const cJSON *cs = wh_json_path(tmpl, "spec", "containers", NULL);
    bool declared = false;
    int i = 0;
    for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next, i++) {
        if (!wh_container_requests_tpu(c))
            continue;
        struct wh_env_lookup lk;
        const char *value, *id;
        wh_env_lookup(wh_json_get(c, "env"), "MEGASCALE_NUM_SLICES", &lk);
        declared |= lk.first_index >= 0;
        enum wh_ms_world world = th->hosts * replicas > 1
                                     ? wh_megascale_world(wh_json_get(c, "env"), replicas, th->fill,
                                                          &value)
                                     : WH_MS_SLICE;
        if (world == WH_MS_OWN) { /* the pod path's warning (podwarn.h) */
            char text[WH_WARNING_MAX + 1];
            wh_megascale_own_text(text, sizeof(text), wh_json_str0(c, "name"));
            WH_TRY(wh_decision_warn_text(v->d, text));
        }
        if (wh_megascale_shared_slice_id(wh_json_get(c, "env"), world != WH_MS_SLICE, replicas,
                                         &id)) /* the pod path's denial */
            WH_TRY(
                problem_valued(v, id,
                               "container \"%.63s\" (%s.spec.containers[%d]) sets "
                               "MEGASCALE_SLICE_ID \"%.32s\" but the %ld replicas of replicated job "
                               "\"%.63s\" share this template, so all its slices get that id; remove "
                               "it (the webhook sets the job index), or set it with a valueFrom",
                               wh_json_str0(c, "name"), field, i, id, replicas, rj));
        if (world == WH_MS_CONFLICT)
            WH_TRY(
                problem_valued(v, value,
                               "container \"%.63s\" (%s.spec.containers[%d]) sets "
                               "MEGASCALE_NUM_SLICES \"%.32s\" but replicated job \"%.63s\" has %ld "
                               "replicas, so its slices would wait for ones that never join; remove "
                               "it (the webhook sets %ld), or set it to \"\" for independent slices",
                               wh_json_str0(c, "name"), field, i, value, rj, replicas, replicas));
        if (world != WH_MS_SLICE && th->tpu7x && th->n_tpu > 1)
            WH_TRY(shared_port(v, cs, c, i, field, rj));
    }
    if (replicas > 1 && all_replicas != replicas && !declared)
        return wh_decision_warn(v->d,
                                "replicated job \"%.40s\": no MEGASCALE_* for its %ld slices "
                                "(other replicated jobs); set MEGASCALE_NUM_SLICES \"%ld\"",
                                rj, replicas, replicas);
    return WH_OK;
}

static enum wh_err validate_jobset(struct vctx *v, const cJSON *obj)
{
    const cJSON *spec = wh_json_get(obj, "spec");
    const cJSON *rjobs = wh_json_get(spec, "replicatedJobs");
    const cJSON *dns = wh_json_path(spec, "network", "enableDNSHostnames", NULL);
    bool exclusive = wh_meta_has_annotation(obj, EXCLUSIVE_TOPOLOGY);
    enum wh_err err = WH_OK;
    long all_replicas = 0; /* what JobSet puts in the pods' global-replicas */
    for (const cJSON *rj = cJSON_IsArray(rjobs) ? rjobs->child : NULL; rj; rj = rj->next)
        all_replicas += int_field(rj, "replicas", 1);
    int i = 0;
    for (const cJSON *rj = cJSON_IsArray(rjobs) ? rjobs->child : NULL; rj && !err;
         rj = rj->next, i++) {
        char field[160];
        snprintf(field, sizeof(field), "spec.replicatedJobs[%d] (\"%.63s\").template.spec", i,
                 wh_json_str0(rj, "name"));
        const cJSON *jspec = wh_json_path(rj, "template", "spec", NULL);
        v->part = wh_json_str0(rj, "name");
        char label[100];
        snprintf(label, sizeof(label), "replicated job \"%.40s\"", wh_json_str0(rj, "name"));
        long replicas = int_field(rj, "replicas", 1);
        char tp[80], pp[100], cp[100], mp[64], pf[200], cfd[200], hf[420], mf[200];
        snprintf(tp, sizeof(tp), "/spec/replicatedJobs/%d/template/spec/template", i);
        snprintf(mp, sizeof(mp), "/spec/replicatedJobs/%d/template/spec", i);
        snprintf(pp, sizeof(pp), "%s/parallelism", mp);
        snprintf(cp, sizeof(cp), "%s/completions", mp);
        snprintf(pf, sizeof(pf), "%s.parallelism", field);
        snprintf(cfd, sizeof(cfd), "%s.completions", field);
        snprintf(hf, sizeof(hf), "%s.parallelism and completions", field);
        snprintf(mf, sizeof(mf), "%s.completionMode", field);
        /* fill as the pod path: alone in the JobSet, the pods know the count */
        struct tmpl_hosts th = {.slices = replicas,
                                .fill = replicas > 1 && all_replicas == replicas,
                                .label = label,
                                .ptr = tp,
                                .count_ptr = {pp, cp},
                                .count_field = {pf, cfd},
                                .hosts_field = hf,
                                .mode_ptr = mp,
                                .job_spec = jspec,
                                .mode_default = true,
                                .mode_field = mf};
        char tfield[200];
        snprintf(tfield, sizeof(tfield), "%s.template", field);
        err = template_hosts(v, wh_json_get(jspec, "template"), tfield, &th);
        if (err || th.hosts == 0)
            continue;
        if (th.hosts > 1)
            err = check_job_spec(v, jspec, field, &th, true);
        if (!err && cJSON_IsFalse(dns) && th.hosts * replicas > 1)
            err = problem_valued(v, "false",
                                 "spec.network.enableDNSHostnames is false, expected true: the %ld pods "
                                 "of replicated job \"%s\" find each other by name",
                                 th.hosts * replicas, wh_json_str0(rj, "name"));
        if (!err && replicas > 1 && !exclusive &&
            !wh_meta_has_annotation(wh_json_get(rj, "template"), EXCLUSIVE_TOPOLOGY))
            err = wh_decision_warn(v->d, "replicated job \"%s\": %ld slices without annotation %s",
                                   wh_json_str0(rj, "name"), replicas, EXCLUSIVE_TOPOLOGY);
        if (!err)
            err = jobset_megascale(v, wh_json_get(jspec, "template"), tfield,
                                   wh_json_str0(rj, "name"), replicas, all_replicas, &th);
    }
    return err;
}

/* The fix of an LWS subgroup denial as data (wh_lws_subgroup_fault): the
 * subGroupSize of the slice and a size of whole subgroups, together; none
 * for a leader with TPUs, whose fix is a leaderTemplate without them. */
static void lws_subgroup_edits(struct vctx *v, const struct tmpl_hosts *th, long n, long size,
                               bool leader_tpu)
{
    const char *sz = "spec.leaderWorkerTemplate.size", *szp = "/spec/leaderWorkerTemplate/size";
    long whole = size > 1 ? (size - 1) / th->hosts * th->hosts : 0;
    if (leader_tpu)
        return;
    if (n != th->hosts)
        wh_suggest_edit(&v->fix, 0, WH_EDIT_NUMBER, th->count_field[0], th->count_ptr[0], th->hosts,
                        NULL);
    if ((size - 1) % th->hosts == 0)
        return;
    for (size_t o = 0; o < 2; o++) {
        if (o && n != th->hosts)
            wh_suggest_edit(&v->fix, o, WH_EDIT_NUMBER, th->count_field[0], th->count_ptr[0],
                            th->hosts, NULL);
        wh_suggest_edit(&v->fix, o, WH_EDIT_NUMBER, sz, szp,
                        (whole > 0 ? whole : th->hosts) + 1 + (long)o * th->hosts, NULL);
    }
}

static enum wh_err validate_lws(struct vctx *v, const cJSON *obj)
{
    const cJSON *lwt = wh_json_path(obj, "spec", "leaderWorkerTemplate", NULL);
    const cJSON *sg = wh_json_get(lwt, "subGroupPolicy");
    bool subgroups = sg && !cJSON_IsNull(sg);
    const cJSON *leader = wh_json_get(lwt, "leaderTemplate");
    bool leader_tpu = true; /* a leader without TPUs is one pod more than the hosts */
    if (leader && !cJSON_IsNull(leader)) {
        const cJSON *lcs = wh_json_path(leader, "spec", "containers", NULL);
        leader_tpu = false;
        for (const cJSON *c = cJSON_IsArray(lcs) ? lcs->child : NULL; c; c = c->next)
            leader_tpu |= wh_container_requests_tpu(c);
    }
    const char *count_field = subgroups ? "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"
                                        : "spec.leaderWorkerTemplate.size";
    struct tmpl_hosts th = {
        .slices = 1,
        .label = "workerTemplate",
        .ptr = "/spec/leaderWorkerTemplate/workerTemplate",
        .count_ptr = {subgroups ? "/spec/leaderWorkerTemplate/subGroupPolicy/subGroupSize"
                                : "/spec/leaderWorkerTemplate/size"},
        .count_field = {count_field},
        .hosts_field = count_field,
        .hosts_plus = subgroups || leader_tpu ? 0 : 1,
    };
    if (subgroups && !leader_tpu) { /* a chips fix keeps the subgroups, whole */
        long n = int_field(sg, "subGroupSize", -2), size = int_field(lwt, "size", 1);
        th.size_ptr = "/spec/leaderWorkerTemplate/size";
        th.size_field = "spec.leaderWorkerTemplate.size";
        th.size_groups = n > 0 && size > 1 && (size - 1) / n > 0 ? (size - 1) / n : 1;
        th.size_plus = 1;
    }
    enum wh_err err = template_hosts(v, wh_json_get(lwt, "workerTemplate"),
                                     "spec.leaderWorkerTemplate.workerTemplate", &th);
    if (err || th.hosts <= 1)
        return err; /* one host per slice (subgroups too): no peers to get wrong */
    if (leader && !cJSON_IsNull(leader)) {
        struct tmpl_hosts lh = {.slices = 1, .label = "leaderTemplate", .made = 1};
        err = template_hosts(v, leader, "spec.leaderWorkerTemplate.leaderTemplate", &lh);
        leader_tpu = lh.chips > 0;
    }
    char got[96], fix[640];
    if (!err && subgroups) { /* the pod path's rule */
        value_text(sg, "subGroupSize", got, sizeof(got));
        long n = int_field(sg, "subGroupSize", -2), size = int_field(lwt, "size", 1);
        struct wh_lws_subgroup_shape sh = {n,           got,  th.hosts,   th.chips,
                                           th.topology, size, leader_tpu, cJSON_IsObject(leader)};
        if (!wh_lws_subgroup_fault(&sh, fix, sizeof(fix)))
            return WH_OK;
        lws_subgroup_edits(v, &th, n, size, leader_tpu);
        return problem(v, "%s", fix);
    }
    long want = th.hosts + (leader_tpu ? 0 : 1);
    long size = int_field(lwt, "size", 1);
    if (!err && size != want) {
        value_text(lwt, "size", got, sizeof(got));
        wh_suggest_edit(&v->fix, 0, WH_EDIT_NUMBER, th.count_field[0], th.count_ptr[0], want, NULL);
        err = problem(v,
                      "spec.leaderWorkerTemplate.size is %s, expected %ld (topology %s with %ld "
                      "chips per pod needs %ld hosts%s)",
                      got, want, th.topology, th.chips, th.hosts,
                      leader_tpu ? "" : ", plus the leader without TPUs");
    }
    return err;
}

enum wh_err wh_validate_workload(const struct wh_review *rv, const struct wh_state *st,
                                 struct wh_decision *d, char *errbuf)
{
    return wh_validate_workload_report(rv, st, d, NULL, errbuf);
}

enum wh_err wh_validate_workload_report(const struct wh_review *rv, const struct wh_state *st,
                                        struct wh_decision *d, struct wh_violations *out,
                                        char *errbuf)
{
    const struct wh_review_info *in = wh_review_info(rv);
    if (strcmp(in->operation, "CREATE") && strcmp(in->operation, "UPDATE"))
        return WH_OK;
    const cJSON *obj = wh_review_object(rv);
    const char *kind = in->kind_name;
    if (!cJSON_IsObject(obj))
        return wh_decision_deny(d, "request.object is not a %s object; send the %s being written",
                                kind, kind);
    const char *optout = wh_meta_label(obj, WH_LABEL_INJECT);
    if (optout && !strcmp(optout, "disabled"))
        return WH_OK;
    /* The object's own name or generateName, not in->name, which falls back
     * to request.name: answers name the object as its metadata does. */
    struct vctx v = {.kind = kind,
                     .def = wh_kind_find(kind),
                     .ns = in->ns,
                     .name = in->object_name,
                     .trainjob = wh_trainjob_owner(obj),
                     .labels = wh_json_path(obj, "metadata", "labels", NULL),
                     .d = d,
                     .out = out,
                     .part = "",
                     .st = st,
                     .errbuf = errbuf};
    wh_buf_init(&v.problems, PROBLEMS_MAX);
    enum wh_kind_identity id = v.def ? v.def->identity : WH_IDENTITY_LWS;
    enum wh_err err = id == WH_IDENTITY_JOB_INDEX ? validate_job(&v, obj)
                      : id == WH_IDENTITY_JOBSET  ? validate_jobset(&v, obj)
                                                  : validate_lws(&v, obj);
    if (!err && v.n_problems)
        err = wh_decision_deny(d, "%s", wh_buf_ptr(&v.problems));
    if (!err && d->allowed && d->n_events) /* Events of its warnings, on the object */
        wh_event_subject_object(&d->subject, obj, in->ns, in->object_name);
    wh_buf_free(&v.problems);
    return err;
}
