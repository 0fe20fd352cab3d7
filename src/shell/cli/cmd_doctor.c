/* cmd_doctor.c: `tpu-webhook doctor`, why a TPU slice that exists does not
 * start (docs/troubleshooting.md).
 *
 * Reads the pods, nodes and services from files (--pods, --nodes,
 * --services: `kubectl get -o json` Lists, JSON or YAML) or from the cluster
 * (a paged LIST each of pods, TPU nodes and services, read-only: the RBAC of
 * deploy/kustomize/components/doctor-rbac; each item as it arrives trimmed
 * to what the rules read, wh_doctor_keep, so memory follows the TPU pods,
 * not the cluster), judges every slice with wh_doctor_run and prints a table
 * or JSON, every value escaped for the terminal (wh/term.h), errors too.
 * Exit: 0 every slice can start, 1 one cannot, 2 bad input or a failed
 * read. */
#include <stdio.h>  /* fprintf, fwrite */
#include <string.h> /* strcmp, strspn */

#include "wh/buf.h"        /* wh_buf_* */
#include "wh/commands.h"   /* wh_cmd_doctor */
#include "wh/doctor.h"     /* wh_doctor_* */
#include "wh/fileio.h"     /* wh_read_file */
#include "flags.h"         /* wh_flags_command, WH_FLAGS_OUTPUT */
#include "wh/json.h"       /* wh_json_parse */
#include "wh/kube.h"       /* wh_kube_* */
#include "wh/kubeconfig.h" /* wh_kubeconfig_*, struct wh_kube_config */
#include "wh/kubelist.h"   /* wh_kube_list */
#include "wh/term.h"       /* wh_term_escape */
#include "wh/yaml.h"       /* wh_yaml_load_one */
#include "output.h"        /* wh_output_doc */

#define DOCTOR_FILE_MAX ((size_t)512 * 1024 * 1024)
#define DOCTOR_OUTPUT_MAX ((size_t)256 * 1024 * 1024)

static const char usage_head[] =
    "usage: tpu-webhook doctor [--pods FILE [--nodes FILE] [--services FILE]]\n"
    "                          [-n NAMESPACE | --all-namespaces] [-l SELECTOR]\n"
    "                          [--kubeconfig FILE] [-o table|json|yaml]\n"
    "\n"
    "Says, per TPU slice that exists (a KubeRay worker-group replica, an Indexed\n"
    "Job, a JobSet child Job, a LeaderWorkerSet group, a single pod), whether it\n"
    "can start, and if not which pod, which field, what it holds, what it should\n"
    "hold and the fix (docs/troubleshooting.md lists every problem).\n"
    "\n"
    "From files: --pods (and optionally --nodes, --services) as `kubectl get pods\n"
    "-o json` writes them (JSON or YAML); a rule whose list is not given is not\n"
    "judged. From the cluster (without --pods): the kubeconfig as kubectl finds\n"
    "it (--kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the in-cluster\n"
    "service account), exec credential plugins (GKE's gke-gcloud-auth-plugin)\n"
    "included; a paged LIST each of pods, TPU nodes and services, nothing written.\n"
    "\n"
    "Exit status: 0 every slice can start; 1 a slice cannot; 2 bad input.\n"
    "\n"
    "flags:\n";

/* A List from a file: JSON (one parse, large lists) or YAML. */
static enum wh_err load_file(const char *path, cJSON **out, char *errbuf)
{
    struct wh_buf text;
    wh_buf_init(&text, DOCTOR_FILE_MAX);
    char eb[WH_ERRBUF_LEN] = "";
    enum wh_err err = wh_read_file(strcmp(path, "-") ? path : NULL, &text, eb);
    if (err) {
        wh_fail(errbuf, err, "%s: %s", path, eb[0] ? eb : wh_strerror(err));
    } else {
        const char *t = wh_buf_ptr(&text);
        size_t i = strspn(t, " \t\r\n");
        if (t[i] == '{' || t[i] == '[')
            err = wh_json_parse(t, wh_buf_len(&text), out, eb);
        else if (wh_buf_len(&text) > WH_YAML_MAX_BYTES)
            err = wh_fail(eb, WH_ERR_TOOBIG, "YAML over %zu bytes: give JSON (-o json)",
                          (size_t)WH_YAML_MAX_BYTES);
        else
            err = wh_yaml_load_one(t, wh_buf_len(&text), out, eb);
        if (err)
            wh_fail(errbuf, err, "%s: %s", path, eb[0] ? eb : wh_strerror(err));
    }
    wh_buf_free(&text);
    return err;
}

