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
#include <stdint.h>  /* uint64_t */
#include <time.h>    /* time_t */

#include "wh/buf.h"    /* struct wh_buf */
#include "wh/routes.h" /* enum wh_mpath */

struct wh_metrics;

struct wh_metrics *wh_metrics_new(void);    /* NULL on OOM */
void wh_metrics_free(struct wh_metrics *m); /* NULL-safe */

/* The path label of a row of wh_routes (wh/routes.h); "other" out of range. */
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
/* The earliest notAfter of the client CAs (--client-ca-file); rendered
 * once set. */
void wh_metrics_client_ca(struct wh_metrics *m, time_t not_after);
void wh_metrics_tls_reload(struct wh_metrics *m, bool ok);
/* Whether the certificate files hold a refused pair or client CA right now
 * (wh/tls.h). */
void wh_metrics_tls_refused(struct wh_metrics *m, bool refused);
/* Handshakes refused for their client certificate since start (a total). */
void wh_metrics_tls_client_refused(struct wh_metrics *m, long long total);
/* A connection cut off for being too slow. */
void wh_metrics_timeout(struct wh_metrics *m);

/* Connections cut to make room, by what they were doing. */
enum wh_mshed {
    WH_SHED_SLOW_BODY, /* its body stalled while request memory ran short */
    WH_SHED_IDLE,      /* it had no request in progress while connection slots ran short */
    WH_SHED__COUNT
};
void wh_metrics_shed(struct wh_metrics *m, enum wh_mshed why, long long n);

long long wh_metrics_in_flight(const struct wh_metrics *m);

/* Buckets (seconds) of tpu_webhook_claim_duration_seconds: the claims
 * count into them (struct wh_mclaims.dur_buckets). */
#define WH_MCLAIM_BUCKETS 8
extern const double wh_mclaim_bounds[WH_MCLAIM_BUCKETS];

/* Worker-id claims through the API server, as the claims module counts
 * them (claims.h fills it). */
struct wh_mclaims {
    uint64_t taken, held, failed;  /* claim outcomes */
    uint64_t api_errors;           /* failed API calls, retried ones included */
    uint64_t swept, sweeps_failed; /* expired claims deleted; failed sweeps */
    /* Claims superseded: of a deleted instance of the RayCluster, deleted
     * so that the new instance's pod could claim the id; taken by this
     * replica and given back because a live pod held the id. */
    uint64_t superseded_recreated, superseded_pod;
    /* Claims given back before they expired: the pod carrying their nonce
     * was seen being deleted. */
    uint64_t released;
    size_t objects;                          /* claim Leases seen by the last sweep */
    uint64_t dur_buckets[WH_MCLAIM_BUCKETS]; /* cumulative, le = wh_mclaim_bounds */
    uint64_t dur_count;
    double dur_sum_s;
};

/* Events on warned pods' workloads (admit's events.h counts them). */
struct wh_mevents {
    uint64_t sent;         /* posted, 2xx */
    uint64_t failed;       /* posted, refused or not answered */
    uint64_t dropped;      /* the queue was full */
    uint64_t deduplicated; /* within the window of an Event of the same object and reason */
    uint64_t limited;      /* over WH_EVENTS_PER_NAMESPACE in one window (events.h) */
    uint64_t unverified;   /* the workload the pod names has another uid, or none (events.h) */
};

/* The admission pipeline's gauges at scrape time: plain values its owner
 * (admit.c, from the caches, the ledger and the claims) fills, so that this
 * module knows nothing of those. */
struct wh_mgauges {
    bool synced;                    /* caches synced (always true when standalone) */
    bool pods_synced, nodes_synced; /* each cache (true when standalone) */
    bool pods_trusted; /* legacy indices can be assigned (see wh_cache_pods_unavailable) */
    long pods_down_ms, nodes_down_ms; /* how long each watch has been down; 0 healthy */
    size_t pods_cached;
    size_t nodes_cached;
    size_t reservations; /* ledger entries not yet confirmed */
    /* Legacy-path pod reviews, and the time they waited for their worker
     * group's ledger entry (another admission of the group held it). */
    unsigned long long legacy_reviews;
    unsigned long long legacy_wait_us;
    bool claims; /* worker-id claims in use (claim is valid) */
    struct wh_mclaims claim;
    bool events; /* Events are recorded (event is valid) */
    struct wh_mevents event;
};

/* What the server knows at scrape time. */
struct wh_mlive {
    bool ready;            /* /readyz answers 200 */
    long long connections; /* client connections open */
};

/* Append the exposition text; g (may be NULL) adds the pipeline's gauges,
 * live (may be NULL) the server's. Process metrics (memory, CPU, file
 * descriptors) are read from /proc and getrusage() here. */
WH_NODISCARD enum wh_err wh_metrics_render(const struct wh_metrics *m, const struct wh_mgauges *g,
                                           const struct wh_mlive *live, struct wh_buf *out);

#endif /* WH_METRICS_H */
