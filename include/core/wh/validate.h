/* validate.h: RayCluster validation (anchor §3, with D1 and D8). Pure. */
#ifndef WH_VALIDATE_H
#define WH_VALIDATE_H

#include <cjson/cJSON.h>

#include "wh/decision.h" /* struct wh_decision */
#include "wh/err.h"      /* enum wh_err */
#include "wh/state.h"    /* struct wh_state */

/* Decide about request (kind RayCluster): CREATE and UPDATE are checked,
 * other operations admitted. Every failing TPU worker group is reported in
 * one denial message; admissible-but-likely-wrong settings become warnings.
 * Errors only for OOM or a failing state callback. */
WH_NODISCARD enum wh_err wh_validate_raycluster(const cJSON *request, const struct wh_state *st,
                                                struct wh_decision *d, char *errbuf);

#endif
