/* mutate.h: TPU worker pod mutation (docs/internals/reference-behaviour.md §2
 * with the deliberate differences D1-D7, D9 of docs/behaviour.md, "Differences from the
 * reference"). Pure. */
#ifndef WH_MUTATE_H
#define WH_MUTATE_H

#include "wh/decision.h"  /* struct wh_decision */
#include "wh/err.h"       /* enum wh_err */
#include "wh/megascale.h" /* the MEGASCALE port, beside the one below */
#include "wh/review.h"    /* struct wh_review */
#include "wh/state.h"     /* struct wh_state */
#include "wh/tpuenv.h"    /* the process port base, beside the one below */

/* The device plugin's port (docs/internals/reference-behaviour.md §2.8; the
 * process port base is in tpuenv.h, MEGASCALE's in megascale.h). */
#define WH_DEVICE_PLUGIN_PORT 2112

/* Decide about rv (an AdmissionReview whose kind is Pod; the pod's
 * operation, namespace, cluster and group are its info's). d must be
 * initialised; on WH_OK it holds the decision. Errors only for OOM or a
 * failing state callback. */
WH_NODISCARD enum wh_err wh_mutate_pod(const struct wh_review *rv, const struct wh_state *st,
                                       struct wh_decision *d, char *errbuf);

#endif
