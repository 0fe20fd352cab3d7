/* envverdict.c: the verdicts of the slice on preset values (see
 * wh/envverdict.h). */
#include "wh/envverdict.h"

#include <stdarg.h> /* va_list */
#include <ctype.h>  /* isspace */
#include <stdio.h>  /* snprintf, vsnprintf */
#include <string.h> /* memchr, strcmp, strchr, strncmp, strlen */

#include "wh/json.h"    /* wh_parse_long, wh_json_* */
#include "wh/podspec.h" /* wh_env_lookup */
#include "wh/tpuenv.h"  /* WH_RULE_IDENTITY_* */
#include "wh/utf8.h"    /* wh_utf8_trim_cut */

/* torchrun reads PET_<OPTION> as the default of --<option> (torch's
 * torch/distributed/run.py): the meanings are its options'. */
const struct wh_env_rule wh_env_rules[WH_ENVRULE__COUNT] = {
    [WH_ENVRULE_NPROC_NOT_COUNT] = {WH_ENV_PET_NPROC_PER_NODE, "pet-nproc-not-devices",
                                    WH_VERDICT_DENY,
                                    "`auto` or `cpu` (torchrun then starts one process per CPU of "
                                    "the host: no GPU is there), `gpu` or `xpu` (refused without "
                                    "one), 0 or any other text",
                                    "the container's TPU devices", NULL,
                                    "spec.trainer.numProcPerNode"},
    [WH_ENVRULE_NPROC_ABOVE] = {WH_ENV_PET_NPROC_PER_NODE, "pet-nproc-above-devices", WH_VERDICT_DENY,
                                "above the container's TPU devices (its `google.com/tpu` chips x "
                                "the devices per chip: 2 on TPU7x, else 1): the extra processes "
                                "find no device",
                                "the container's TPU devices", NULL, "spec.trainer.numProcPerNode"},
    [WH_ENVRULE_NPROC_BELOW] = {WH_ENV_PET_NPROC_PER_NODE, "pet-nproc-below-devices", WH_VERDICT_WARN,
                                "below the container's TPU devices: the others stay idle",
                                "the container's TPU devices", NULL, "spec.trainer.numProcPerNode"},
    [WH_ENVRULE_NNODES_WORLD] = {WH_ENV_PET_NNODES, "pet-nnodes-world", WH_VERDICT_DENY,
                                 "not the nodes of the torchrun world (one per TPU container of "
                                 "each pod of the slice, or of every slice MEGASCALE joins; a "
                                 "`MIN:MAX` range must hold it): rendezvous waits for nodes that "
                                 "never join, or refuses the extra ones; not judged when the "
                                 "container sets its own MEGASCALE slice count",
                                 "the world's nodes", NULL, "spec.trainer.numNodes"},
    [WH_ENVRULE_NODE_RANK_SHARED] = {WH_ENV_PET_NODE_RANK, "pet-node-rank-shared", WH_VERDICT_DENY,
                                     "a literal in a template of several pods (a `valueFrom`, "
                                     "Trainer's fieldRef to the completion index, is fine): every "
                                     "pod claims that rank",
                                     "none (the webhook sets each pod's) or a `valueFrom`", NULL,
                                     NULL},
    [WH_ENVRULE_NODE_RANK_OTHER] = {WH_ENV_PET_NODE_RANK, "pet-node-rank-other", WH_VERDICT_DENY,
                                    "a literal other than the container's own rank (a single pod's "
                                    "template, a LeaderWorkerSet's leaderTemplate: rank 0, or a "
                                    "pod)",
                                    "the container's rank", NULL, NULL},
    [WH_ENVRULE_MASTER_LOCAL] = {WH_ENV_PET_MASTER_ADDR, "pet-master-localhost", WH_VERDICT_DENY,
                                 "`localhost`, `127.0.0.1` or `::1` in a world of several pods: "
                                 "each waits on its own host",
                                 "none (the webhook sets worker 0's name)", NULL, NULL},
    [WH_ENVRULE_MASTER_PORT] = {WH_ENV_PET_MASTER_PORT, "pet-master-port", WH_VERDICT_KEPT,
                                "never: any free port works, and one template gives every pod the "
                                "same",
                                "-", NULL, NULL},
    [WH_ENVRULE_MS_NUM_SLICES] = {WH_ENV_MEGASCALE_NUM_SLICES, "megascale-num-slices",
                                  WH_VERDICT_DENY,
                                  "a literal other than the replicated job's replicas, slice ids "
                                  "left to the webhook",
                                  "none, or `\"\"` for independent slices", "One world", NULL},
    [WH_ENVRULE_MS_SLICE_ID] = {WH_ENV_MEGASCALE_SLICE_ID, "megascale-slice-id", WH_VERDICT_DENY,
                                "a literal in a template of several slices MEGASCALE joins",
                                "none, or a `valueFrom`", "One world", NULL},
    [WH_ENVRULE_MS_PORT] = {WH_ENV_MEGASCALE_PORT, "megascale-port", WH_VERDICT_DENY,
                            "one port for two TPU containers of a TPU7x pod",
                            "none, or one port per container", "One world", NULL},
    [WH_ENVRULE_WORKER_HOSTNAMES] = {WH_ENV_TPU_WORKER_HOSTNAMES, WH_RULE_IDENTITY_LOCALHOST,
                                     WH_VERDICT_DENY, "`localhost` in a slice of several hosts",
                                     "none", "One identity per slice", NULL},
    [WH_ENVRULE_TORCH_TOPOLOGY] = {WH_ENV_TORCH_TPU_TOPOLOGY, "torch-topology-kept",
                                   WH_VERDICT_WARN, "a grid other than the topology's",
                                   "none, or the topology's grid", "Rules", NULL},
    [WH_ENVRULE_WORKER_ID] = {WH_ENV_TPU_WORKER_ID, WH_RULE_IDENTITY_WORKER_ID, WH_VERDICT_DENY,
                              "a literal in a template of several hosts, or a pod's other than "
                              "its index",
                              "none, or a `valueFrom`", "One identity per slice", NULL},
};

