/* cmd_render.c: `tpu-webhook render [options] FILE|-`.
 *
 * Shows, before anything is applied, the worker pods KubeRay would create
 * for each RayCluster / RayJob / RayService in FILE, and the pods of each
 * Job / JobSet / LeaderWorkerSet, as the webhook would mutate them; or the
 * webhook's denial. */
#include <stdio.h>  /* fprintf */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp */

#include "wh/buf.h"        /* wh_buf */
#include "wh/commands.h"   /* wh_cmd_render */
#include "wh/doctor.h"     /* wh_doctor_collect_services, wh_doctor_service_warnings */
#include "wh/fileio.h"     /* wh_read_file */
#include "flags.h"         /* wh_flags_command_args, WH_FLAGS_OUTPUT */
#include "wh/json.h"       /* wh_json_* */
#include "wh/kuberay.h"    /* wh_kuberay_opts */
#include "output.h"        /* wh_output_doc */
#include "wh/render.h"     /* wh_render_object */
#include "wh/render_env.h" /* wh_render_env_text */
#include "wh/kinds.h"      /* wh_kind_find, wh_kind_pods_by, wh_kind_list_by_pods */
#include "wh/yaml.h"       /* wh_yaml_load */
#include "wh/yaml_emit.h"  /* wh_yaml_emit */

/* Rendered output is bounded: WH_KUBERAY_MAX_PODS pods of a few KiB. */
#define RENDER_OUTPUT_MAX ((size_t)512 * 1024 * 1024)

static const char usage_head[] =
    "usage: tpu-webhook render [-o yaml|json] [--kuberay-version X.Y] [--summary] [--env] FILE|-\n"
    "\n"
    "Reads RayCluster, RayJob (spec.rayClusterSpec) and RayService\n"
    "(spec.rayClusterConfig) manifests, YAML or JSON, one or more documents,\n"
    "from FILE or stdin ('-'). Each cluster is validated exactly as the webhook\n"
    "would; then the worker pods KubeRay would create (replicas x numOfHosts per\n"
    "worker group, in KubeRay's creation order) are run through the webhook's\n"
    "mutation one by one and printed as mutated. Jobs, JobSets and\n"
    "LeaderWorkerSets go through /validate-workload, and the pods their\n"
    "controllers would create through /mutate-workload (docs/workloads.md).\n"
    "Other kinds are skipped.\n"
    "\n"
    "Random parts KubeRay would choose (replica-name suffixes, RayJob/RayService\n"
    "cluster-name suffixes) are derived from the names, so output is stable.\n"
    "\n"
    "Exit status: 0 rendered; 1 a manifest would be rejected (the denial is\n"
    "printed); 2 unreadable input, malformed YAML, nothing to render, bad option.\n"
    "\n"
    "flags:\n";

struct opts {
    const char *input;
    const char *output; /* -o as given: NULL, "yaml" or "json" */
    bool json;
    bool summary;
    bool env; /* the origin of each TPU variable instead of pods */
    struct wh_kuberay_opts kuberay;
};

/* The command line into o; -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    const char *version = NULL;
    struct wh_flag_choice output = {"yaml|json", NULL};
    int major = 1, minor = 6;
    memset(o, 0, sizeof(*o));
    /* clang-format off */
    struct wh_flag flags[] = {
        WH_FLAGS_OUTPUT(&output, "yaml: YAML documents (default); json: one v1 List; with --env, the records as a v1 List in either"),
        {"kuberay-version", WH_FLAG_STR, &version, 0, 0, "operator version X.Y (default 1.6): 1.6+ sets the native multi-host index labels; older ones take the webhook's legacy path", false},
        {"summary", WH_FLAG_BOOL, &o->summary, 0, 0, "per group and replica: hostname, TPU_WORKER_ID, TPU_NAME and the peer list sizes, instead of pods", false},
        {"env", WH_FLAG_BOOL, &o->env, 0, 0, "Jobs, JobSets, LWS: per pod and TPU container, each TPU variable with where it came from (injected, user, gke, lws) and the pod's contradictions, instead of pods (with -o json: one record per pod)", false},
    };
    /* clang-format on */
    size_t n = sizeof(flags) / sizeof(flags[0]);
    struct wh_flags_args file = {.name = "FILE",
                                 .min = 1,
                                 .max = 1,
                                 .hint = "give a FILE, or '-' for stdin"};
    int exit_now = wh_flags_command_args(flags, n, &file, argc, argv, "render", usage_head);
    if (exit_now >= 0)
        return exit_now;
    if (version && wh_kuberay_parse_version(version, &major, &minor, errbuf)) {
        fprintf(stderr, "tpu-webhook render: flag -kuberay-version: %s\n", errbuf);
        return 2;
    }
    o->input = file.args[0];
    o->output = output.value;
    o->json = output.value && !strcmp(output.value, "json");
    wh_kuberay_opts_init(&o->kuberay, major, minor);
    return -1;
}

