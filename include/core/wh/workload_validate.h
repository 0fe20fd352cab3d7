/* workload_validate.h: the /validate-workload policy, the analogue of the
 * RayCluster numOfHosts check for batch/v1 Jobs, JobSets and
 * LeaderWorkerSets (docs/workloads.md, "Validation"). A multi-host TPU pod
 * template must be created by a controller that gives every host its
 * identity and peers: completionMode Indexed, parallelism = completions =
 * hosts of the topology (JobSet: per replicated job; LWS: size), and names
 * that resolve (a subdomain, or JobSet's DNS hostnames). Pure. */
#ifndef WH_WORKLOAD_VALIDATE_H
#define WH_WORKLOAD_VALIDATE_H

#include "wh/decision.h" /* struct wh_decision */
#include "wh/err.h"      /* enum wh_err */
#include "wh/review.h"   /* struct wh_review */
#include "wh/state.h"    /* struct wh_state */

/* Judge rv (an AdmissionReview of a kind whose row of wh_kinds (kinds.h)
 * has validator WH_VALIDATOR_WORKLOAD: Job, JobSet, LeaderWorkerSet; its
 * operation, kind, namespace and the object's name are its info's) on
 * CREATE and UPDATE; other operations are allowed. Every failing part is
 * reported in one denial, each naming kind/name, the field, its value and
 * the value expected. st: the known TPU nodes (NULL: none known), read as
 * the pod path reads them, so that a template naming only its node pool is
 * judged on the generation and topology its pods get (workload_topology.h).
 * rv and st are borrowed; d must be initialised and is the caller's
 * (wh_decision_free). Errors only for OOM or a failing state callback
 * (errbuf). */
WH_NODISCARD enum wh_err wh_validate_workload(const struct wh_review *rv, const struct wh_state *st,
                                              struct wh_decision *d, char *errbuf);

struct wh_violations; /* violations.h */
/* wh_validate_workload that also lists each problem in out (may be NULL;
 * the caller's, wh_violations_free), keyed by its rule and the replicated
 * job it is about (violations.h). */
WH_NODISCARD enum wh_err wh_validate_workload_report(const struct wh_review *rv,
                                                     const struct wh_state *st,
                                                     struct wh_decision *d,
                                                     struct wh_violations *out, char *errbuf);

#endif
