/* validate.c: RayCluster validation.
 *
 * Each TPU worker group is checked on its own; the problems of all groups
 * are joined into one denial (D1), warnings are gathered for every group
 * (D8). A group whose containers request no TPU is skipped, as in the
 * reference; a group with no containers at all is a problem. */
/* long: every rule of a worker group shares its context and the static
 * problem/report helpers that key its findings for the ratchet; split by rule
 * family (shape, MEGASCALE, names) behind a private header when it grows. */
#include "wh/validate.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf, snprintf */
#include <stdint.h> /* INT32_MIN, INT32_MAX */
#include <string.h> /* strcmp, memset */

#include "wh/affinity.h" /* wh_subslice_find_memo, wh_subslice_memo */
#include "wh/buf.h"      /* wh_buf */
#include "wh/decision.h" /* WH_MESSAGE_MAX */
#include "wh/json.h"     /* wh_json_* */
#include "wh/mem.h"      /* wh_realloc, wh_strdup, wh_free */
#include "wh/megascale.h" /* wh_megascale_shared_slice_id, wh_megascale_shared_port, wh_megascale_joined_slices */
#include "wh/names.h"      /* wh_names_group_ok */
#include "wh/podspec.h"    /* keys, wh_container_tpu */
#include "wh/podwarn.h"    /* wh_event_subject_object */
#include "wh/topology.h"   /* wh_topology, wh_is_tpu7x, wh_tpu_gen_fit_list, wh_tpu_fits_text */
#include "wh/tpuenv.h"     /* wh_env_duplicate, wh_hostnet_dns_conflict */
#include "wh/utf8.h"       /* wh_utf8_trim_cut */
#include "wh/violations.h" /* wh_suggest_edit, wh_suggestion_dup */

/* The problems listed in a denial; more are counted, not listed, so that the
 * message stays under WH_MESSAGE_MAX. */
#define PROBLEMS_MAX (WH_MESSAGE_MAX - 256)

struct group_ctx {
    const cJSON *cluster_obj, *spec, *tmpl, *tmpl_spec, *containers;
    const char *cluster, *group;
    int index;
    long num_hosts; /* numOfHosts as given, 0 when absent */
    long chips_per_host;
    const char *topology; /* annotation or nodeSelector */
    bool from_annotation;
    struct wh_topology topo;
    struct wh_decision *d;
    struct wh_buf *problems;
    size_t n_problems;
    size_t *n_unlisted;                 /* problems of all groups left out of the message */
    struct wh_validation *report;       /* NULL when not asked for */
    struct wh_subslice_memo *subslices; /* the request's node walks, one per distinct selector */
    /* The next problem's fix as data; report() takes it. One per request
     * (zeroed after each problem that has one), not one per group: it is
     * 7 KiB, and a RayCluster may have thousands of groups. */
    struct wh_suggestion *fix;
};

/* What a finding is about: the field (from the group), the value found and
 * what would be accepted. */
struct about {
    const char *field;
    const char *value;
    const char *expected;
};

#define ABOUT_GROUP ((struct about){"", "", ""})

static const char *lstr(long v, char *buf, size_t len)
{
    snprintf(buf, len, "%ld", v);
    return buf;
}

/* The fix of the next problem: per fit, the chips per pod of the group's
 * template with the numOfHosts that goes with them (changed together). */
static void fix_fits(struct group_ctx *g, const struct wh_tpu_fit *f, size_t n)
{
    char field[96], tp[64], hf[64], hp[64];
    snprintf(field, sizeof(field),
             "spec.workerGroupSpecs[%d].template.spec.containers[].resources[" WH_TPU_RESOURCE "]",
             g->index);
    snprintf(tp, sizeof(tp), "/spec/workerGroupSpecs/%d/template", g->index);
    snprintf(hf, sizeof(hf), "spec.workerGroupSpecs[%d].numOfHosts", g->index);
    snprintf(hp, sizeof(hp), "/spec/workerGroupSpecs/%d/numOfHosts", g->index);
    for (size_t i = 0; i < n; i++) {
        wh_suggest_edit(g->fix, i, WH_EDIT_CHIPS, field, tp, f[i].chips, NULL);
        wh_suggest_edit(g->fix, i, WH_EDIT_NUMBER, hf, hp, f[i].hosts, NULL);
    }
}

/* The fits of the group's topology (g->topo) with at most WH_MAX_HOSTS
 * hosts, their fix, and their text in vals (n bytes): "" when the
 * accelerator is unknown or no VM makes the topology. */
static void group_fits(struct group_ctx *g, char *vals, size_t n)
{
    struct wh_tpu_fit all[WH_TPU_FITS_MAX], f[WH_TPU_FITS_MAX];
    const struct wh_tpu_gen_info *gen = wh_tpu_gen_find(
        wh_node_selector(g->tmpl_spec, WH_SEL_ACCELERATOR));
    size_t na = wh_tpu_gen_fit_list(gen, &g->topo, all, WH_TPU_FITS_MAX), nf = 0;
    for (size_t i = 0; i < na; i++)
        if (all[i].hosts <= WH_MAX_HOSTS)
            f[nf++] = all[i];
    vals[0] = '\0';
    if (!nf)
        return;
    fix_fits(g, f, nf);
    wh_tpu_fits_text(f, nf, "numOfHosts", 0, vals, n);
}

/* The group's own fields every shape rule reads: accelerator, topology,
 * chips per pod, numOfHosts as written (the group's name is the finding's
 * part). Not replicas, minReplicas or maxReplicas: the autoscaler writes
 * them, and a broken group it scales keeps its problem (docs/deploy.md,
 * "Updates of existing objects"). */
