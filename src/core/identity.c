/* identity.c: the identity step of each workload kind (identity.h). */
#include "wh/identity.h"

#include "wh/identity_kuberay.h"  /* wh_kuberay_identity */
#include "wh/workload_identity.h" /* wh_wl_indexed_job, wh_wl_jobset, wh_wl_lws, wh_wl_single_pod */

/* One row per identity of the kind table. */
static const wh_pod_step steps[] = {
    [WH_IDENTITY_KUBERAY] = wh_kuberay_identity, [WH_IDENTITY_JOB_INDEX] = wh_wl_indexed_job,
    [WH_IDENTITY_JOBSET] = wh_wl_jobset,         [WH_IDENTITY_LWS] = wh_wl_lws,
    [WH_IDENTITY_SINGLE] = wh_wl_single_pod,
};

enum wh_kind_identity wh_identity_kind(enum wh_workload_kind kind)
{
    switch (kind) {
    case WH_WL_KUBERAY: return WH_IDENTITY_KUBERAY;
    case WH_WL_LWS: return WH_IDENTITY_LWS;
    case WH_WL_JOBSET: return WH_IDENTITY_JOBSET;
    case WH_WL_INDEXED_JOB: return WH_IDENTITY_JOB_INDEX;
    default: return WH_IDENTITY_SINGLE;
    }
}

wh_pod_step wh_identity_of(enum wh_workload_kind kind)
{
    return steps[wh_identity_kind(kind)];
}
