/* cmd_review.c: `tpu-webhook review [-o wire|json|yaml] [--workload] [--pods FILE] [--nodes FILE] [FILE]`.
 *
 * Reads one AdmissionReview from FILE or stdin, answers it with the engine
 * against the cluster state given by --pods/--nodes, and writes the response
 * AdmissionReview to stdout; --workload answers a Pod as /mutate-workload
 * does. The answer is written as the server sends it (-o wire, the default)
 * or as a document (-o json|yaml, output.h). Exit 0 when a response was written (allowed or denied), 2 when the
 * input is not a readable AdmissionReview, a state file is bad or an
 * argument is wrong. */
#include <stdio.h>  /* fprintf */
#include <string.h> /* strcmp */

#include "wh/buf.h"      /* wh_buf */
#include "wh/commands.h" /* wh_cmd_review */
#include "wh/engine.h"   /* wh_engine_review */
#include "wh/fileio.h"   /* wh_read_file */
#include "flags.h"       /* wh_flags_command_args, WH_FLAGS_OUTPUT */
#include "wh/json.h"     /* wh_json_parse */
#include "output.h"      /* wh_output_doc */
#include "wh/state.h"    /* wh_memstate */
#include "wh/yaml.h"     /* wh_yaml_load_one */

static const char usage_head[] =
    "usage: tpu-webhook review [-o wire|json|yaml] [--workload] [--pods FILE] [--nodes FILE] [FILE]\n"
    "\n"
    "Answers one AdmissionReview (JSON or YAML) read from FILE, or stdin when FILE is\n"
    "omitted or '-', as the webhook would, and prints the response\n"
    "AdmissionReview: by default (-o wire) exactly the bytes the server would send,\n"
    "one line; -o json or yaml print the same document indented. Pods go to mutation, RayClusters to validation, Jobs,\n"
    "JobSets and LeaderWorkerSets to workload validation, anything else is\n"
    "admitted unchanged.\n"
    "\n"
    "Exit status: 0 when a response was written (allowed or denied), 2 when the\n"
    "input is not a readable AdmissionReview or an option is wrong.\n"
    "\n"
    "flags:\n";

/* YAML input becomes JSON text in place; JSON (first non-blank byte '{' or
 * '[') is left alone for the engine to read. */
static enum wh_err yaml_to_json(struct wh_buf *b, char *errbuf)
{
    const char *p = wh_buf_ptr(b);
    size_t i = 0, n = wh_buf_len(b);
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    if (i < n && (p[i] == '{' || p[i] == '['))
        return WH_OK;
    cJSON *doc = NULL;
    char *text = NULL;
    enum wh_err err = wh_yaml_load_one(p, n, &doc, errbuf);
    if (!err && (err = wh_json_print(doc, &text)))
        wh_fail(errbuf, err, "out of memory converting YAML to JSON");
    if (!err) {
        wh_buf_reset(b);
        err = wh_buf_add(b, text);
        if (err)
            wh_fail(errbuf, err, "the input as JSON is over the %zu-byte limit", b->max);
    }
    cJSON_free(text);
    cJSON_Delete(doc);
    return err;
}

/* Load a PodList/NodeList file into ms. */
static int load_state(struct wh_memstate *ms, const char *path, bool pods)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_buf text;
    wh_buf_init(&text, WH_STATE_FILE_MAX);
    cJSON *json = NULL;
    enum wh_err err = wh_read_file(path, &text, errbuf);
    if (!err)
        err = yaml_to_json(&text, errbuf);
    if (!err)
        err = wh_json_parse(wh_buf_ptr(&text), wh_buf_len(&text), &json, errbuf);
    if (!err)
        err = pods ? wh_memstate_add_pods(ms, json, NULL, errbuf)
                   : wh_memstate_add_nodes(ms, json, NULL, errbuf);
    cJSON_Delete(json);
    wh_buf_free(&text);
    if (err) {
        fprintf(stderr, "tpu-webhook review: %s %s: %s\n", pods ? "--pods" : "--nodes", path,
                errbuf[0] ? errbuf : wh_strerror(err));
        return -1;
    }
    return 0;
}

