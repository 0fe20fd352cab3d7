/* workload_pod.c: how the workload path names a pod and its workload
 * (workload_pod.h). */
#include "wh/workload_pod.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strlen */

#include "wh/kinds.h"   /* wh_kinds */
#include "wh/podspec.h" /* wh_meta_* */
#include "wh/utf8.h"    /* wh_utf8_cut, wh_utf8_trim_cut */

#define KUBERAY_OPERATOR "kuberay-operator"

/* The classification order of workload.h. */
enum wh_workload_kind wh_wl_classify(const cJSON *pod)
{
    const char *created_by = wh_meta_label(pod, WH_LABEL_CREATED_BY);
    if (wh_meta_has_label(pod, WH_LABEL_CLUSTER) ||
        (created_by && !strcmp(created_by, KUBERAY_OPERATOR)))
        return WH_WL_KUBERAY;
    if (wh_meta_has_label(pod, WH_KEY_LWS_NAME))
        return WH_WL_LWS;
    if (wh_wl_meta_value(pod, WH_KEY_JS_NAME, false))
        return WH_WL_JOBSET;
    if (wh_wl_meta_value(pod, WH_KEY_JOB_INDEX, true))
        return WH_WL_INDEXED_JOB;
    return WH_WL_SINGLE;
}

/* Label first, then annotation (or the other way round). */
const char *wh_wl_meta_value(const cJSON *pod, const char *key, bool annotation_first)
{
    const char *a = wh_meta_annotation(pod, key), *l = wh_meta_label(pod, key);
    return annotation_first ? (a ? a : l) : (l ? l : a);
}

const char *wh_wl_job_name(const cJSON *pod)
{
    const char *j = wh_meta_label(pod, WH_KEY_JOB_NAME);
    return j && *j ? j : wh_meta_label(pod, WH_KEY_JOB_NAME_OLD);
}

void wh_wl_describe(struct wh_tpu_pod *w)
{
    const char *owner = NULL, *kind = wh_kinds[WH_ROW_POD].kind;
    switch (w->kind) {
    case WH_WL_LWS:
        owner = wh_meta_label(w->pod, WH_KEY_LWS_NAME);
        kind = wh_kinds[WH_ROW_LWS].kind;
        break;
    case WH_WL_JOBSET:
        owner = wh_wl_meta_value(w->pod, WH_KEY_JS_NAME, false);
        kind = wh_kinds[WH_ROW_JOBSET].kind;
        break;
    case WH_WL_INDEXED_JOB:
        owner = wh_wl_job_name(w->pod);
        kind = "Indexed Job";
        break;
    default:
        owner = wh_wl_job_name(w->pod);
        kind = owner ? wh_kinds[WH_ROW_JOB].kind : wh_kinds[WH_ROW_POD].kind;
        break;
    }
    wh_event_subject_of(&w->d->subject, w->pod, w->ns, kind, owner);
    /* Cut on a character boundary: a split character makes the answer
     * invalid UTF-8. */
    int pl = (int)wh_utf8_cut(w->pod_name, 253);
    if (owner && *owner)
        snprintf(w->who, sizeof(w->who), "%s \"%s/%.*s\" (pod \"%.*s\")", kind, w->ns,
                 (int)wh_utf8_cut(owner, 253), owner, pl, w->pod_name);
    else
        snprintf(w->who, sizeof(w->who), "Pod \"%s/%.*s\"", w->ns, pl, w->pod_name);
    wh_utf8_trim_cut(w->who, sizeof(w->who)); /* a long namespace */
}

/* Admit unchanged: a short warning (what to do) for the user, the full
 * text (who, why, what to do) for the log and the workload's Event. */
enum wh_err wh_wl_skip(struct wh_tpu_pod *w, bool *skipped, enum wh_pod_warning k, const char *why)
{
    *skipped = true;
    const char *todo = wh_pod_warnings[k].fix + strlen("no TPU env injected: ");
    enum wh_err err = wh_decision_warn(w->d, "%s", wh_pod_warnings[k].fix);
    if (!err)
        err = wh_decision_note(w->d, "%s: no TPU variables injected: %s; %s", w->who, why, todo);
    wh_decision_event(w->d, wh_pod_warnings[k].reason, "%s: no TPU variables injected: %s; %s",
                      w->who, why, todo);
    return err;
}
