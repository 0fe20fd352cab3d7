/* render.h: what the webhook would do to a RayCluster and its worker pods,
 * offline.
 *
 * The cluster (from a RayCluster, RayJob or RayService manifest) gets the CRD
 * defaults the API server applies, is wrapped in an AdmissionReview request
 * and validated by the engine's RayCluster policy, exactly as the webhook
 * would. When allowed, the worker pods KubeRay would create (wh_kuberay) go
 * through the engine's pod mutation one by one in creation order (CREATE)
 * against an in-memory cluster state that grows as pods are admitted, and
 * each returned JSON patch is applied to its pod. The engine is called in
 * process and answers with data, not AdmissionReview text.
 */
#ifndef WH_RENDER_H
#define WH_RENDER_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

#include "wh/buf.h"        /* struct wh_buf */
#include "wh/engine.h"     /* enum wh_route */
#include "wh/err.h"        /* enum wh_err */
#include "wh/kuberay.h"    /* struct wh_kuberay_opts */
#include "wh/state.h"      /* struct wh_state */
#include "wh/validate.h"   /* struct wh_validation */
#include "wh/violations.h" /* struct wh_violations */

/* The engine's answer to a RayCluster CREATE. */
struct wh_render_verdict {
    bool allowed;
    char *message;                 /* malloc'd denial message; NULL when allowed */
    cJSON *warnings;               /* JSON array of strings, never NULL after success */
    struct wh_validation findings; /* the same, per worker group, as data */
    struct wh_violations problems; /* a workload's (Job, JobSet, LWS) problems, as data */
};

/* Validate cluster (not changed) as the webhook would. On success v holds
 * the verdict; free it with wh_render_verdict_free(). A wh_err means the
 * engine could not answer at all (errbuf says why), or WH_ERR_INVALID: a
 * worker-group field has a type the RayCluster CRD schema refuses (the API
 * server would reject the object before any webhook saw it). */
WH_NODISCARD enum wh_err wh_render_validate(const cJSON *cluster, struct wh_render_verdict *v,
                                            char *errbuf);
void wh_render_verdict_free(struct wh_render_verdict *v); /* NULL-safe */

struct wh_render_result {
    cJSON *cluster; /* the RayCluster as validated (defaults applied), or the workload */
    struct wh_render_verdict verdict;
    cJSON *pods;            /* the mutated pods in creation order; NULL when denied */
    char *pod_denial;       /* malloc'd: the engine denied a pod (pods is NULL then) */
    char *pod_denial_group; /* malloc'd: that pod's worker group */
    /* A workload's pods: per pod, where each TPU variable came from and the
     * pod's warnings (render_env.h); NULL for a RayCluster or when denied. */
    cJSON *origins;
    /* Notes, not warnings: what render could not show as the cluster will
     * (a suspended object's pods). JSON array of strings, NULL when none. */
    cJSON *notes;
};

/* Render one manifest object (RayCluster, RayJob or RayService). Every
 * member of out is owned by out (wh_render_result_free). An object whose
 * spec.suspend is true (kinds.h: suspends) gets an empty pods list and a
 * note: its pods are built and judged as created once it is resumed, and
 * a denial of one is reported as for any object. WH_ERR_KIND for
 * another kind, WH_ERR_INVALID / WH_ERR_TOOBIG when the cluster cannot be
 * rendered, with the reason in errbuf (a RayCluster named over 53
 * characters with KubeRay 1.4+, which refuses it); a denial is not an
 * error. */
WH_NODISCARD enum wh_err wh_render_object(const cJSON *obj, const struct wh_kuberay_opts *opts,
                                          struct wh_render_result *out, char *errbuf);
/* Render a Job, JobSet or LeaderWorkerSet (docs/workloads.md): the object
 * (namespace defaulted) is validated on WH_ROUTE_VALIDATE_WORKLOAD; when
 * allowed, the pods its controllers would create (wh_workload_pods) go
 * through WH_ROUTE_MUTATE_WORKLOAD one by one and are patched. out->cluster
 * holds the object, pod_denial_group the denied pod's name. Errors as
 * wh_render_object. */
WH_NODISCARD enum wh_err wh_render_workload(const cJSON *obj, struct wh_render_result *out,
                                            char *errbuf);
void wh_render_result_free(struct wh_render_result *r); /* NULL-safe */

/* An object with metadata.generateName and no name is named by the API
 * server when it stores it (generateName cut to 58 bytes + 5 random
 * characters), after mutating admission and before validation. Offline,
 * *named is a copy of obj named generateName + "xxxxx" (a placeholder as
 * long as the real name, so the rules on its length are judged); NULL when
 * obj has a name or no generateName. The caller frees it (cJSON_Delete).
 * wh_render_object and wh_render_workload do this themselves. */
WH_NODISCARD enum wh_err wh_render_generated_name(const cJSON *obj, cJSON **named, char *errbuf);
/* Append to *notes (created when NULL) the note on named's placeholder:
 * the fields of pods (may be NULL) that hold it, i.e. depend on the name. */
WH_NODISCARD enum wh_err wh_render_generated_note(const cJSON *named, const cJSON *pods,
                                                  cJSON **notes);

/* One pod through the engine's mutation on route (WH_ROUTE_MUTATE or
 * WH_ROUTE_MUTATE_WORKLOAD) against st, in the CREATE review the API server
 * would send: on success *out is a patched copy of pod (the caller's,
 * cJSON_Delete) or NULL with *denial the engine's message (malloc'd, the
 * caller frees). `doctor` uses it to see what the webhook would write now. */
WH_NODISCARD enum wh_err wh_render_admit_pod(const cJSON *pod, enum wh_route route,
                                             const struct wh_state *st, cJSON **out, char **denial,
                                             char *errbuf);

/* Append a table of the rendered pods to out: per worker group and replica,
 * each pod's hostname, TPU_WORKER_ID (every TPU container), TPU_NAME and the
 * sizes of TPU_WORKER_HOSTNAMES and TPU_PROCESS_ADDRESSES; for a workload,
 * per pod its hostname, TPU_WORKER_ID, peer count, MEGASCALE_SLICE_ID,
 * PET_NNODES, PET_NODE_RANK, TORCH_TPU_TOPOLOGY and slicebuilder count. */
WH_NODISCARD enum wh_err wh_render_summary(const struct wh_render_result *r, struct wh_buf *out);

#endif /* WH_RENDER_H */