/* The answer as a document (-o json|yaml); nonzero after saying why. */
static int print_doc(const struct wh_engine_result *res, const char *format)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *doc = NULL;
    struct wh_buf out;
    wh_buf_init(&out, (size_t)WH_REVIEW_MAX_BYTES * 4);
    enum wh_err err = wh_json_parse(res->body, res->body_len, &doc, errbuf);
    if (!err)
        err = wh_output_doc(doc, format, &out);
    if (err)
        fprintf(stderr, "tpu-webhook review: output: %s\n", errbuf[0] ? errbuf : wh_strerror(err));
    else
        fwrite(wh_buf_ptr(&out), 1, wh_buf_len(&out), stdout);
    cJSON_Delete(doc);
    wh_buf_free(&out);
    return err ? 2 : 0;
}

int wh_cmd_review(int argc, char **argv)
{
    const char *pods = NULL, *nodes = NULL, *input = NULL;
    struct wh_flag_choice output = {"wire|json|yaml", NULL};
    bool workload = false;
    /* clang-format off */
    struct wh_flag flags[] = {
        WH_FLAGS_OUTPUT(&output, "wire: the answer as the server sends it, one line (default); json, yaml: the same document indented"),
        {"pods", WH_FLAG_STR, &pods, 0, 0, "PodList (or array of pods; JSON or YAML) that exist in the cluster; only KubeRay worker pods are kept, as the pod cache would", false},
        {"nodes", WH_FLAG_STR, &nodes, 0, 0, "NodeList (or JSON array of nodes); only TPU nodes are kept", false},
        {"workload", WH_FLAG_BOOL, &workload, 0, 0, "answer a Pod as /mutate-workload does (Jobs, JobSets, LeaderWorkerSets, single pods; docs/workloads.md)", false},
    };
    /* clang-format on */
    struct wh_flags_args file = {.name = "FILE", .min = 0, .max = 1};
    int exit_now = wh_flags_command_args(flags, sizeof(flags) / sizeof(flags[0]), &file, argc, argv,
                                         "review", usage_head);
    if (exit_now >= 0)
        return exit_now;
    if (file.n)
        input = file.args[0];
    enum wh_route route = workload ? WH_ROUTE_MUTATE_WORKLOAD : WH_ROUTE_ANY;

    int rc = 2;
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_buf body;
    wh_buf_init(&body, WH_REVIEW_MAX_BYTES);
    struct wh_engine_result res = {0};
    struct wh_memstate *ms = wh_memstate_new();
    if (!ms) {
        fprintf(stderr, "tpu-webhook review: out of memory\n");
        goto out;
    }
    if ((pods && load_state(ms, pods, true)) || (nodes && load_state(ms, nodes, false)))
        goto out;
    enum wh_err err = wh_read_file(input && strcmp(input, "-") ? input : NULL, &body, errbuf);
    if (!err)
        err = yaml_to_json(&body, errbuf);
    if (err) {
        fprintf(stderr, "tpu-webhook review: %s: %s\n", input ? input : "stdin",
                errbuf[0] ? errbuf : wh_strerror(err));
        goto out;
    }
    struct wh_state state = wh_memstate_view(ms);
    err = wh_engine_review(wh_buf_ptr(&body), wh_buf_len(&body), route, &state, &res, errbuf);
    if (err) {
        fprintf(stderr, "tpu-webhook review: %s: %s\n", input ? input : "stdin",
                errbuf[0] ? errbuf : wh_strerror(err));
        goto out;
    }
    if (res.notes)
        fprintf(stderr, "%s", res.notes);
    if (!output.value || !strcmp(output.value, "wire")) {
        fwrite(res.body, 1, res.body_len, stdout);
        fputc('\n', stdout);
    } else if (print_doc(&res, output.value)) {
        goto out;
    }
    rc = fflush(stdout) ? 2 : 0;
out:
    wh_engine_result_free(&res);
    wh_memstate_free(ms);
    wh_buf_free(&body);
    return rc;
}