_Static_assert(WH_ENV__COUNT <= 32, "wh_torch_world.overridden is one bit per variable");

/* torchrun's flags for the PET_* variables, in their dashed spelling; its
 * argparse takes each with underscores too (torch/distributed/run.py). */
static const struct {
    enum wh_env_var var;
    const char *flag;
} torchrun_flags[] = {
    {WH_ENV_PET_NPROC_PER_NODE, "nproc-per-node"}, {WH_ENV_PET_NNODES, "nnodes"},
    {WH_ENV_PET_NODE_RANK, "node-rank"},           {WH_ENV_PET_MASTER_ADDR, "master-addr"},
    {WH_ENV_PET_MASTER_PORT, "master-port"},
};

/* The bits of the variables whose flag the word w[0..len) is ("--node_rank",
 * "--node-rank=1") or abbreviates ("--nnode=2", "--nproc 4": torchrun's
 * argparse takes any prefix of an option that names it alone), else 0. A
 * prefix of several of these flags sets each: torchrun refuses it as
 * ambiguous itself, and the check errs toward not denying. */
static unsigned flag_word(const char *w, size_t len)
{
    if (len < 3 || w[0] != '-' || w[1] != '-')
        return 0;
    w += 2;
    len -= 2;
    const char *eq = memchr(w, '=', len);
    size_t n = eq ? (size_t)(eq - w) : len;
    unsigned bits = 0;
    for (size_t k = 0; n && k < sizeof(torchrun_flags) / sizeof(torchrun_flags[0]); k++) {
        const char *f = torchrun_flags[k].flag;
        size_t i = 0;
        while (i < n && f[i] && (w[i] == f[i] || (w[i] == '_' && f[i] == '-')))
            i++;
        if (i == n)
            bits |= 1u << torchrun_flags[k].var;
    }
    return bits;
}

/* The flags among the words of s, split at blanks and shell quotes. */
static unsigned flag_words(const char *s)
{
    unsigned bits = 0;
    while (*s) {
        while (*s && (isspace((unsigned char)*s) || *s == '"' || *s == '\''))
            s++;
        const char *w = s;
        while (*s && !isspace((unsigned char)*s) && *s != '"' && *s != '\'')
            s++;
        bits |= flag_word(w, (size_t)(s - w));
    }
    return bits;
}

unsigned wh_torchrun_overridden(const cJSON *container)
{
    static const char *const keys[2] = {"command", "args"};
    unsigned bits = 0;
    for (int k = 0; k < 2; k++) {
        const cJSON *a = wh_json_get(container, keys[k]);
        for (const cJSON *x = cJSON_IsArray(a) ? a->child : NULL; x; x = x->next)
            if (cJSON_IsString(x))
                bits |= flag_words(x->valuestring);
    }
    return bits;
}