static void shape_value(const struct group_ctx *g, char *out, size_t n)
{
    bool fa;
    const char *accel = wh_node_selector(g->tmpl_spec, WH_SEL_ACCELERATOR);
    const char *topo = wh_slice_topology(g->tmpl, g->tmpl_spec, &fa);
    const cJSON *nh = wh_json_get(g->spec, "numOfHosts");
    char hosts[48];
    if (cJSON_IsNumber(nh))
        snprintf(hosts, sizeof(hosts), "%.17g", nh->valuedouble);
    else if (cJSON_IsString(nh))
        snprintf(hosts, sizeof(hosts), "\"%.32s\"", nh->valuestring);
    else
        snprintf(hosts, sizeof(hosts), "%s", nh && !cJSON_IsNull(nh) ? "(not a number)" : "-");
    snprintf(out, n, "%.63s\x1f%s%.63s\x1f%ld\x1f%s", accel ? accel : "-", fa ? "a:" : "",
             topo ? topo : "-", g->chips_per_host, hosts);
}

/* Add a finding to the report, if there is one. */
static enum wh_err report(struct group_ctx *g, bool warning, struct about a, bool own,
                          const char *rule, const char *text)
{
    struct wh_validation *v = g->report;
    if (!v)
        return WH_OK;
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        struct wh_group_finding *items = wh_realloc(v->items, cap * sizeof(*items));
        if (!items)
            return WH_ERR_NOMEM;
        v->items = items;
        v->cap = cap;
    }
    struct wh_group_finding *f = &v->items[v->n];
    memset(f, 0, sizeof(*f));
    f->warning = warning;
    f->index = g->index;
    f->field = a.field;
    f->rule = rule;
    snprintf(f->value, sizeof(f->value), "%s", a.value ? a.value : "");
    snprintf(f->expected, sizeof(f->expected), "%s", a.expected ? a.expected : "");
    char shape[256] = "";
    if (!own)
        shape_value(g, shape, sizeof(shape));
    snprintf(f->key, sizeof(f->key), "%s\x1f%s", shape, a.value ? a.value : "");
    wh_utf8_trim_cut(f->value, sizeof(f->value)); /* snprintf may cut a character */
    wh_utf8_trim_cut(f->expected, sizeof(f->expected));
    f->group = wh_strdup(g->group);
    f->message = wh_strdup(text);
    bool nomem = false;
    if (!warning)
        f->suggest = wh_suggestion_dup(g->fix, &nomem);
    if (!f->group || !f->message || nomem) {
        wh_free(f->group);
        wh_free(f->message);
        wh_free(f->suggest);
        return WH_ERR_NOMEM;
    }
    v->n++;
    return WH_OK;
}

/* Record one problem of this group: into the denial and the report. */
__attribute__((format(printf, 4, 0))) static enum wh_err
vproblem_at(struct group_ctx *g, struct about a, bool own, const char *fmt, va_list ap)
{
    char text[2048], line[4096];
    vsnprintf(text, sizeof(text), fmt, ap);
    wh_utf8_trim_cut(text, sizeof(text));
    snprintf(line, sizeof(line),
             "%sRayCluster \"%s\" worker group \"%s\" (spec.workerGroupSpecs[%d]): %s",
             g->problems->len ? "; " : "", g->cluster, g->group, g->index, text);
    wh_utf8_trim_cut(line, sizeof(line));
    g->n_problems++;
    enum wh_err err = report(g, false, a, own, fmt, text);
    if (g->fix->n)
        memset(g->fix, 0, sizeof(*g->fix)); /* it was this problem's */
    if (err)
        return err;
    if (*g->n_unlisted || wh_buf_len(g->problems) + strlen(line) > PROBLEMS_MAX) {
        ++*g->n_unlisted;
        return WH_OK;
    }
    return wh_buf_add(g->problems, line);
}

/* A problem of a shape rule: its ratchet value (ratchet.h) is a.value
 * with the group's shape (shape_value). */
