/* cmd_check.c: `tpu-webhook check [-o table|json|yaml] [--strict] PATH...`.
 *
 * For CI: validates every RayCluster / RayJob / RayService (and TPU Job /
 * JobSet / LeaderWorkerSet) found in the given files and directories (recursing into *.yaml, *.yml, *.json) with
 * the webhook's own validation, prints one row per TPU worker group, and
 * exits non-zero when anything would be rejected. */
#include <dirent.h>   /* opendir, readdir */
#include <errno.h>    /* errno */
#include <stdio.h>    /* fprintf */
#include <stdlib.h>   /* free, qsort */
#include <string.h>   /* strcmp, strerror, memmem */
#include <sys/stat.h> /* stat, lstat */

#include "wh/buf.h"      /* wh_buf */
#include "wh/check.h"    /* wh_check_* */
#include "wh/commands.h" /* wh_cmd_check */
#include "wh/fileio.h"   /* wh_read_file */
#include "flags.h"       /* wh_flags_command_args, WH_FLAGS_OUTPUT */
#include "wh/json.h"     /* wh_json_* */
#include "output.h"      /* wh_output_doc */
#include "wh/yaml.h"     /* WH_YAML_MAX_BYTES */

#define CHECK_MAX_DEPTH 32 /* directory nesting followed */
#define CHECK_OUTPUT_MAX ((size_t)64 * 1024 * 1024)

static const char usage_head[] =
    "usage: tpu-webhook check [-o table|json|yaml] [--strict] PATH...\n"
    "\n"
    "Validates every RayCluster, RayJob (spec.rayClusterSpec) and RayService\n"
    "(spec.rayClusterConfig) in the given files and directories (directories\n"
    "are searched recursively for *.yaml, *.yml and *.json; '-' reads stdin)\n"
    "exactly as the webhook's RayCluster validation would, and prints one row\n"
    "per TPU worker group: file, cluster, group, accelerator, topology, chips\n"
    "per host, hosts the topology needs, numOfHosts, verdict and warnings.\n"
    "Jobs, JobSets and LeaderWorkerSets whose pods request TPUs get one row\n"
    "each, judged by the workload validation and mutation (docs/workloads.md).\n"
    "Other kinds in the files are ignored. Under a Helm chart found in a directory\n"
    "(a folder with Chart.yaml), templates and files that do not parse are\n"
    "skipped, with one note on stderr (check `helm template` output instead).\n"
    "A file with no Kubernetes object (no apiVersion and kind: a values file)\n"
    "is listed as not checked. --strict also reports unknown fields, kinds and\n"
    "versions of the core v1, batch, ray.io, jobset.x-k8s.io and\n"
    "leaderworkerset.x-k8s.io groups, from their OpenAPI schemas (docs/cli.md).\n"
    "\n"
    "Exit status: 0 nothing would be rejected; 1 a group would be rejected or a\n"
    "file could not be read or parsed, or (--strict) a strict finding or a file\n"
    "not checked; 2 a bad option.\n"
    "\n"
    "flags:\n";

struct walk {
    struct wh_check_opts opts;
    cJSON *rows;
    struct wh_check_stats st;
    char errbuf[WH_ERRBUF_LEN];
    int failed; /* out of memory */
    /* Files under a Helm chart (a folder with Chart.yaml, found by the walk)
     * that are templates ("{{") or do not parse as manifests: skipped, and
     * said once at the end. */
    size_t skipped;
    char chart[512]; /* the first chart folder skipped files were in */
};

static bool manifest_name(const char *name)
{
    size_t n = strlen(name);
    static const char *const ext[] = {".yaml", ".yml", ".json"};
    for (size_t i = 0; i < 3; i++) {
        size_t e = strlen(ext[i]);
        if (n > e && !strcmp(name + n - e, ext[i]))
            return true;
    }
    return false;
}

/* A file of a chart (chart: its folder) that is a template (not read), or
 * that does not parse: counted as skipped instead of checked. A chart's own
 * files that hold no object (Chart.yaml, values.yaml) are dropped without
 * a count: the note names the chart. rows_before and before are the rows
 * and counts as they were before this file. */
