/* workload_pods.h: the pods the Job, JobSet and LeaderWorkerSet controllers
 * would create for a manifest, offline (pure: no I/O, no clock, no
 * randomness), as they are when the API server sends them to a mutating
 * webhook: names or generateName, the controllers' labels and annotations,
 * hostname and subdomain, JOB_COMPLETION_INDEX, and what LWS's own pod
 * webhook adds (worker-index label, LWS_* and TPU identity variables).
 * docs/workloads.md, "What each controller puts on a pod", lists them.
 *
 * UIDs and hashes the controllers derive from server state (the Job's UID,
 * JobSet's job-key, LWS's group-key) are derived from the names instead, so
 * a render is reproducible.
 */
#ifndef WH_WORKLOAD_PODS_H
#define WH_WORKLOAD_PODS_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

/* Most pods one manifest builds. */
#define WH_WORKLOAD_MAX_PODS 10000L

/* True when a pod template's containers request google.com/tpu (or carry one that is
 * not a quantity, which the validation denies). */
bool wh_workload_template_requests_tpu(const cJSON *tmpl);

/* Build the pods of obj (a Job, JobSet or LeaderWorkerSet) in creation
 * order: an Indexed Job's pods by index (completions of them), a
 * non-indexed Job's parallelism pods, a JobSet's child Jobs in replicated
 * job order, an LWS's groups (leader, then workers 1..size-1). On success
 * *pods is a new JSON array owned by the caller (cJSON_Delete).
 * WH_ERR_KIND for another kind; WH_ERR_INVALID naming the field when the
 * object cannot be rendered; WH_ERR_TOOBIG past WH_WORKLOAD_MAX_PODS. */
WH_NODISCARD enum wh_err wh_workload_pods(const cJSON *obj, cJSON **pods, char *errbuf);

#endif /* WH_WORKLOAD_PODS_H */