/* A kind render expands into pods (its row of wh_kinds, kinds.h). */
static bool is_ray_kind(const cJSON *doc)
{
    const struct wh_kind_def *def = wh_kind_find(wh_json_str(doc, "kind"));
    return def && def->pods != WH_PODS_NONE;
}

/* Append the rendered pods (or summary) of one result. */
static enum wh_err emit(const struct opts *o, const struct wh_render_result *r, cJSON *items,
                        struct wh_buf *out)
{
    if (o->summary)
        return wh_render_summary(r, out);
    if (o->env && o->output) {
        for (const cJSON *x = r->origins ? r->origins->child : NULL; x; x = x->next)
            WH_TRY(wh_json_add(items, cJSON_Duplicate(x, 1)));
        return WH_OK;
    }
    if (o->env)
        return wh_render_env_text(r->origins, out);
    const char *cluster = wh_json_str0(wh_json_get(r->cluster, "metadata"), "name");
    const char *kind = wh_json_str0(r->cluster, "kind");
    bool ray = !wh_kind_pods_by(kind, WH_PODS_WORKLOAD);
    int i = 0;
    for (cJSON *p = r->pods->child; p; p = p->next, i++) {
        if (o->json) {
            enum wh_err err = wh_json_add(items, cJSON_Duplicate(p, 1));
            if (err)
                return err;
            continue;
        }
        const char *group = wh_json_str0(wh_json_path(p, "metadata", "labels", NULL),
                                         "ray.io/group");
        enum wh_err err = ray ? wh_buf_addf(out, "---\n# RayCluster %s, worker group %s, pod %d\n",
                                            cluster, group, i)
                              : wh_buf_addf(out, "---\n# %s %s, pod %d\n", kind, cluster, i);
        if (!err)
            err = wh_yaml_emit(p, out);
        if (err)
            return err;
    }
    return WH_OK;
}

/* Render one object; *rc takes the worst exit status, *n_ray counts Ray
 * objects. */
static void render_one(const struct opts *o, const cJSON *d, const cJSON *services, unsigned line,
                       struct wh_buf *out, cJSON *items, int *rc, int *n_ray)
{
    const char *kind = wh_json_str(d, "kind");
    const char *name = wh_json_str0(wh_json_get(d, "metadata"), "name");
    if (!is_ray_kind(d)) {
        fprintf(stderr, "tpu-webhook render: %s: line %u: skipped %s%s%s\n", o->input, line,
                !cJSON_IsObject(d)       ? "(not a mapping)"
                : kind                   ? kind
                : wh_json_has(d, "kind") ? "(kind is not a string)"
                                         : "(an object without kind)",
                name[0] ? " " : "", name);
        return;
    }
    (*n_ray)++;
    if (!name[0]) /* named by the API server: say by what */
        name = wh_json_str0(wh_json_get(d, "metadata"), "generateName");
    const char *sep = name[0] ? " " : "";
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_render_result r;
    enum wh_err err = wh_kind_pods_by(kind, WH_PODS_WORKLOAD)
                          ? wh_render_workload(d, &r, errbuf)
                          : wh_render_object(d, &o->kuberay, &r, errbuf);
    if (!err && r.pods) /* a Job's headless Service, as doctor judges it */
        err = wh_doctor_service_warnings(r.cluster, r.pods, services, r.verdict.warnings, errbuf);
    if (err) {
        wh_render_result_free(&r);
        fprintf(stderr, "tpu-webhook render: %s: line %u: %s%s%s: %s\n", o->input, line, kind, sep,
                name, errbuf[0] ? errbuf : wh_strerror(err));
        *rc = 2;
        return;
    }
    /* Every line names the file and the document, like the errors above. */
    for (const cJSON *w = r.verdict.warnings->child; w; w = w->next)
        fprintf(stderr, "tpu-webhook render: %s: line %u: %s%s%s: warning: %s\n", o->input, line,
                kind, sep, name, cJSON_IsString(w) ? w->valuestring : "?");
    for (const cJSON *n = r.notes ? r.notes->child : NULL; n; n = n->next)
        fprintf(stderr, "tpu-webhook render: %s: line %u: %s%s%s: note: %s\n", o->input, line, kind,
                sep, name, cJSON_IsString(n) ? n->valuestring : "?");
    if (!r.verdict.allowed || r.pod_denial) {
        fprintf(stderr, "tpu-webhook render: %s: line %u: %s%s%s would be rejected: %s\n", o->input,
                line, kind, sep, name, r.pod_denial ? r.pod_denial : r.verdict.message);
        if (*rc == 0)
            *rc = 1;
    } else if ((err = emit(o, &r, items, out))) {
        fprintf(stderr, "tpu-webhook render: output: %s\n", wh_strerror(err));
        *rc = 2;
    }
    wh_render_result_free(&r);
}