static bool skip_chart_file(struct walk *w, const char *chart, bool tmpl, size_t rows_before,
                            const struct wh_check_stats *before)
{
    bool skipped = tmpl || w->st.errors != before->errors;
    if (!skipped && w->st.unchecked == before->unchecked)
        return false;
    /* The rows the failed parse added go, and only they. */
    while ((size_t)cJSON_GetArraySize(w->rows) > rows_before)
        cJSON_DeleteItemFromArray(w->rows, cJSON_GetArraySize(w->rows) - 1);
    w->st = *before;
    if (skipped && !w->skipped++)
        snprintf(w->chart, sizeof(w->chart), "%s", chart);
    return true;
}

static void check_file(struct walk *w, const char *path, const char *chart)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_buf text;
    wh_buf_init(&text, WH_YAML_MAX_BYTES);
    bool is_stdin = !strcmp(path, "-");
    enum wh_err err = wh_read_file(is_stdin ? NULL : path, &text, errbuf);
    const char *name = is_stdin ? "stdin" : path;
    if (err) {
        w->st.files++;
        err = wh_check_error_row(w->rows, &w->st, name, 0, errbuf[0] ? errbuf : wh_strerror(err));
    } else {
        /* What this file adds is all a skip may take back: the rows and
         * counts of the files read before it stay. */
        struct wh_check_stats before = w->st;
        size_t rows_before = (size_t)cJSON_GetArraySize(w->rows);
        bool tmpl = chart && memmem(wh_buf_ptr(&text), wh_buf_len(&text), "{{", 2);
        if (!tmpl)
            err = wh_check_text_opts(name, wh_buf_ptr(&text), wh_buf_len(&text), &w->opts, w->rows,
                                     &w->st, w->errbuf);
        if (!err && chart)
            skip_chart_file(w, chart, tmpl, rows_before, &before);
    }
    if (err)
        w->failed = 1;
    wh_buf_free(&text);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk_path(struct walk *w, const char *path, int depth, bool explicit, const char *chart);

/* Directory entries in name order, so reports are stable. */
static void walk_dir(struct walk *w, const char *path, int depth, const char *chart)
{
    if (!chart) {
        char probe[1024];
        struct stat cs;
        snprintf(probe, sizeof(probe), "%s/Chart.yaml", path);
        if (!stat(probe, &cs) && S_ISREG(cs.st_mode))
            chart = path;
    }
    DIR *d = opendir(path);
    if (!d) {
        char msg[WH_ERRBUF_LEN];
        snprintf(msg, sizeof(msg), "cannot open directory: %s", strerror(errno));
        w->st.files++;
        if (wh_check_error_row(w->rows, &w->st, path, 0, msg))
            w->failed = 1;
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) && !w->failed) {
        if (e->d_name[0] == '.')
            continue; /* ., .., and hidden entries (.git) */
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **nn = realloc(names, cap * sizeof(*nn));
            if (!nn) {
                w->failed = 1;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name)))
            w->failed = 1;
        else
            n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (!w->failed) {
            size_t len = strlen(path) + strlen(names[i]) + 2;
            char *child = malloc(len);
            if (child) {
                snprintf(child, len, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/",
                         names[i]);
                walk_path(w, child, depth + 1, false, chart);
                free(child);
            } else {
                w->failed = 1;
            }
        }
        free(names[i]);
    }
    free(names);
}

static void walk_path(struct walk *w, const char *path, int depth, bool explicit, const char *chart)
{
    struct stat sb;
    if (!strcmp(path, "-")) {
        check_file(w, path, NULL);
        return;
    }
    /* Symlinked directories are not followed below the top (no loops). */
    if ((explicit ? stat(path, &sb) : lstat(path, &sb)) != 0) {
        if (!explicit && errno == ENOENT)
            return;
        char msg[WH_ERRBUF_LEN];
        snprintf(msg, sizeof(msg), "cannot read: %s", strerror(errno));
        w->st.files++;
        if (wh_check_error_row(w->rows, &w->st, path, 0, msg))
            w->failed = 1;
        return;
    }
    if (S_ISDIR(sb.st_mode)) {
        if (depth < CHECK_MAX_DEPTH) {
            walk_dir(w, path, depth, chart);
            return;
        }
        char msg[WH_ERRBUF_LEN];
        snprintf(msg, sizeof(msg),
                 "directory nested deeper than %d levels: not searched; "
                 "pass it as an argument of its own",
                 CHECK_MAX_DEPTH);
        w->st.files++;
        if (wh_check_error_row(w->rows, &w->st, path, 0, msg))
            w->failed = 1;
        return;
    }
    /* Found in a directory: only regular files (a symlink's target too). A
     * FIFO named x.yaml would block the read forever. */
    if (S_ISLNK(sb.st_mode) && stat(path, &sb) != 0)
        return; /* dangling */
    if (explicit || (manifest_name(path) && S_ISREG(sb.st_mode)))
        check_file(w, path, explicit ? NULL : chart);
}

