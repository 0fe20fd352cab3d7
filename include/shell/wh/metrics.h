/* metrics.h: Prometheus counters of the HTTPS server (shell only).
 *
 * Lock-free: every update is a relaxed atomic add, so request threads never
 * wait on each other. wh_metrics_render() writes the text exposition format
 * (version 0.0.4) into a buffer the caller owns.
 */
#ifndef WH_METRICS_H
#define WH_METRICS_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <time.h>    /* time_t */

#include "wh/admit.h" /* struct wh_admit_stats */
#include "wh/buf.h"   /* struct wh_buf */

/* The path label of a request (unknown paths share "other" so that a
 * scanner cannot grow the label set). */
enum wh_mpath {
    /* the admission paths first (server.c relies on it) */
    WH_MPATH_MUTATE,
    WH_MPATH_VALIDATE,
    WH_MPATH_MUTATE_WORKLOAD,
    WH_MPATH_VALIDATE_WORKLOAD,
    WH_MPATH_ROOT,
    WH_MPATH_HEALTHZ,
    WH_MPATH_READYZ,
    WH_MPATH_METRICS,
    WH_MPATH_OTHER,
    WH_MPATH__COUNT
};

struct wh_metrics;

struct wh_metrics *wh_metrics_new(void);      /* NULL on OOM */
void wh_metrics_free(struct wh_metrics *m);   /* NULL-safe */

const char *wh_metrics_path_label(enum wh_mpath p);

/* A request began (in-flight +1) / ended with an HTTP status (0 when the
 * client went away before an answer) after latency_us microseconds. */
void wh_metrics_begin(struct wh_metrics *m);
void wh_metrics_end(struct wh_metrics *m, enum wh_mpath path, int status, long long latency_us);
/* An admission answered. kind is request.kind.kind as sent (Pod,
 * RayCluster, Job, JobSet and LeaderWorkerSet have their own label value;
 * anything else counts as "other", so that a client cannot grow the label
 * set); the reason label comes from the decision: patched / no_patch when
 * allowed, cluster_state_unavailable / invalid when denied. */
struct wh_madmission {
    const char *kind;
    bool allowed;
    bool state_unavailable; /* denied because the cluster state was not trusted */
    size_t n_ops;           /* JSON patch operations returned */
};
void wh_metrics_admission(struct wh_metrics *m, enum wh_mpath path, const struct wh_madmission *a);
void wh_metrics_cert(struct wh_metrics *m, time_t not_after);
void wh_metrics_tls_reload(struct wh_metrics *m, bool ok);
/* A connection cut off for being too slow. */
void wh_metrics_timeout(struct wh_metrics *m);

long long wh_metrics_in_flight(const struct wh_metrics *m);

/* What the server knows at scrape time. */
struct wh_mlive {
    bool ready;            /* /readyz answers 200 */
    long long connections; /* client connections open */
};

/* Append the exposition text; st (may be NULL) adds the pipeline's gauges,
 * live (may be NULL) the server's. Process metrics (memory, CPU, file
 * descriptors) are read from /proc and getrusage() here. */
WH_NODISCARD enum wh_err wh_metrics_render(const struct wh_metrics *m,
                                           const struct wh_admit_stats *st,
                                           const struct wh_mlive *live, struct wh_buf *out);

#endif /* WH_METRICS_H */