const char *wh_trainjob_owner(const cJSON *obj)
{
    const cJSON *refs = wh_json_path(obj, "metadata", "ownerReferences", NULL);
    size_t g = strlen(WH_TRAINJOB_GROUP);
    for (const cJSON *r = cJSON_IsArray(refs) ? refs->child : NULL; r; r = r->next) {
        const char *api = wh_json_str0(r, "apiVersion");
        if (cJSON_IsTrue(wh_json_get(r, "controller")) &&
            !strcmp(wh_json_str0(r, "kind"), WH_TRAINJOB_KIND) &&
            !strncmp(api, WH_TRAINJOB_GROUP, g) && api[g] == '/')
            return wh_json_str0(r, "name");
    }
    return NULL;
}

const char *wh_env_verdict_name(enum wh_env_verdict v)
{
    static const char *const names[WH_VERDICT__COUNT] = {"kept", "warned", "denied"};
    return (unsigned)v < WH_VERDICT__COUNT ? names[v] : "?";
}

struct judge {
    const cJSON *env;
    const struct wh_torch_world *w;
    struct wh_env_finding *out;
    int n;
};

/* The literal value of var, NULL when absent, empty or a valueFrom. */
static const char *literal(const struct judge *j, enum wh_env_var var, int *index)
{
    struct wh_env_lookup lk;
    wh_env_lookup(j->env, wh_envtab[var].name, &lk);
    *index = lk.index;
    return lk.exists && *lk.value ? lk.value : NULL;
}

/* A finding: f->brief is "<NAME> \"<value>\" <brief>", f->text the
 * same with fmt's detail. */
__attribute__((format(printf, 7, 8))) static void find(struct judge *j, enum wh_env_rule_id rule,
                                                       int index, const char *value, long want,
                                                       const char *brief, const char *fmt, ...);

static void find(struct judge *j, enum wh_env_rule_id rule, int index, const char *value, long want,
                 const char *brief, const char *fmt, ...)
{
    if (j->n >= WH_ENV_FINDINGS_MAX)
        return;
    struct wh_env_finding *f = &j->out[j->n++];
    f->rule = rule;
    f->index = index;
    f->want[0] = '\0';
    if (want >= 0)
        snprintf(f->want, sizeof(f->want), "%ld", want);
    snprintf(f->value, sizeof(f->value), "%s", value);
    snprintf(f->brief, sizeof(f->brief), "%s \"%.16s\" %s", wh_envtab[wh_env_rules[rule].var].name,
             value, brief);
    int k = snprintf(f->text, sizeof(f->text), "sets %s \"%.40s\" (env[%d]) ",
                     wh_envtab[wh_env_rules[rule].var].name, value, index);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text + k, sizeof(f->text) - (size_t)k, fmt, ap);
    va_end(ap);
}

static void nproc(struct judge *j)
{
    int i;
    const char *v = literal(j, WH_ENV_PET_NPROC_PER_NODE, &i);
    long n, dev = j->w->devices;
    if (!v)
        return;
    char fix[40], brief[160];
    if (dev > 0)
        snprintf(fix, sizeof(fix), "set \"%ld\"", dev);
    else
        snprintf(fix, sizeof(fix), "set the container's TPU devices");
    if (!wh_parse_long(v, &n) || n <= 0) {
        bool cpu = !strcmp(v, "auto") || !strcmp(v, "cpu");
        bool gpu = !strcmp(v, "gpu") || !strcmp(v, "xpu");
        snprintf(brief, sizeof(brief), "is no TPU device count; %s", fix);
        find(j, WH_ENVRULE_NPROC_NOT_COUNT, i, v, dev > 0 ? dev : -1, brief, "%s; %s",
             cpu   ? "which torchrun turns into one process per CPU of the host (no GPU there)"
             : gpu ? "which torchrun refuses without that accelerator"
                   : "which is no count of processes",
             fix);
    } else if (dev > 0 && n > dev) {
        snprintf(brief, sizeof(brief), "is above its %ld TPU devices; %s", dev, fix);
        find(j, WH_ENVRULE_NPROC_ABOVE, i, v, dev, brief,
             "but the container has %ld TPU devices, so torchrun starts %ld processes of which "
             "%ld find no device and fail or hang at start-up; %s",
             dev, n, n - dev, fix);
    } else if (dev > 0 && n < dev) {
        snprintf(brief, sizeof(brief), "leaves %ld of %ld TPU devices idle; %s", dev - n, dev, fix);
        find(j, WH_ENVRULE_NPROC_BELOW, i, v, dev, brief,
             "but the container has %ld TPU devices, so %ld of them stay idle; %s", dev, dev - n,
             fix);
    }
}

