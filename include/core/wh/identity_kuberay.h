/* identity_kuberay.h: a KubeRay worker pod's place in its slice, the
 * KubeRay row of the identity table (identity.h): the replica and host
 * index from KubeRay's native labels, or, without them, the legacy indices
 * chosen from the pods the group already has (legacy.h,
 * docs/legacy-indices.md), or kept from a first review (D6). Pure. */
#ifndef WH_IDENTITY_KUBERAY_H
#define WH_IDENTITY_KUBERAY_H

#include <stdbool.h> /* bool */

#include "wh/err.h"      /* enum wh_err */
#include "wh/pipeline.h" /* struct wh_tpu_pod */
#include "wh/state.h"    /* struct wh_state */

/* Fill p->legacy, p->slice (the replica), p->host, p->identity,
 * p->headless and p->tpu_name, or deny (p->d) naming the label and the fix;
 * a legacy pod's claim is on p->d (wh_legacy_claim_nonce). p->n_hosts and
 * p->topology must be set. A wh_pod_step: skipped is never set. Errors for
 * OOM or a failing state callback (errbuf). */
WH_NODISCARD enum wh_err wh_kuberay_identity(struct wh_tpu_pod *p, const struct wh_state *st,
                                             bool *skipped, char *errbuf);

#endif
