/* kuberay_spec.h: the spec of one worker pod as KubeRay builds it from its
 * group's template. */
#ifndef WH_KUBERAY_SPEC_H
#define WH_KUBERAY_SPEC_H

#include <cjson/cJSON.h>

#include "wh/err.h"             /* enum wh_err */
#include "wh/kuberay_cluster.h" /* struct wh_kr_cluster */

/* Complete spec, a copy of group's template.spec owned by the caller, in
 * place: wait-gcs-ready init container, ray start command and parameters,
 * environment, /dev/shm, metrics port and probes. WH_ERR_INVALID without a
 * first container (the caller checks that first, with a message). */
WH_NODISCARD enum wh_err wh_kr_build_spec(const struct wh_kr_cluster *c, const cJSON *group,
                                          cJSON *spec);

#endif /* WH_KUBERAY_SPEC_H */