/* torchrun's --nnodes: N or MIN:MAX. */
static bool nnodes_range(const char *v, long *lo, long *hi)
{
    const char *colon = strchr(v, ':');
    if (!colon)
        return wh_parse_long(v, lo) && (*hi = *lo) > 0;
    char a[24];
    size_t len = (size_t)(colon - v);
    if (len >= sizeof(a))
        return false;
    memcpy(a, v, len);
    a[len] = '\0';
    return wh_parse_long(a, lo) && wh_parse_long(colon + 1, hi) && *lo > 0 && *lo <= *hi;
}

static void nnodes(struct judge *j)
{
    int i;
    const char *v = literal(j, WH_ENV_PET_NNODES, &i);
    long lo, hi, want = j->w->nnodes;
    if (!v || want <= 0)
        return;
    bool ok = nnodes_range(v, &lo, &hi);
    if (ok && lo <= want && want <= hi)
        return;
    char brief[160];
    snprintf(brief, sizeof(brief), "is not the world's %ld nodes; set \"%ld\"", want, want);
    find(j, WH_ENVRULE_NNODES_WORLD, i, v, want, brief,
         "but its torchrun world has %ld nodes (one per TPU container of its %ld pods), so %s; "
         "set \"%ld\"",
         want, j->w->pods,
         !ok         ? "torchrun cannot read it"
         : lo > want ? "its rendezvous waits for nodes that never join"
                     : "the nodes beyond it are refused at rendezvous",
         want);
}

static void node_rank(struct judge *j)
{
    int i;
    const char *v = literal(j, WH_ENV_PET_NODE_RANK, &i);
    long n;
    if (!v)
        return;
    if (j->w->rank < 0 && j->w->pods > 1) {
        find(j, WH_ENVRULE_NODE_RANK_SHARED, i, v, -1, "is shared by the pods; remove it",
             "in a template of %ld pods, so every pod claims that rank and torchrun never "
             "starts; remove it (the webhook sets each pod's) or set it with a valueFrom",
             j->w->pods);
    } else if (j->w->rank >= 0 && !(wh_parse_long(v, &n) && n == j->w->rank)) {
        char brief[160];
        snprintf(brief, sizeof(brief), "is not its rank; set \"%ld\"", j->w->rank);
        find(j, WH_ENVRULE_NODE_RANK_OTHER, i, v, j->w->rank, brief,
             "but the container is node %ld of its torchrun world; set \"%ld\" or remove it",
             j->w->rank, j->w->rank);
    }
}

static void master(struct judge *j)
{
    int i;
    const char *v = literal(j, WH_ENV_PET_MASTER_ADDR, &i);
    if (!v || j->w->pods < 2 ||
        (strcmp(v, "localhost") && strcmp(v, "127.0.0.1") && strcmp(v, "::1")))
        return;
    find(j, WH_ENVRULE_MASTER_LOCAL, i, v, -1, "is no peer's address; remove it",
         "but its torchrun world spans %ld pods, so each waits for the others on its own host; "
         "remove it (the webhook sets worker 0's name)",
         j->w->pods);
}

int wh_env_judge(const cJSON *env, const struct wh_torch_world *w,
                 struct wh_env_finding out[WH_ENV_FINDINGS_MAX])
{
    struct judge j = {.env = env, .w = w, .out = out, .n = 0};
    if (!(w->overridden & 1u << WH_ENV_PET_NPROC_PER_NODE))
        nproc(&j);
    if (!(w->overridden & 1u << WH_ENV_PET_NNODES))
        nnodes(&j);
    if (!(w->overridden & 1u << WH_ENV_PET_NODE_RANK))
        node_rank(&j);
    if (!(w->overridden & 1u << WH_ENV_PET_MASTER_ADDR))
        master(&j);
    return j.n;
}

void wh_env_warning_text(char *out, size_t n, const char *container, const struct wh_env_finding *f)
{
    snprintf(out, n, "container \"%.20s\": %s", container, f->brief);
    wh_utf8_trim_cut(out, n);
}
