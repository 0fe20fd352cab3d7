/* slices.h: doctor's slice rules, live, on the pod and node caches
 * (docs/troubleshooting.md, "Alert TPUWebhookSliceBroken";
 * docs/internals/threads.md, "slice check").
 *
 * One background thread wakes every interval and, when the caches changed
 * since its last check (wh_store_version) and both have synced, rebuilds
 * the TPU pods from their slice records and runs wh_doctor_run() on them
 * and the cached TPU nodes: the same rules as `tpu-webhook doctor`, no API
 * call of its own. It never runs on a thread that serves connections, nor
 * per admission; a scrape or /debug/slices only copies its last result.
 *
 * What it cannot see, so doctor must be run for it: the pod cache holds
 * KubeRay worker pods only (the pod watch's selector, cache.h), so Job,
 * JobSet, LeaderWorkerSet and single-pod slices are not judged; Services
 * are not cached (service-missing, service-not-headless,
 * service-not-selecting, service-not-publishing are never reported); drift
 * is not judged (the record is not the whole pod).
 *
 * Ownership: the checker borrows cache, which must outlive it
 * (wh_slices_free() first). The texts appended are the caller's buffers.
 */
#ifndef WH_SLICES_H
#define WH_SLICES_H

#include "wh/buf.h"   /* struct wh_buf */
#include "wh/cache.h" /* struct wh_cache */
#include "wh/err.h"   /* enum wh_err */

/* How often the checker looks for changes by default; a check costs a
 * walk of the TPU pods' records (under their own mutex, not the lock
 * admissions read under) and doctor's linear pass. */
#define WH_SLICES_DEFAULT_INTERVAL_MS 5000L
/* Shorter intervals are raised to this (a check walks every TPU pod). */
#define WH_SLICES_MIN_INTERVAL_MS 100L
/* Series of tpu_webhook_slice_problems at most; the rest are summed into
 * one series labelled namespace="(other)", kind="(other)",
 * problem="(other)". */
#define WH_SLICES_MAX_SERIES 200
/* Broken slices /debug/slices lists at most (it says when it cut). */
#define WH_SLICES_MAX_DEBUG 500

struct wh_slices;

/* Start the checker thread; interval_ms <= 0: the default; below the
 * minimum: the minimum. NULL with the
 * reason in errbuf. */
struct wh_slices *wh_slices_start(struct wh_cache *cache, long interval_ms, char *errbuf);
/* Stop the thread (waits for a check in progress) and free. NULL-safe. */
void wh_slices_free(struct wh_slices *s);

/* Append the metrics of the last check (tpu_webhook_slices,
 * tpu_webhook_slice_problems, tpu_webhook_slice_checks_total), zeros before
 * the first. */
WH_NODISCARD enum wh_err wh_slices_metrics(struct wh_slices *s, struct wh_buf *out);
/* Append the /debug/slices document: {"checked": bool, "checks": N,
 * "pods": N, "ok": N, "warning": N, "broken": N (doctor's counts),
 * "truncated": bool, "notes": [...],
 * "slices": [doctor's slice objects of the broken slices]}. */
WH_NODISCARD enum wh_err wh_slices_debug(struct wh_slices *s, struct wh_buf *out);

/* Checks run so far (tests wait on it). */
unsigned long wh_slices_checks(struct wh_slices *s);

#endif /* WH_SLICES_H */
