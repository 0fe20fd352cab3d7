/* kuberay_opts.h: the KubeRay operator a render imitates (its version and
 * options), on its own so that the render's parts (kuberay_cluster.h,
 * kuberay_spec.h) and its front (kuberay.h) share it without a circle.
 * wh_kuberay_opts_init (kuberay.h) fills it. */
#ifndef WH_KUBERAY_OPTS_H
#define WH_KUBERAY_OPTS_H

#include <stdbool.h> /* bool */

struct wh_kuberay_opts {
    int major, minor; /* KubeRay operator version */
    /* Feature gate RayMultiHostIndexing: the native index labels. Set by
     * wh_kuberay_opts_init from the version (on from 1.6, its default). */
    bool multihost_indexing;
    const char *cluster_domain; /* NULL means cluster.local */
};

#endif
