/* kuberay.h: the worker pods the KubeRay operator would create for a
 * RayCluster, offline (pure: no I/O, no clock, no randomness).
 *
 * Follows docs/kuberay-pods.md §4: per worker group, in spec
 * order, replicas x numOfHosts pods in KubeRay's creation order (replica 0
 * host 0, replica 0 host 1, ...), each with KubeRay's generateName,
 * namespace, labels, ownerReference, wait-gcs-ready init container,
 * `ray start` command, environment, /dev/shm volume, metrics port and probes.
 *
 * Where KubeRay picks something at random (the 5-character replica-name
 * suffix, a RayJob's or RayService's cluster-name suffix) this module derives
 * it from a hash of the names instead, so a render is reproducible. Operator
 * options other than the version are at their defaults (init-container and
 * probe injection on, no sidecars, no batch scheduler, cluster.local).
 */
#ifndef WH_KUBERAY_H
#define WH_KUBERAY_H

#include <cjson/cJSON.h>

#include "wh/err.h"          /* enum wh_err */
#include "wh/kuberay_opts.h" /* struct wh_kuberay_opts */

/* Most worker pods one render builds (all groups together). */
#define WH_KUBERAY_MAX_PODS 10000L

/* Defaults for KubeRay major.minor. */
void wh_kuberay_opts_init(struct wh_kuberay_opts *o, int major, int minor);

/* Parse "1.6", "v1.7.0", "1.5.2" into major.minor (1.0 .. 1.99).
 * WH_ERR_INVALID with the reason otherwise. */
WH_NODISCARD enum wh_err wh_kuberay_parse_version(const char *s, int *major, int *minor,
                                                  char *errbuf);

/* The RayCluster a manifest stands for. RayCluster: a copy. RayJob: a
 * RayCluster from spec.rayClusterSpec; RayService: from
 * spec.rayClusterConfig (named <name>-<5 chars> like KubeRay, labelled
 * ray.io/originated-from-crd). *cluster is the caller's (cJSON_Delete).
 * WH_ERR_KIND for any other kind, WH_ERR_INVALID when the wrapper has no
 * cluster spec (e.g. a RayJob with spec.clusterSelector). */
WH_NODISCARD enum wh_err wh_kuberay_cluster_of(const cJSON *obj, cJSON **cluster, char *errbuf);

/* Fill the RayCluster CRD defaults the API server applies before admission
 * (numOfHosts 1 where absent) and the namespace ("default" where absent). */
WH_NODISCARD enum wh_err wh_kuberay_apply_defaults(cJSON *cluster);

/* Desired replicas of a worker group: replicas clamped into
 * [minReplicas, maxReplicas] (nil replicas = minReplicas), 0 when suspended;
 * and numOfHosts (values <= 0 count as 1). */
void wh_kuberay_group_size(const cJSON *group, long *replicas, long *hosts);

/* Build the worker pods, every group, in creation order. On success *pods is
 * a new JSON array of Pod objects, owned by the caller (cJSON_Delete).
 * WH_ERR_INVALID names the field when the cluster cannot be rendered,
 * WH_ERR_TOOBIG past WH_KUBERAY_MAX_PODS. */
WH_NODISCARD enum wh_err wh_kuberay_worker_pods(const cJSON *cluster,
                                                const struct wh_kuberay_opts *opts, cJSON **pods,
                                                char *errbuf);

#endif /* WH_KUBERAY_H */
