/* check.h: validate Ray manifests for CI, one row per TPU worker group.
 *
 * Every RayCluster, RayJob (spec.rayClusterSpec) and RayService
 * (spec.rayClusterConfig) in a YAML/JSON stream gets the CRD defaults and
 * goes through the engine's validation (wh_render_validate), so `check` and
 * the webhook never disagree, with one exception: a subsliced multi-host
 * group (slice-topology annotation) is judged against the cluster's TPU
 * nodes, and check knows none, so it gets the webhook's "targets zero nodes"
 * warning where a live cluster might reject it (no Dynamic Slicing, or no
 * node domain of exactly numOfHosts nodes). An allowed cluster's worker pods (wh_render,
 * KubeRay 1.6) then go through the engine's mutation as well, because it can
 * deny a pod that validation lets by (a hostname over 63 characters). The
 * table's derived columns (chips per host,
 * hosts the topology needs) come from topology.h / podspec.h.
 *
 * A row is a JSON object:
 *   file, line (of the document), kind, name (of the manifest object),
 *   cluster, group, accelerator, topology, chipsPerHost, hostsExpected
 *   (-1 when the topology does not parse), numOfHosts,
 *   verdict ("ok" | "rejected" | "error"), message (the group's part of the
 *   denial, or the error; "" when ok), warnings (array of strings).
 * A Job, JobSet or LeaderWorkerSet whose pods request TPUs gives one row
 * (group "-", the columns of its TPU pod template, numOfHosts null), judged
 * by wh_render_workload (docs/workloads.md).
 * Objects that cannot be checked at all (a YAML syntax error, a RayJob
 * without a cluster spec) give one row with group "-" and verdict "error";
 * a rejected cluster always gives at least one "rejected" row.
 *
 * A file none of whose documents has both apiVersion and kind (a Helm
 * values file, a Polyaxonfile, an empty file) gives one row with verdict
 * "not-checked", always. With opts->strict, every object of a known API
 * group is also judged by wh_strict_object (strict.h): each unknown field,
 * kind or version gives a row with verdict "strict", group "-", field (its
 * path) and suggestion (the nearest known name, or null); so does a
 * document without apiVersion or kind in a file that holds objects.
 */
#ifndef WH_CHECK_H
#define WH_CHECK_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#include "wh/buf.h" /* struct wh_buf */
#include "wh/err.h" /* enum wh_err */

struct wh_check_stats {
    size_t files;
    size_t objects; /* Ray objects checked */
    size_t rows;
    size_t rejected;  /* rows with verdict rejected */
    size_t errors;    /* rows with verdict error */
    size_t strict;    /* rows with verdict strict (only with opts->strict) */
    size_t unchecked; /* rows with verdict not-checked */
};

struct wh_check_opts {
    bool strict; /* report unknown fields, kinds and versions (check --strict) */
};

/* Check one file's contents; rows are appended to rows (a JSON array the
 * caller owns) and counted in st. Problems in the input become rows; a
 * wh_err means out of memory only. */
WH_NODISCARD enum wh_err wh_check_text(const char *file, const char *text, size_t len, cJSON *rows,
                                       struct wh_check_stats *st, char *errbuf);

/* wh_check_text with options (opts may be NULL: all off). */
WH_NODISCARD enum wh_err wh_check_text_opts(const char *file, const char *text, size_t len,
                                            const struct wh_check_opts *opts, cJSON *rows,
                                            struct wh_check_stats *st, char *errbuf);

/* Append one "error" row for a file that could not be read. */
WH_NODISCARD enum wh_err wh_check_error_row(cJSON *rows, struct wh_check_stats *st,
                                            const char *file, unsigned line, const char *message);

/* Append the rows as an aligned text table, then the denial messages. */
WH_NODISCARD enum wh_err wh_check_table(const cJSON *rows, const struct wh_check_stats *st,
                                        struct wh_buf *out);

#endif /* WH_CHECK_H */