static enum wh_err problem_at(struct group_ctx *g, struct about a, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum wh_err problem_at(struct group_ctx *g, struct about a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum wh_err err = vproblem_at(g, a, false, fmt, ap);
    va_end(ap);
    return err;
}

/* A problem of a rule that reads its own field only: its ratchet value is
 * a.value alone. */
static enum wh_err problem_own_at(struct group_ctx *g, struct about a, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum wh_err problem_own_at(struct group_ctx *g, struct about a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum wh_err err = vproblem_at(g, a, true, fmt, ap);
    va_end(ap);
    return err;
}

/* A problem about the group as a whole. */
#define problem(g, ...) problem_at((g), ABOUT_GROUP, __VA_ARGS__)

/* Record one warning of this group: into the decision and the report. */
static enum wh_err warn_at(struct group_ctx *g, struct about a, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum wh_err warn_at(struct group_ctx *g, struct about a, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    enum wh_err err = wh_decision_warn_text(g->d, text); /* cuts text as the warning says it */
    return err ? err : report(g, true, a, true, fmt, text);
}

/* The template's TPU request; false when the group is not a TPU group. A
 * quantity that cannot be read is the group's problem (g->n_problems). */
static enum wh_err tpu_request(struct group_ctx *g, bool *is_tpu)
{
    char errbuf[WH_ERRBUF_LEN];
    *is_tpu = false;
    for (const cJSON *k = g->containers ? g->containers->child : NULL; k; k = k->next) {
        struct wh_tpu_request rq;
        enum wh_err qerr = wh_container_tpu(k, &rq, errbuf);
        if (qerr == WH_ERR_NOMEM)
            return qerr;
        if (qerr) {
            *is_tpu = true;
            return problem_at(g,
                              (struct about){"template.spec.containers[].resources", "",
                                             "a Kubernetes quantity"},
                              "%s", errbuf);
        }
        if (rq.requests_tpu) {
            *is_tpu = true;
            g->chips_per_host += rq.chips;
        }
    }
    return WH_OK;
}

/* The generation table's rules (topology.h): an unknown accelerator, a
 * topology of the wrong dimensionality, a chip count no VM has. */
static enum wh_err check_shape(struct group_ctx *g, const char *topo_field, bool *ok)
{
    const char *accel = wh_node_selector(g->tmpl_spec, WH_SEL_ACCELERATOR);
    struct wh_tpu_shape s = {
        .accel = accel,
        .accel_field = "template.spec.nodeSelector[" WH_SEL_ACCELERATOR "]",
        .topology = g->topology,
        .topo_field = topo_field,
        .chips = g->chips_per_host,
        .chips_field = "template.spec.containers[].resources[" WH_TPU_RESOURCE "]",
        .hosts_field = "numOfHosts",
    };
    struct wh_topology t;
    const struct wh_tpu_gen_info *gen;
    struct wh_shape_problem p;
    *ok = wh_tpu_shape_check(&s, &t, &gen, &p);
    char text[768], brief[100];
    if (*ok && wh_tpu_topology_undocumented(gen, &t, g->topology, topo_field, text, sizeof(text),
                                            brief, sizeof(brief))) {
        /* the warning on the RayCluster, the whole text in its Event */
        wh_decision_event(g->d, WH_REASON_TOPOLOGY_UNDOCUMENTED, "RayCluster %s, group \"%s\": %s",
                          g->cluster, g->group, text);
        WH_TRY(wh_decision_warn(g->d, "group \"%s\": %s", g->group, brief));
        return report(g, true, (struct about){topo_field, g->topology, ""}, true,
                      WH_RULE_TOPOLOGY_UNDOCUMENTED, text);
    }
    if (*ok)
        return WH_OK;
    fix_fits(g, p.fits, p.n_fits);
    bool on_accel = !strcmp(p.rule, WH_RULE_ACCELERATOR);
    bool on_chips = !strcmp(p.rule, WH_RULE_CHIPS_PER_VM);
    char n1[24];
    return problem_at(g,
                      (struct about){on_accel   ? s.accel_field
                                     : on_chips ? s.chips_field
                                                : topo_field,
                                     on_accel   ? accel
                                     : on_chips ? lstr(g->chips_per_host, n1, sizeof(n1))
                                                : g->topology,
                                     ""},
                      "%s", p.text);
}

static enum wh_err check_hosts(struct group_ctx *g, bool *ok);

static enum wh_err check_match(struct group_ctx *g, bool *ok)
{
    char errbuf[WH_ERRBUF_LEN];
    *ok = false;
    const cJSON *nh = wh_json_get(g->spec, "numOfHosts");
    long whole;
    if (nh && !cJSON_IsNull(nh) && !wh_json_whole(nh, INT32_MIN, INT32_MAX, &whole)) {
        char *text = cJSON_PrintUnformatted(nh);
        if (!text)
            return WH_ERR_NOMEM;
        enum wh_err err = problem_at(g, (struct about){"numOfHosts", text, "a whole number"},
                                     "numOfHosts is %.*s, not a whole number of 32 bits (the "
                                     "RayCluster field is an int32); set numOfHosts to the "
                                     "number of TPU hosts of one slice",
                                     (int)wh_utf8_cut(text, 64), text);
        cJSON_free(text);
        return err;
    }
    char n1[24];
    if (g->num_hosts <= 0)
        return problem_at(g,
                          (struct about){"numOfHosts",
                                         !nh || cJSON_IsNull(nh) ? ""
                                                                 : lstr(g->num_hosts, n1, sizeof(n1)),
                                         "1 or more"},
                          "numOfHosts is %s; set numOfHosts to the number of TPU hosts of one "
                          "slice (1 for a single-host slice)",
                          !nh || cJSON_IsNull(nh) ? "not set"
                          : g->num_hosts          ? "negative"
                                                  : "0");
    /* The KubeRay path's topology rule, the one its pods get (mutate.c, before
     * wh_slice_topology, says why the workload path's differs). */
    g->topology = wh_slice_topology(g->tmpl, g->tmpl_spec, &g->from_annotation);
    const char *topo_field = g->from_annotation
                                 ? "template.metadata.annotations[" WH_ANN_SLICE_TOPOLOGY "]"
                                 : "template.spec.nodeSelector[" WH_SEL_TOPOLOGY "]";
    if (!g->topology || !*g->topology)
        return problem_at(g, (struct about){topo_field, "", "AxB or AxBxC"},
                          "TPU topology not specified: set template.spec.nodeSelector[\"%s\"] "
                          "(for example \"2x2x2\" or \"4x4\")",
                          WH_SEL_TOPOLOGY);
    if (wh_topology_parse(g->topology, &g->topo, errbuf))
        return problem_at(g, (struct about){topo_field, g->topology, "AxB or AxBxC"},
                          "%s %s: %s; use the form AxB or AxBxC",
                          g->from_annotation ? "template annotation" : "template.spec.nodeSelector",
                          g->from_annotation ? WH_ANN_SLICE_TOPOLOGY : WH_SEL_TOPOLOGY, errbuf);
    WH_TRY(check_shape(g, topo_field, ok));
    return *ok ? check_hosts(g, ok) : WH_OK;
}

/* The hosts a possible shape gives: the chips per pod divide the
 * topology's, into no more hosts than a slice may have, and numOfHosts is
 * their count. Each denial names its fix (fix_fits, numOfHosts). */
static enum wh_err check_hosts(struct group_ctx *g, bool *ok)
{
    *ok = false;
    char n1[24], n2[24], divisor[48], vals[512];
    snprintf(divisor, sizeof(divisor), "a divisor of %ld", g->topo.chips);
    if (g->chips_per_host > g->topo.chips || g->topo.chips % g->chips_per_host) {
        group_fits(g, vals, sizeof(vals));
        return problem_at(g,
                          (struct about){"template.spec.containers[].resources[" WH_TPU_RESOURCE "]",
                                         lstr(g->chips_per_host, n1, sizeof(n1)), divisor},
                          "each pod requests %ld TPU chips (google.com/tpu), which does not divide "
                          "the %ld chips of topology %s; request a number of chips per pod that "
                          "divides it (the machine type's chips per VM)%s%s%s",
                          g->chips_per_host, g->topo.chips, g->topology,
                          *vals ? "; valid values: " : "", vals,
                          *vals ? " (change both together)" : "");
    }
    long expected = wh_topology_hosts(&g->topo, g->chips_per_host);
    if (expected > WH_MAX_HOSTS) { /* the pod path's limit (mutate.c, check_identity) */
        group_fits(g, vals, sizeof(vals));
        return problem_at(g,
                          (struct about){"template.spec.containers[].resources[" WH_TPU_RESOURCE "]",
                                         lstr(g->chips_per_host, n1, sizeof(n1)), ""},
                          "topology %s with %ld chips per pod gives %ld hosts, over the %ld its "
                          "pods may have (they are refused); request more google.com/tpu per "
                          "pod%s%s%s",
                          g->topology, g->chips_per_host, expected, WH_MAX_HOSTS,
                          *vals ? "; valid values: " : "", vals,
                          *vals ? " (change both together)" : "");
    }
    if (expected != g->num_hosts) {
        char hf[64], hp[64];
        snprintf(hf, sizeof(hf), "spec.workerGroupSpecs[%d].numOfHosts", g->index);
        snprintf(hp, sizeof(hp), "/spec/workerGroupSpecs/%d/numOfHosts", g->index);
        wh_suggest_edit(g->fix, 0, WH_EDIT_NUMBER, hf, hp, expected, NULL);
        return problem_at(g,
                          (struct about){"numOfHosts", lstr(g->num_hosts, n1, sizeof(n1)),
                                         lstr(expected, n2, sizeof(n2))},
                          "Number of workers in worker group not equal to specified topology: "
                          "topology %s has %ld chips and each pod requests %ld chips, so numOfHosts "
                          "must be %ld, not %ld; set numOfHosts: %ld",
                          g->topology, g->topo.chips, g->chips_per_host, expected, g->num_hosts,
                          expected);
    }
    *ok = true;
    return WH_OK;
}

static enum wh_err check_subslice(struct group_ctx *g, const struct wh_state *st, char *errbuf)
{
    const cJSON *cl_labels = wh_json_path(g->cluster_obj, "metadata", "labels", NULL);
    const cJSON *t_labels = wh_json_path(g->tmpl, "metadata", "labels", NULL);
    const cJSON *t_ann = wh_json_path(g->tmpl, "metadata", "annotations", NULL);
    if (!g->from_annotation || wh_managed(cl_labels, t_ann) || wh_managed(t_labels, t_ann) ||
        g->num_hosts <= 1)
        return WH_OK;
    const char *parent = wh_node_selector(g->tmpl_spec, WH_SEL_TOPOLOGY);
    const char *accel = wh_node_selector(g->tmpl_spec, WH_SEL_ACCELERATOR);
    if (!parent || !*parent)
        return problem_at(g,
                          (struct about){"template.spec.nodeSelector[" WH_SEL_TOPOLOGY "]", "",
                                         "the node pool topology"},
                          "must specify parent topology \"%s\" in nodeSelector when using "
                          "subslice annotation",
                          WH_SEL_TOPOLOGY);
    char fit[512];
    if (!wh_subslice_fits(g->topology, parent, fit, sizeof(fit)))
        return problem_at(g,
                          (struct about){"template.metadata.annotations[" WH_ANN_SLICE_TOPOLOGY "]",
                                         g->topology, parent},
                          "%s", fit);
    struct wh_subslice_index idx;
    enum wh_err err = wh_subslice_find_memo(g->subslices, st,
                                            wh_json_get(g->tmpl_spec, "nodeSelector"), g->num_hosts,
                                            &idx, errbuf);
    if (err)
        return err;
    char n1[24];
    if (idx.n_nodes == 0)
        return warn_at(g, (struct about){"template.spec.nodeSelector", "", ""},
                       "Subsliced TPU worker group \"%s\" targets zero nodes; "
                       "re-create it after nodes are provisioned",
                       g->group);
    if (idx.pool_only)
        return problem_at(
            g,
            (struct about){"template.spec.nodeSelector[" WH_SEL_ACCELERATOR "]", accel ? accel : "",
                           "a TPU type with Dynamic Slicing"},
            "cannot subslice TPU type \"%s\" without Dynamic Slicing "
            "(https://docs.cloud.google.com/kubernetes-engine/docs/concepts/dynamic-slicing)",
            accel ? accel : "");
    if (!idx.key)
        return problem_at(g, (struct about){"numOfHosts", lstr(g->num_hosts, n1, sizeof(n1)), ""},
                          "ambiguous subslice: could not find affinity rule to schedule %ld hosts "
                          "(no host, subblock, block or node pool of the %zu matching nodes has "
                          "exactly %ld nodes)",
                          g->num_hosts, idx.n_nodes, g->num_hosts);
    return WH_OK;
}

static bool has_env(const cJSON *container, const char *name, const char *value)
{
    struct wh_env_lookup lk;
    wh_env_lookup(wh_json_get(container, "env"), name, &lk);
    return lk.exists && (!value || !strcmp(lk.value, value));
}

/* The TPU count declared in rayStartParams.resources, a JSON object written
 * as a string and often quoted or escaped again ('"{\"TPU\": 8}"'). Scanned
 * in place: no allocation, so running out of memory cannot hide a warning.
 * -1 when there is no "TPU" key with a whole number. */
static long declared_tpu(const cJSON *spec)
{
    const char *res = wh_json_str(wh_json_get(spec, "rayStartParams"), "resources");
    for (const char *p = res ? strstr(res, "TPU") : NULL; p; p = strstr(p + 1, "TPU")) {
        const char *q = p + 3;
        bool quoted_key = p > res && (p[-1] == '"' || p[-1] == '\'');
        while (*q == '\\' || *q == '"' || *q == '\'')
            q++;
        while (*q == ' ')
            q++;
        if (!quoted_key || *q != ':')
            continue;
        for (q++; *q == ' '; q++)
            ;
        long v = 0;
        int digits = 0;
        for (; *q >= '0' && *q <= '9' && digits < 9; q++, digits++)
            v = v * 10 + (*q - '0');
        if (digits)
            return v;
    }
    return -1;
}

static enum wh_err warnings(struct group_ctx *g)
{
    enum wh_err err = WH_OK;
    bool megascale = false;
    for (const cJSON *k = g->containers ? g->containers->child : NULL; k; k = k->next)
        megascale |= has_env(k, "MEGASCALE_NUM_SLICES", NULL);
    if (megascale && g->num_hosts == 1)
        err = warn_at(g,
                      (struct about){"template.spec.containers[].env[MEGASCALE_NUM_SLICES]", "", ""},
                      "group \"%s\": MEGASCALE_NUM_SLICES on a single-host group; "
                      "the coordinator name will not resolve",
                      g->group);
    const char *accel = wh_node_selector(g->tmpl_spec, WH_SEL_ACCELERATOR);
    enum wh_tpu_gen gen = wh_tpu_gen_from_accelerator(accel);
    if (!err && gen == WH_GEN_TPU7X && g->chips_per_host > 0 &&
        declared_tpu(g->spec) == 2 * g->chips_per_host) {
        const cJSON *worker = g->containers ? g->containers->child : NULL;
        const cJSON *head = wh_json_path(g->cluster_obj, "spec", "headGroupSpec", "template",
                                         "spec", "containers", NULL);
        head = cJSON_IsArray(head) ? head->child : NULL;
        bool w_ok = worker && has_env(worker, "RAY_TPU_RESOURCE_PER_CHIP", "2");
        bool h_ok = head && has_env(head, "RAY_TPU_RESOURCE_PER_CHIP", "2");
        if (!w_ok || !h_ok)
            err = warn_at(g,
                          (struct about){"template.spec.containers[].env[RAY_TPU_RESOURCE_PER_CHIP]",
                                         "", "2"},
                          "group \"%s\": TPU=2x chips needs RAY_TPU_RESOURCE_PER_CHIP=2 "
                          "on the %s container",
                          g->group,
                          !w_ok && !h_ok ? "worker and head"
                          : !w_ok        ? "worker"
                                         : "head");
    }
    return err;
}

/* The largest replica index the group's pods can get: replicas, minReplicas
 * and maxReplicas bound it; maxReplicas at the CRD default (int32 max)
 * means "no bound" and is not used. */
static long max_replica(const cJSON *spec)
{
    static const char *const keys[] = {"replicas", "minReplicas", "maxReplicas"};
    double most = 1;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const cJSON *v = wh_json_get(spec, keys[i]);
        if (cJSON_IsNumber(v) && v->valuedouble > most && v->valuedouble < 2147483647.0)
            most = v->valuedouble;
    }
    return (long)most - 1;
}

/* The names the group's pods get must be ones the API server accepts
 * (docs/kuberay-pods.md §5): checked for the first pod, then for the largest
 * indices, with the text mutation would deny each pod with. */
static enum wh_err check_names(struct group_ctx *g)
{
    struct wh_group_names n = {.cluster = g->cluster,
                               .group = g->group,
                               .label = true,
                               .multi_host = g->num_hosts > 1};
    char why[1024];
    bool ok = wh_names_group_ok(&n, why, sizeof(why));
    n.replica = max_replica(g->spec);
    n.host = g->num_hosts - 1;
    if (ok)
        ok = wh_names_group_ok(&n, why, sizeof(why));
    return ok ? WH_OK : problem(g, "%s", why);
}

/* A TPU container with two entries of a variable the webhook sets: its pods
 * would be denied (issue 10), so say it when the RayCluster is applied. */
static enum wh_err check_env_duplicates(struct group_ctx *g)
{
    int i = 0;
    for (const cJSON *k = g->containers->child; k; k = k->next, i++) {
        int first, second;
        const char *name = wh_container_requests_tpu(k)
                               ? wh_env_duplicate(wh_json_get(k, "env"), &first, &second)
                               : NULL;
        if (name)
            WH_TRY(
                problem_own_at(g, (struct about){"", name, ""},
                               "container \"%s\" sets %s twice (template.spec.containers[%d].env[%d] "
                               "and env[%d]); the kubelet uses the last one and the webhook edits "
                               "one of them, so its pods would be denied; keep one %s entry",
                               wh_json_str0(k, "name"), name, i, first, second, name));
    }
    return WH_OK;
}

/* The pod path's TorchTPU rule (mutate.c, torch_env): a user's
 * TPU_WORKER_HOSTNAMES on a multi-host group is the list TorchTPU's
 * addresses are built over, and one with more hosts than the topology has
 * chips leaves none per host, so its pods are refused. */
static enum wh_err check_peers(struct group_ctx *g)
{
    int i = 0;
    for (const cJSON *k = g->containers->child; k && g->num_hosts > 1; k = k->next, i++) {
        struct wh_env_lookup lk, torch;
        wh_env_lookup(wh_json_get(k, "env"), "TPU_WORKER_HOSTNAMES", &lk);
        wh_env_lookup(wh_json_get(k, "env"), "TORCH_TPU_TOPOLOGY", &torch);
        if (!wh_container_requests_tpu(k) || torch.exists || !*lk.value ||
            !strcmp(lk.value, "localhost"))
            continue;
        long hosts = wh_host_count(lk.value);
        if (hosts <= g->topo.chips)
            continue;
        char n1[24];
        WH_TRY(problem_at(g,
                          (struct about){"template.spec.containers[].env[TPU_WORKER_HOSTNAMES]",
                                         lstr(hosts, n1, sizeof(n1)), ""},
                          "container \"%.63s\" (template.spec.containers[%d]) sets "
                          "TPU_WORKER_HOSTNAMES to %ld hosts but topology %s has only %ld chips, "
                          "so TorchTPU would get no address and its pods are refused; list the "
                          "slice's %ld hosts, or unset TPU_WORKER_HOSTNAMES, or set "
                          "TORCH_TPU_TOPOLOGY in the container to skip TorchTPU injection",
                          wh_json_str0(k, "name"), i, hosts, g->topology, g->topo.chips,
                          g->num_hosts));
    }
    return WH_OK;
}

/* A replica count field; def when absent, not a number or negative. */
static long count_field(const cJSON *spec, const char *key, long def)
{
    long n;
    return wh_json_whole(wh_json_get(spec, key), 0, INT32_MAX, &n) ? n : def;
}

/* The replicas KubeRay keeps: replicas (absent: minReplicas) clamped into
 * [minReplicas, maxReplicas] (docs/kuberay-pods.md §4). */
static long kept_replicas(const cJSON *spec, long *min, long *max)
{
    *min = count_field(spec, "minReplicas", 0);
    *max = count_field(spec, "maxReplicas", INT32_MAX);
    long replicas = count_field(spec, "replicas", *min);
    return replicas < *min ? *min : replicas > *max ? *max : replicas;
}

/* MEGASCALE's world is the group's slices (docs/workloads.md, "One world"):
 * the webhook gives replica r MEGASCALE_SLICE_ID r, so a declared count
 * other than the replicas leaves slices waiting for ones that never join,
 * or gives one an id past the count. */
static enum wh_err check_megascale(struct group_ctx *g)
{
    struct wh_env_lookup lk = {.value = ""};
    for (const cJSON *k = g->containers->child; k && !*lk.value; k = k->next)
        if (wh_container_requests_tpu(k))
            wh_env_lookup(wh_json_get(k, "env"), "MEGASCALE_NUM_SLICES", &lk);
    if (!*lk.value)
        return WH_OK; /* absent, empty (the webhook's lookup: unset) or a valueFrom */
    long min, max, replicas = kept_replicas(g->spec, &min, &max);
    bool autoscaled = cJSON_IsTrue(
        wh_json_path(g->cluster_obj, "spec", "enableInTreeAutoscaling", NULL));
    char n1[24], n2[24];
    if (autoscaled && min != max)
        return warn_at(g,
                       (struct about){"template.spec.containers[].env[MEGASCALE_NUM_SLICES]",
                                      lk.value, ""},
                       "group \"%.24s\": MEGASCALE_NUM_SLICES \"%.8s\" fixed, replicas "
                       "autoscale %ld..%s; set minReplicas = maxReplicas",
                       g->group, lk.value, min,
                       max == INT32_MAX ? "unbounded" : lstr(max, n1, sizeof(n1)));
    long n;
    if (replicas == 0 || (wh_parse_long(lk.value, &n) && n == replicas))
        return WH_OK; /* no pods yet */
    return problem_own_at(g,
                          (struct about){"template.spec.containers[].env[MEGASCALE_NUM_SLICES]",
                                         lk.value, lstr(replicas, n2, sizeof(n2))},
                          "MEGASCALE_NUM_SLICES is \"%.32s\" but the group has %ld replicas (slices), "
                          "which get MEGASCALE_SLICE_ID 0..%ld, so slices would wait for ones that "
                          "never join; set MEGASCALE_NUM_SLICES to \"%ld\" or replicas to it",
                          lk.value, replicas, replicas - 1, replicas);
}

/* A literal MEGASCALE_SLICE_ID (megascale.h, the JobSet's rule too): the
 * pod path keeps a user's value (docs/internals/reference-behaviour.md
 * §2.7.4), so every replica of the group would claim it. MEGASCALE is on
 * for a container that has MEGASCALE_NUM_SLICES (any deciding entry, as
 * mutate.c reads it); the replicas counted are the most the group may have
 * (maxReplicas when it autoscales). */
static enum wh_err check_slice_id(struct group_ctx *g)
{
    long min, max, replicas = kept_replicas(g->spec, &min, &max);
    if (cJSON_IsTrue(wh_json_path(g->cluster_obj, "spec", "enableInTreeAutoscaling", NULL)))
        replicas = max > replicas ? max : replicas;
    int i = 0;
    for (const cJSON *k = g->containers->child; k; k = k->next, i++) {
        struct wh_env_lookup lk;
        const char *id;
        wh_env_lookup(wh_json_get(k, "env"), "MEGASCALE_NUM_SLICES", &lk);
        if (!wh_container_requests_tpu(k) ||
            !wh_megascale_shared_slice_id(wh_json_get(k, "env"), lk.exists, replicas, &id))
            continue;
        char n1[24];
        WH_TRY(problem_own_at(g,
                              (struct about){"template.spec.containers[].env[MEGASCALE_SLICE_ID]",
                                             id, ""},
                              "container \"%.63s\" (template.spec.containers[%d]) sets "
                              "MEGASCALE_SLICE_ID \"%.32s\" but the group's %s replicas (slices) "
                              "share this template, so every replica gets that id and MEGASCALE "
                              "never starts; remove it (the webhook sets MEGASCALE_SLICE_ID per "
                              "replica: replica r gets r)",
                              wh_json_str0(k, "name"), i, id,
                              replicas == INT32_MAX ? "autoscaled" : lstr(replicas, n1, sizeof(n1))));
    }
    return WH_OK;
}

/* TPU7x runs one libtpu per TPU container in the pod's one network, and
 * with MEGASCALE each binds its MEGASCALE_PORT: a literal, else the
 * webhook's 8081 + the TPU container's index (mutate.c, megascale_env).
 * Two on one port (megascale.h's rule, the JobSet's too) break every pod
 * of a multi-slice group; MEGASCALE is on for a container that has
 * MEGASCALE_NUM_SLICES (as mutate.c reads it), and the group is judged
 * when its pods form more than one host (replicas as check_slice_id
 * counts them). */
/* Where container k (containers[i]) gets its MEGASCALE_PORT, for messages. */
static void port_source(const cJSON *k, int i, long port, char *out, size_t n)
{
    struct wh_env_lookup lk;
    wh_env_lookup(wh_json_get(k, "env"), "MEGASCALE_PORT", &lk);
    if (lk.index >= 0)
        snprintf(out, n, "template.spec.containers[%d].env[%d]", i, lk.index);
    else
        snprintf(out, n, "template.spec.containers[%d], no MEGASCALE_PORT: the webhook's %ld", i,
                 port);
}

static enum wh_err check_shared_port(struct group_ctx *g)
{
    long min, max, replicas = kept_replicas(g->spec, &min, &max);
    if (cJSON_IsTrue(wh_json_path(g->cluster_obj, "spec", "enableInTreeAutoscaling", NULL)))
        replicas = max > replicas ? max : replicas;
    if (!wh_is_tpu7x(wh_node_selector(g->tmpl_spec, WH_SEL_ACCELERATOR)) || replicas < 1 ||
        (replicas == 1 && g->num_hosts <= 1))
        return WH_OK;
    int i = 0;
    for (const cJSON *k = g->containers->child; k; k = k->next, i++) {
        const cJSON *o;
        int oi;
        long port;
        if (!wh_container_requests_tpu(k) || !has_env(k, "MEGASCALE_NUM_SLICES", NULL) ||
            !wh_megascale_shared_port(g->containers, k, &o, &oi, &port))
            continue;
        char n1[24], at_o[128], at_k[128];
        port_source(o, oi, port, at_o, sizeof(at_o));
        port_source(k, i, port, at_k, sizeof(at_k));
        WH_TRY(
            problem_own_at(g,
                           (struct about){"template.spec.containers[].env[MEGASCALE_PORT]",
                                          lstr(port, n1, sizeof(n1)), "one port per TPU container"},
                           "TPU containers \"%.63s\" (%s) and \"%.63s\" (%s) both use "
                           "MEGASCALE_PORT %ld on TPU7x, so the two libtpu processes of each pod "
                           "bind it in the pod's one network and MEGASCALE never starts; remove "
                           "MEGASCALE_PORT from them (the webhook gives %ld + the TPU container's "
                           "index) or give each its own",
                           wh_json_str0(o, "name"), at_o, wh_json_str0(k, "name"), at_k, port,
                           (long)WH_MEGASCALE_PORT));
    }
    return WH_OK;
}

/* Names that resolve (docs/workloads.md): the group's pods reach each other
 * by cluster-DNS name (TPU_WORKER_HOSTNAMES, the MEGASCALE coordinator) when
 * it is multi-host or MEGASCALE joins its replicas (megascale.h, fill off:
 * the KubeRay path injects MEGASCALE_* only into a container that sets
 * MEGASCALE_NUM_SLICES), and a hostNetwork pod resolves them only with
 * dnsPolicy ClusterFirstWithHostNet. KubeRay sets no dnsPolicy. The
 * replicas counted are the most the group may have, as check_slice_id's;
 * numOfHosts as given, which is what KubeRay creates. The head is one pod
 * with no peers by name: not judged. */
static enum wh_err check_host_network(struct group_ctx *g)
{
    if (g->num_hosts <= 0)
        return WH_OK; /* check_match names numOfHosts */
    long min, max, replicas = kept_replicas(g->spec, &min, &max);
    if (cJSON_IsTrue(wh_json_path(g->cluster_obj, "spec", "enableInTreeAutoscaling", NULL)) &&
        max > replicas)
        replicas = max == INT32_MAX ? (replicas > 2 ? replicas : 2) : max; /* several, at least */
    long world = g->num_hosts *
                 wh_megascale_joined_slices(g->containers, replicas > 1 ? replicas : 1, false);
    char field[64], dns[800];
    snprintf(field, sizeof(field), "spec.workerGroupSpecs[%d].template.spec", g->index);
    if (!wh_hostnet_dns_conflict(g->tmpl_spec, field, world, WH_DNS_NAMES_KUBERAY, dns, sizeof(dns)))
        return WH_OK;
    const char *policy = wh_json_str(g->tmpl_spec, "dnsPolicy");
    return problem_own_at(g,
                          (struct about){"template.spec.dnsPolicy", policy ? policy : "",
                                         "ClusterFirstWithHostNet"},
                          "%.799s", dns);
}

static enum wh_err check_group(struct group_ctx *g, const struct wh_state *st, char *errbuf)
{
    g->tmpl = wh_json_get(g->spec, "template");
    g->tmpl_spec = wh_json_get(g->tmpl, "spec");
    const cJSON *containers = wh_json_get(g->tmpl_spec, "containers");
    g->containers = cJSON_IsArray(containers) ? containers : NULL;
    g->group = wh_json_str0(g->spec, "groupName");
    const cJSON *nh = wh_json_get(g->spec, "numOfHosts");
    if (!wh_json_whole(nh, INT32_MIN, INT32_MAX, &g->num_hosts))
        g->num_hosts = 0; /* check_match names the bad value */
    bool is_tpu, ok;
    enum wh_err err = tpu_request(g, &is_tpu);
    if (err || g->n_problems)
        return err; /* a quantity that cannot be read: the rest would guess */
    if (cJSON_GetArraySize(g->containers) > 0 && !is_tpu)
        return WH_OK; /* CPU/GPU group */
    if (cJSON_GetArraySize(g->containers) == 0)
        return problem_at(g, (struct about){"template.spec.containers", "[]", "the Ray container"},
                          "template.spec.containers is empty; a worker group needs its Ray "
                          "container (Container path not specified)");
    err = check_env_duplicates(g);
    if (!err)
        err = check_match(g, &ok);
    if (!err && ok)
        err = check_names(g);
    if (!err && ok)
        err = check_peers(g);
    if (!err && ok)
        err = check_subslice(g, st, errbuf);
    if (!err)
        err = check_megascale(g);
    if (!err)
        err = check_slice_id(g);
    if (!err)
        err = check_shared_port(g);
    if (!err)
        err = check_host_network(g);
    if (!err)
        err = warnings(g);
    return err;
}

enum wh_err wh_validate_raycluster(const struct wh_review *rv, const struct wh_state *st,
                                   struct wh_decision *d, char *errbuf)
{
    return wh_validate_raycluster_report(rv, st, d, NULL, errbuf);
}

void wh_validation_free(struct wh_validation *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        wh_free(v->items[i].group);
        wh_free(v->items[i].message);
        wh_free(v->items[i].suggest);
    }
    wh_free(v->items);
    memset(v, 0, sizeof(*v));
}

size_t wh_validation_problems(const struct wh_validation *v, int index)
{
    size_t n = 0;
    for (size_t i = 0; v && i < v->n; i++)
        n += !v->items[i].warning && v->items[i].index == index;
    return n;
}

enum wh_err wh_validate_raycluster_report(const struct wh_review *rv, const struct wh_state *st,
                                          struct wh_decision *d, struct wh_validation *report,
                                          char *errbuf)
{
    const struct wh_review_info *in = wh_review_info(rv);
    const char *op = in->operation;
    if (strcmp(op, "CREATE") && strcmp(op, "UPDATE"))
        return WH_OK; /* D8: CREATE and UPDATE only */
    const cJSON *rc = wh_review_object(rv);
    if (!cJSON_IsObject(rc))
        return wh_decision_deny(d,
                                "request.object is not a RayCluster object; send the RayCluster "
                                "being %s",
                                strcmp(op, "CREATE") ? "updated" : "created");
    const char *name = in->cluster; /* metadata.name, else request.name */
    const cJSON *groups = wh_json_path(rc, "spec", "workerGroupSpecs", NULL);
    struct wh_buf problems;
    wh_buf_init(&problems, PROBLEMS_MAX);
    enum wh_err err = WH_OK;
    size_t n_problems = 0, n_unlisted = 0;
    struct wh_subslice_memo subslices;
    wh_subslice_memo_init(&subslices);
    struct wh_suggestion fix = {0};
    int i = 0;
    for (const cJSON *g = cJSON_IsArray(groups) ? groups->child : NULL; g && !err; g = g->next, i++) {
        struct group_ctx gc = {
            .cluster_obj = rc,
            .spec = g,
            .cluster = name,
            .index = i,
            .d = d,
            .problems = &problems,
            .n_unlisted = &n_unlisted,
            .report = report,
            .subslices = &subslices,
            .fix = &fix,
        };
        err = check_group(&gc, st, errbuf);
        n_problems += gc.n_problems;
    }
    wh_subslice_memo_free(&subslices);
    if (!err && n_unlisted)
        err = wh_decision_deny(d,
                               "%s; and %zu more problems of %zu in all (fix the ones above and "
                               "apply again to see the rest)",
                               wh_buf_ptr(&problems), n_unlisted, n_problems);
    else if (!err && n_problems)
        err = wh_decision_deny(d, "%s", wh_buf_ptr(&problems));
    if (!err && d->allowed && d->n_events) /* Events of its warnings, on the RayCluster */
        wh_event_subject_object(&d->subject, rc, in->ns, name);
    wh_buf_free(&problems);
    return err;
}
