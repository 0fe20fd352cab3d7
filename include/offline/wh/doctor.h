/* doctor.h: why a TPU slice that exists does not start (docs/troubleshooting.md).
 *
 * Input: the pods, nodes and services of a cluster as `kubectl get -o json`
 * writes them (a List with items, or a JSON array). The TPU pods (a
 * container requests google.com/tpu; not terminating, not Succeeded or
 * Failed) are grouped into slices by their controllers' labels, classified
 * as the admission path classifies them (wh_wl_classify, workload_pod.h): a
 * KubeRay worker-group replica (native index labels, else the legacy
 * replicaIndex label), a LeaderWorkerSet group, a JobSet child Job, an
 * Indexed Job (by the Job's name, as the webhook names its peers; without
 * one, a pod alone), or a single pod. Each slice is
 * judged as a whole and gets one problem record per finding; grouping is by
 * hash, so the work is linear in the pods (10,000 pods in 1,000 slices).
 *
 * Which rules (problem ids, docs/troubleshooting.md has an example of each):
 *   missing-hosts, extra-host, worker-id-missing, duplicate-worker-id,
 *   worker-id-out-of-range, worker-id-not-host, tpu7x-container-ids,
 *   hostname-missing, hostnames-differ, hostnames-entry, slicebuilder-differ,
 *   slicebuilder-entry, torchrun-differ, service-missing,
 *   service-not-headless, service-not-selecting, service-not-publishing,
 *   hostnetwork-dns, mixed-node-pools, mixed-placement-groups,
 *   node-labels-disagree, unschedulable, megascale-num-slices,
 *   megascale-slice-id, megascale-coordinator: severity "error", the slice
 *   cannot start; drift (a value differs from what the webhook would write
 *   now) and topology-unknown (hosts not counted): severity "warning".
 * Expected values come from the core: hosts from topology.h and the TPU
 * containers (tpuenv.h), TPU_WORKER_ID from wh_tpu_worker_id, and for drift
 * the engine itself (wh_render_admit_pod on the pod with the injected
 * variables removed, see src/offline/doctor/drift.c).
 *
 * The report (a cJSON object, the caller's):
 *   {"pods": N TPU pods, "slices": [{"namespace", "kind", "name",
 *     "hostsExpected" (-1 unknown), "hostsPresent", "status" ("ok" |
 *     "warning" | "broken"), "problems": [{"problem", "severity", "pod",
 *     "field", "holds", "expected", "fix"}]}], "ok", "warning", "broken"
 *     (counts), "notes": [strings: rules not judged for lack of input]}
 * Slices are sorted by namespace, kind, name.
 */
#ifndef WH_DOCTOR_H
#define WH_DOCTOR_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

#include "wh/buf.h" /* struct wh_buf */
#include "wh/err.h" /* enum wh_err */

struct wh_doctor_input {
    const cJSON *pods;     /* PodList or array; required */
    const cJSON *nodes;    /* NodeList or array; NULL: node rules not judged */
    const cJSON *services; /* ServiceList or array; NULL: Service rules not judged */
    /* Drift not judged (the live check of serve: its cache keeps only what
     * the slice rules read, not the whole pod the engine would need; the
     * report then carries a note saying so). */
    bool no_drift;
};

/* Judge every slice. *report is the caller's (cJSON_Delete). WH_ERR_INVALID
 * names the list, the item and what is wrong when an input is not a list of
 * objects of its kind; WH_ERR_NOMEM. The inputs are only read. */
WH_NODISCARD enum wh_err wh_doctor_run(const struct wh_doctor_input *in, cJSON **report,
                                       char *errbuf);

/* What a caller that lists a big cluster keeps of each item (the paged
 * LIST of doctor: memory grows with what the rules read, not with the
 * cluster). For a pod, false when no rule reads it (not a live TPU pod:
 * wh_doctor_run would skip it); else, and for nodes and services, true with
 * obj trimmed in place to what the rules and the drift check read (a node's
 * name and labels; no metadata.managedFields, of a pod's status only its
 * phase, no kubectl last-applied annotation). An item that is not an
 * object with metadata is kept as it is, for wh_doctor_run to name. */
enum wh_doctor_list { WH_DOCTOR_PODS, WH_DOCTOR_NODES, WH_DOCTOR_SERVICES };
bool wh_doctor_keep(enum wh_doctor_list which, cJSON *obj);

/* True when every slice of the report can start (no "broken" slice). */
bool wh_doctor_ok(const cJSON *report);

/* Append the report as text: one row per slice (namespace, kind, name,
 * hosts present/expected, status, problem count), then one line per
 * problem, then the notes. Every value from the input is escaped for a
 * terminal (wh/term.h): no control byte of a name or env value reaches it. */
WH_NODISCARD enum wh_err wh_doctor_table(const cJSON *report, struct wh_buf *out);

/* Issue 24, item 3: the Service rules above (service-missing, -not-headless,
 * -not-selecting, -not-publishing) for the pods render and check build for a
 * Job (`workload`, the object; pods, its rendered pods), against the Services
 * of the same input (an array, empty when the input has none: then each
 * finding is prefixed "no Service in the input: "). JobSets and
 * LeaderWorkerSets are not judged: their controllers create the Service.
 * NULL services: nothing judged. Appends one string per finding to warnings
 * (a JSON array, the caller's). WH_ERR_NOMEM, or doctor's WH_ERR_INVALID. */
WH_NODISCARD enum wh_err wh_doctor_service_warnings(const cJSON *workload, const cJSON *pods,
                                                    const cJSON *services, cJSON *warnings,
                                                    char *errbuf);

/* The Services among docs (an array of documents, v1 Lists opened), as an
 * array of references into docs: *out is the caller's (cJSON_Delete frees
 * the array, not the Services) and lives no longer than docs. WH_ERR_NOMEM. */
WH_NODISCARD enum wh_err wh_doctor_collect_services(const cJSON *docs, cJSON **out);

#endif /* WH_DOCTOR_H */