/* Does the run fail (exit 1)? Strict findings and files not checked only
 * under --strict. */
static bool failed(const struct walk *w)
{
    return w->st.rejected || w->st.errors || (w->opts.strict && (w->st.strict || w->st.unchecked));
}

/* The -o json|yaml report: the counts, ok, and the rows, which it takes
 * from w (w->rows is NULL after the call, whatever it returns). */
static enum wh_err doc_report(struct walk *w, const char *format, struct wh_buf *out)
{
    cJSON *report = cJSON_CreateObject();
    cJSON *rows = w->rows;
    w->rows = NULL;
    if (!report || wh_json_set(report, "files", cJSON_CreateNumber((double)w->st.files)) ||
        wh_json_set(report, "objects", cJSON_CreateNumber((double)w->st.objects)) ||
        wh_json_set(report, "rejected", cJSON_CreateNumber((double)w->st.rejected)) ||
        wh_json_set(report, "errors", cJSON_CreateNumber((double)w->st.errors)) ||
        wh_json_set(report, "strict", cJSON_CreateNumber((double)w->st.strict)) ||
        wh_json_set(report, "notChecked", cJSON_CreateNumber((double)w->st.unchecked)) ||
        wh_json_set(report, "ok", cJSON_CreateBool(!failed(w)))) {
        cJSON_Delete(report);
        cJSON_Delete(rows);
        return WH_ERR_NOMEM;
    }
    enum wh_err err = wh_json_set(report, "rows", rows); /* takes rows in every case */
    if (!err)
        err = wh_output_doc(report, format, out);
    cJSON_Delete(report);
    return err;
}

int wh_cmd_check(int argc, char **argv)
{
    struct wh_flag_choice output = {"table|json|yaml", NULL};
    bool strict = false;
    struct wh_flag flags[] = {
        WH_FLAGS_OUTPUT(&output,
                        "table: one row per TPU worker group (default); json, yaml: the report"),
        {"strict", WH_FLAG_BOOL, &strict, 0, 0,
         "also report unknown fields, kinds and versions; fail on them and on files not checked",
         false},
    };
    struct wh_flags_args paths = {.name = "PATH",
                                  .min = 1,
                                  .max = -1,
                                  .hint = "give the files or directories to check, or '-' "
                                          "for stdin"};
    int exit_now = wh_flags_command_args(flags, sizeof(flags) / sizeof(flags[0]), &paths, argc,
                                         argv, "check", usage_head);
    if (exit_now >= 0)
        return exit_now;
    bool table = !output.value || !strcmp(output.value, "table");
    struct walk w = {.opts.strict = strict};
    struct wh_buf out;
    wh_buf_init(&out, CHECK_OUTPUT_MAX);
    int rc = 2;
    if (!(w.rows = cJSON_CreateArray())) {
        fprintf(stderr, "tpu-webhook check: out of memory\n");
        goto out;
    }
    for (int i = 0; i < paths.n && !w.failed; i++)
        walk_path(&w, paths.args[i], 0, true, NULL);
    if (w.failed) {
        fprintf(stderr, "tpu-webhook check: %s\n", w.errbuf[0] ? w.errbuf : "out of memory");
        goto out;
    }
    enum wh_err err = table ? wh_check_table(w.rows, &w.st, &out)
                            : doc_report(&w, output.value, &out);
    if (err) {
        fprintf(stderr, "tpu-webhook check: %s\n", wh_strerror(err));
        goto out;
    }
    fwrite(wh_buf_ptr(&out), 1, wh_buf_len(&out), stdout);
    if (w.skipped)
        fprintf(stderr,
                "tpu-webhook check: note: skipped %zu file(s) of Helm chart(s) (templates, or not "
                "manifests), the first chart %s; to check a chart, check what it renders: "
                "helm template ... | tpu-webhook check -\n",
                w.skipped, w.chart);
    rc = fflush(stdout) ? 2 : failed(&w) ? 1 : 0;
out:
    cJSON_Delete(w.rows);
    wh_buf_free(&out);
    return rc;
}
