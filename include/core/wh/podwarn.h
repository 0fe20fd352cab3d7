/* podwarn.h: the warnings the pod path (/mutate-workload) can give a pod
 * a controller created, as a table with stable keys, so that the workload
 * path (workload_validate.c) gives each at the object the user applied and
 * a shell can record each as an Event on it (docs/workloads.md, "Feedback
 * where the user looks"). Pure data and text; nothing is allocated. */
#ifndef WH_PODWARN_H
#define WH_PODWARN_H

#include <stddef.h> /* size_t */

#include <cjson/cJSON.h>

#include "wh/decision.h" /* struct wh_event_subject */

/* Every warning the pod path can give a pod of a Job, JobSet or
 * LeaderWorkerSet (docs/workloads.md, "Feedback where the user looks"). Each
 * is also given by /validate-workload on the object the user applied
 * (workload_validate.c), or that object is denied (at_workload), and the
 * server records it as an Event on that object (reason). The pod's warning
 * and the workload's end with the same text: fix. */
enum wh_pod_warning {
    WH_PW_TOPOLOGY_UNKNOWN,   /* no topology: nothing injected */
    WH_PW_GENERATION_UNKNOWN, /* no accelerator (nor a TorchTPU preset that tells it) */
    WH_PW_NOT_INDEXED,        /* a multi-host pod of a non-indexed Job (or none) */
    WH_PW_TORCH_TOPOLOGY,     /* a preset TORCH_TPU_TOPOLOGY that differs, kept */
    WH_PW_MEGASCALE_OWN,      /* the container's own MEGASCALE world: no PET_* */
    WH_PW_TORCH_PRESET,       /* a preset PET_* value the slice contradicts, kept (envverdict.h) */
    WH_PW_COUNT
};
struct wh_pod_warning_info {
    const char *key;         /* stable name (tests, docs) */
    const char *reason;      /* the Event's reason (CamelCase, as Kubernetes writes them) */
    const char *fix;         /* the text both warnings carry */
    const char *at_workload; /* "warning", or "denial: <which rule>" */
};
extern const struct wh_pod_warning_info wh_pod_warnings[WH_PW_COUNT];

/* The warning of a kept TORCH_TPU_TOPOLOGY, as both paths write it: into out
 * (WH_WARNING_MAX + 1 bytes or more). */
void wh_torch_kept_text(char *out, size_t n, const char *container, const char *value,
                        const char *topology, const char *want);

/* The warning of a container with its own MEGASCALE_NUM_SLICES and
 * MEGASCALE_SLICE_ID (megascale.h, WH_MS_OWN), as both paths write it. */
void wh_megascale_own_text(char *out, size_t n, const char *container);

/* Fields of a TORCH_TPU_TOPOLOGY value ("2,2,1,2" -> 4, *product 8); 0 when
 * it is not a comma list of positive integers. */
int wh_torch_fields(const char *s, long *product);

/* The JobSet controller's label (and annotation) with the JobSet's uid, on
 * its Jobs and their pods (docs/workloads.md). */
#define WH_KEY_JS_UID "jobset.sigs.k8s.io/jobset-uid"

/* The workload the user applied, for the Events of a pod's warnings: kind
 * "LeaderWorkerSet", "JobSet", "Indexed Job" or "Job" named owner in ns (s is
 * left empty when owner is NULL or "" or too long); the uid from the pod's
 * controller ownerReference when that is the Job itself, from label (or
 * annotation) WH_KEY_JS_UID for a JobSet, none for an LWS. */
void wh_event_subject_of(struct wh_event_subject *s, const cJSON *pod, const char *ns,
                         const char *kind, const char *owner);

/* The object a review applies (a RayCluster, Job, JobSet or LWS: its own
 * apiVersion and kind, name, in ns), for the Events of the warnings given on
 * it at /validate and /validate-workload. No uid: on a CREATE the object is
 * not stored yet, so the Events worker (which checks a stated uid with a GET)
 * posts it without one. s is left empty when a part does not fit. */
void wh_event_subject_object(struct wh_event_subject *s, const cJSON *obj, const char *ns,
                             const char *name);

#endif