struct source {
    const char *ns, *selector, *kubeconfig;
    bool all;
};

static enum wh_err kube_connect(const struct source *src, struct wh_kube **k, char *errbuf)
{
    struct wh_kube_config cfg = {0};
    enum wh_err err = wh_kubeconfig_resolve(src->kubeconfig, false, &cfg, errbuf);
    if (err)
        return err;
    struct wh_buf w;
    wh_buf_init(&w, 64 * 1024);
    if (cfg.warning && !wh_term_escape(&w, cfg.warning, strlen(cfg.warning)))
        fprintf(stderr, "warning: %s\n", wh_buf_ptr(&w)); /* it quotes the kubeconfig's server */
    wh_buf_free(&w);
    cfg.exec_may_prompt = true; /* a plugin may ask on the terminal, as under kubectl */
    *k = wh_kube_new(&cfg, errbuf);
    if (!*k) {
        wh_kube_config_clear(&cfg);
        return WH_ERR_INVALID;
    }
    return WH_OK;
}

/* The items of one LIST that doctor keeps (wh_doctor_keep). */
struct kept {
    cJSON *items;
    enum wh_doctor_list which;
};

static enum wh_err keep_item(void *arg, cJSON *item, char *errbuf)
{
    struct kept *k = arg;
    if (!wh_doctor_keep(k->which, item)) {
        cJSON_Delete(item);
        return WH_OK;
    }
    enum wh_err err = wh_json_add(k->items, item);
    return err ? wh_fail(errbuf, err, "out of memory keeping the listed objects") : WH_OK;
}

static void restart_items(void *arg)
{
    struct kept *k = arg;
    while (k->items->child)
        cJSON_Delete(cJSON_DetachItemViaPointer(k->items, k->items->child));
}

/* One paged LIST into *out (a JSON array of the kept items). */
static enum wh_err list(struct wh_kube *k, enum wh_doctor_list which, const struct source *src,
                        const char *selector, cJSON **out, char *errbuf)
{
    static const char *const resources[] = {"pods", "nodes", "services"};
    const char *resource = resources[which];
    char path[2400], ns[800] = "", sel[1200] = "";
    if (src->ns)
        wh_kube_escape(ns, sizeof(ns), src->ns);
    if (selector)
        wh_kube_escape(sel, sizeof(sel), selector);
    bool cluster_scoped = which == WH_DOCTOR_NODES || src->all || !src->ns;
    snprintf(path, sizeof(path), "/api/v1/%s%s%s%s%s%s", cluster_scoped ? "" : "namespaces/",
             cluster_scoped ? "" : ns, cluster_scoped ? "" : "/", resource,
             selector ? "?labelSelector=" : "", sel);
    struct kept kept = {cJSON_CreateArray(), which};
    if (!kept.items)
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    struct wh_kube_list_opts opts = {.on_item = keep_item, .on_restart = restart_items, .arg = &kept};
    enum wh_err err = wh_kube_list(k, path, &opts, NULL, errbuf);
    if (err) {
        cJSON_Delete(kept.items);
        return err;
    }
    *out = kept.items;
    return WH_OK;
}

static enum wh_err from_cluster(const struct source *src, cJSON *lists[3], char *errbuf)
{
    struct wh_kube *k = NULL;
    enum wh_err err = kube_connect(src, &k, errbuf);
    if (!err)
        err = list(k, WH_DOCTOR_PODS, src, src->selector, &lists[0], errbuf);
    if (!err)
        err = list(k, WH_DOCTOR_NODES, src, "cloud.google.com/gke-tpu-accelerator", &lists[1],
                   errbuf);
    if (!err)
        err = list(k, WH_DOCTOR_SERVICES, src, NULL, &lists[2], errbuf);
    wh_kube_free(k);
    return err;
}

/* An error on stderr, escaped: it may quote a file, a name or an API
 * server's answer. */
static void say_error(const char *errbuf, enum wh_err err)
{
    const char *msg = errbuf && errbuf[0] ? errbuf : wh_strerror(err);
    struct wh_buf b;
    wh_buf_init(&b, 64 * 1024);
    if (wh_term_escape(&b, msg, strlen(msg)))
        fprintf(stderr, "tpu-webhook doctor: %s\n", wh_strerror(err));
    else
        fprintf(stderr, "tpu-webhook doctor: %s\n", wh_buf_ptr(&b));
    wh_buf_free(&b);
}

