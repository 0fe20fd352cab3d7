/* kinds.c: the workload kinds the webhook knows (see wh/kinds.h). */
#include "wh/kinds.h"

#include <stddef.h> /* NULL, size_t */
#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp */

const struct wh_kind_def wh_kinds[WH_ROW__COUNT] = {
    [WH_ROW_POD] = {.kind = "Pod",
                    .group = "",
                    .version = "v1",
                    .api_version = "v1",
                    .resource = "pods",
                    .review = WH_KIND_POD,
                    .metrics_label = "Pod",
                    .pod_label = NULL,
                    .cluster_spec = NULL,
                    .service_by_controller = false,
                    .identity = WH_IDENTITY_SINGLE,
                    .validator = WH_VALIDATOR_NONE,
                    .pods = WH_PODS_NONE,
                    .suspended = NULL},
    [WH_ROW_RAYCLUSTER] = {.kind = "RayCluster",
                           .group = "ray.io",
                           .version = "v1",
                           .api_version = "ray.io/v1",
                           .resource = "rayclusters",
                           .review = WH_KIND_RAYCLUSTER,
                           .metrics_label = "RayCluster",
                           .pod_label = "ray.io/cluster",
                           .cluster_spec = "spec",
                           .service_by_controller = true,
                           .identity = WH_IDENTITY_KUBERAY,
                           .validator = WH_VALIDATOR_RAYCLUSTER,
                           .pods = WH_PODS_KUBERAY,
                           .suspended = "KubeRay creates no head or worker pod"},
    [WH_ROW_RAYJOB] = {.kind = "RayJob",
                       .group = "ray.io",
                       .version = "v1",
                       .api_version = "ray.io/v1",
                       .resource = "rayjobs",
                       .review = WH_KIND_OTHER,
                       .metrics_label = NULL,
                       .pod_label = "ray.io/cluster",
                       .cluster_spec = "spec.rayClusterSpec",
                       .service_by_controller = true,
                       .identity = WH_IDENTITY_KUBERAY,
                       .validator = WH_VALIDATOR_NONE,
                       .pods = WH_PODS_KUBERAY,
                       .suspended = "KubeRay creates no RayCluster (no pod)"},
    [WH_ROW_RAYSERVICE] = {.kind = "RayService",
                           .group = "ray.io",
                           .version = "v1",
                           .api_version = "ray.io/v1",
                           .resource = "rayservices",
                           .review = WH_KIND_OTHER,
                           .metrics_label = NULL,
                           .pod_label = "ray.io/cluster",
                           .cluster_spec = "spec.rayClusterConfig",
                           .service_by_controller = true,
                           .identity = WH_IDENTITY_KUBERAY,
                           .validator = WH_VALIDATOR_NONE,
                           .pods = WH_PODS_KUBERAY,
                           .suspended = NULL},
    [WH_ROW_JOB] = {.kind = "Job",
                    .group = "batch",
                    .version = "v1",
                    .api_version = "batch/v1",
                    .resource = "jobs",
                    .review = WH_KIND_WORKLOAD,
                    .metrics_label = "Job",
                    .pod_label = "batch.kubernetes.io/job-name",
                    .cluster_spec = NULL,
                    .service_by_controller = false,
                    .identity = WH_IDENTITY_JOB_INDEX,
                    .validator = WH_VALIDATOR_WORKLOAD,
                    .pods = WH_PODS_WORKLOAD,
                    .suspended = "the Job controller creates no pod"},
    [WH_ROW_JOBSET] = {.kind = "JobSet",
                       .group = "jobset.x-k8s.io",
                       .version = "v1alpha2",
                       .api_version = "jobset.x-k8s.io/v1alpha2",
                       .resource = "jobsets",
                       .review = WH_KIND_WORKLOAD,
                       .metrics_label = "JobSet",
                       .pod_label = "jobset.sigs.k8s.io/jobset-name",
                       .cluster_spec = NULL,
                       .service_by_controller = true,
                       .identity = WH_IDENTITY_JOBSET,
                       .validator = WH_VALIDATOR_WORKLOAD,
                       .pods = WH_PODS_WORKLOAD,
                       .suspended = "JobSet creates its Jobs suspended (no pod)"},
    [WH_ROW_LWS] = {.kind = "LeaderWorkerSet",
                    .group = "leaderworkerset.x-k8s.io",
                    .version = "v1",
                    .api_version = "leaderworkerset.x-k8s.io/v1",
                    .resource = "leaderworkersets",
                    .review = WH_KIND_WORKLOAD,
                    .metrics_label = "LeaderWorkerSet",
                    .pod_label = "leaderworkerset.sigs.k8s.io/name",
                    .cluster_spec = NULL,
                    .service_by_controller = true,
                    .identity = WH_IDENTITY_LWS,
                    .validator = WH_VALIDATOR_WORKLOAD,
                    .pods = WH_PODS_WORKLOAD,
                    .suspended = NULL},
};

const struct wh_kind_def *wh_kind_find(const char *kind)
{
    for (size_t i = 0; kind && i < WH_ROW__COUNT; i++)
        if (!strcmp(kind, wh_kinds[i].kind))
            return &wh_kinds[i];
    return NULL;
}

enum wh_kind_row wh_kind_row_of(const struct wh_kind_def *def)
{
    return (enum wh_kind_row)(def - wh_kinds);
}

enum wh_kind wh_kind_class(const char *kind)
{
    const struct wh_kind_def *d = wh_kind_find(kind);
    return d ? d->review : WH_KIND_OTHER;
}

/* The kinds of the rows in pick[] as a list ("A, B <conj> C"). */
static const char *list_of(char *out, size_t n, const bool pick[WH_ROW__COUNT], const char *conj)
{
    size_t total = 0, k = 0, len = 0;
    for (size_t i = 0; i < WH_ROW__COUNT; i++)
        total += pick[i];
    if (n)
        out[0] = '\0';
    for (size_t i = 0; i < WH_ROW__COUNT && len < n; i++) {
        if (!pick[i])
            continue;
        const char *sep = !k ? "" : k + 1 < total ? ", " : NULL;
        int w = sep ? snprintf(out + len, n - len, "%s%s", sep, wh_kinds[i].kind)
                    : snprintf(out + len, n - len, " %s %s", conj, wh_kinds[i].kind);
        len = w < 0 ? n : len + (size_t)w;
        k++;
    }
    return out;
}

const char *wh_kind_list_by_review(char *out, size_t n, enum wh_kind review, const char *conj)
{
    bool pick[WH_ROW__COUNT];
    for (size_t i = 0; i < WH_ROW__COUNT; i++)
        pick[i] = wh_kinds[i].review == review;
    return list_of(out, n, pick, conj);
}

const char *wh_kind_list_by_pods(char *out, size_t n, unsigned pods, const char *conj)
{
    bool pick[WH_ROW__COUNT];
    for (size_t i = 0; i < WH_ROW__COUNT; i++)
        pick[i] = (pods & WH_PODS_BIT(wh_kinds[i].pods)) != 0;
    return list_of(out, n, pick, conj);
}