/* Render every Ray object of docs (the items of a v1 List too); returns the
 * exit status. */
static int render_docs(const struct opts *o, const cJSON *docs, const unsigned *lines,
                       struct wh_buf *out, cJSON *items)
{
    int rc = 0, n_ray = 0, i = 0;
    cJSON *services = NULL; /* the input's Services, for its Jobs */
    if (wh_doctor_collect_services(docs, &services)) {
        fprintf(stderr, "tpu-webhook render: out of memory\n");
        return 2;
    }
    for (const cJSON *d = docs->child; d; d = d->next, i++) {
        const cJSON *list = wh_json_get(d, "items");
        if (!strcmp(wh_json_str0(d, "kind"), "List") && cJSON_IsArray(list)) {
            for (const cJSON *x = list->child; x; x = x->next)
                render_one(o, x, services, lines[i], out, items, &rc, &n_ray);
        } else {
            render_one(o, d, services, lines[i], out, items, &rc, &n_ray);
        }
    }
    cJSON_Delete(services);
    if (n_ray == 0) {
        char kinds[200];
        fprintf(stderr, "tpu-webhook render: %s: no %s in the input\n", o->input,
                wh_kind_list_by_pods(kinds, sizeof(kinds),
                                     WH_PODS_BIT(WH_PODS_KUBERAY) | WH_PODS_BIT(WH_PODS_WORKLOAD),
                                     "or"));
        return 2;
    }
    return rc;
}

int wh_cmd_render(int argc, char **argv)
{
    struct opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    rc = 2;
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_buf text, out;
    wh_buf_init(&text, WH_YAML_MAX_BYTES);
    wh_buf_init(&out, RENDER_OUTPUT_MAX);
    cJSON *docs = NULL, *list = NULL;
    unsigned *lines = NULL;
    bool stdin_input = !strcmp(o.input, "-");
    enum wh_err err = wh_read_file(stdin_input ? NULL : o.input, &text, errbuf);
    if (!err)
        err = wh_yaml_load(wh_buf_ptr(&text), wh_buf_len(&text), &docs, &lines, errbuf);
    if (err) {
        fprintf(stderr, "tpu-webhook render: %s: %s\n", stdin_input ? "stdin" : o.input,
                errbuf[0] ? errbuf : wh_strerror(err));
        goto out;
    }
    list = cJSON_CreateObject();
    if (!list || wh_json_set_str(list, "apiVersion", "v1") ||
        wh_json_set_str(list, "kind", "List") || wh_json_set(list, "items", cJSON_CreateArray())) {
        fprintf(stderr, "tpu-webhook render: out of memory\n");
        goto out;
    }
    cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items");
    rc = render_docs(&o, docs, lines, &out, items);
    /* One document: the pods (-o json), or the --env records (-o given). */
    if ((o.json || (o.env && o.output)) && !o.summary && rc != 2 &&
        wh_output_doc(list, o.output, &out)) {
        fprintf(stderr, "tpu-webhook render: output too large\n");
        rc = 2;
    }
    fwrite(wh_buf_ptr(&out), 1, wh_buf_len(&out), stdout);
    if (fflush(stdout))
        rc = 2;
out:
    cJSON_Delete(list);
    cJSON_Delete(docs);
    free(lines);
    wh_buf_free(&text);
    wh_buf_free(&out);
    return rc;
}
