/* render_env.h: where each TPU variable of a rendered workload pod came
 * from (docs/workloads.md, "Feedback where the user looks"): injected by the
 * webhook, kept from the user's template, or kept from GKE's or LWS's own
 * per-pod values; and the contradictions the webhook warned about. Pure. */
#ifndef WH_RENDER_ENV_H
#define WH_RENDER_ENV_H

#include <cjson/cJSON.h>

#include "wh/buf.h" /* struct wh_buf */
#include "wh/err.h" /* enum wh_err */

/* One record for a pod, from the pod as its controller made it (before),
 * as patched (after) and the pod's warnings (a JSON array or NULL):
 *   {"pod": NAME, "containers": [{"name": C, "env": [{"name", "value",
 *    "source"}]}], "contradictions": [TEXT]}
 * per TPU container, the variables the webhook may inject that the pod has;
 * source "injected", "user", "gke" (a fieldRef to the completion index, GKE's
 * per-pod form) or "lws" (set by LeaderWorkerSet's pod webhook). *out is the
 * caller's (cJSON_Delete). WH_ERR_NOMEM only. */
WH_NODISCARD enum wh_err wh_render_env_origin(const cJSON *before, const cJSON *after,
                                              const cJSON *warnings, cJSON **out);

/* Append records (a JSON array of them) as text, one line per variable and
 * one "! " line per contradiction. */
WH_NODISCARD enum wh_err wh_render_env_text(const cJSON *records, struct wh_buf *out);

#endif