/* format: -o as given (NULL: the table). */
static int report(const struct wh_doctor_input *in, const char *format)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *rep = NULL;
    struct wh_buf out;
    wh_buf_init(&out, DOCTOR_OUTPUT_MAX);
    int rc = 2;
    enum wh_err err = wh_doctor_run(in, &rep, errbuf);
    if (err) {
        say_error(errbuf, err);
        goto out;
    }
    if (!format || !strcmp(format, "table"))
        err = wh_doctor_table(rep, &out);
    else
        err = wh_output_doc(rep, format, &out);
    if (err) {
        say_error(NULL, err);
        goto out;
    }
    fwrite(wh_buf_ptr(&out), 1, wh_buf_len(&out), stdout);
    rc = fflush(stdout) ? 2 : wh_doctor_ok(rep) ? 0 : 1;
out:
    cJSON_Delete(rep);
    wh_buf_free(&out);
    return rc;
}

int wh_cmd_doctor(int argc, char **argv)
{
    struct wh_flag_choice output = {"table|json|yaml", NULL};
    const char *pods = NULL, *nodes = NULL, *services = NULL;
    struct source src = {0};
    /* clang-format off */
    struct wh_flag flags[] = {
        WH_FLAGS_OUTPUT(&output, "table: slices as rows, problems below (default); json, yaml: the report"),
        {"pods", WH_FLAG_STR, &pods, 0, 0, "a PodList file (JSON or YAML, '-' for stdin) instead of the cluster", false},
        {"nodes", WH_FLAG_STR, &nodes, 0, 0, "a NodeList file (with --pods)", false},
        {"services", WH_FLAG_STR, &services, 0, 0, "a ServiceList file (with --pods)", false},
        {"namespace", WH_FLAG_STR, &src.ns, 0, 0, "the namespace to read (default: every namespace)", false},
        {"n", WH_FLAG_STR, &src.ns, 0, 0, "", false},
        {"all-namespaces", WH_FLAG_BOOL, &src.all, 0, 0, "every namespace (the default without -n)", false},
        {"A", WH_FLAG_BOOL, &src.all, 0, 0, "", false},
        {"selector", WH_FLAG_STR, &src.selector, 0, 0, "a label selector for the pods of one workload, e.g. ray.io/cluster=demo", false},
        {"l", WH_FLAG_STR, &src.selector, 0, 0, "", false},
        {"kubeconfig", WH_FLAG_STR, &src.kubeconfig, 0, 0, "kubeconfig file (default $KUBECONFIG, ~/.kube/config, in-cluster)", false},
        {"kube-config-path", WH_FLAG_STR, &src.kubeconfig, 0, 0, "alias of --kubeconfig (the reference's name)", false},
    };
    /* clang-format on */
    size_t nf = sizeof(flags) / sizeof(flags[0]);
    int exit_now = wh_flags_command(flags, nf, argc, argv, "doctor", usage_head);
    if (exit_now >= 0)
        return exit_now;
    char errbuf[WH_ERRBUF_LEN] = "";
    if (!pods && (nodes || services)) {
        fprintf(stderr, "tpu-webhook doctor: --nodes and --services go with --pods; give the "
                        "pod list too (kubectl get pods -A -o json)\n");
        return 2;
    }
    if (src.ns && src.all) {
        fprintf(stderr, "tpu-webhook doctor: -n and --all-namespaces exclude each other\n");
        return 2;
    }
    cJSON *lists[3] = {NULL, NULL, NULL};
    enum wh_err err = WH_OK;
    if (pods) {
        const char *files[3] = {pods, nodes, services};
        for (int i = 0; i < 3 && !err; i++)
            if (files[i])
                err = load_file(files[i], &lists[i], errbuf);
    } else {
        err = from_cluster(&src, lists, errbuf);
    }
    int rc = 2;
    if (err) {
        say_error(errbuf, err);
    } else {
        struct wh_doctor_input in = {lists[0], lists[1], lists[2], false};
        rc = report(&in, output.value);
    }
    for (int i = 0; i < 3; i++)
        cJSON_Delete(lists[i]);
    return rc;
}
