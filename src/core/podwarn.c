/* podwarn.c: the pod path's warnings (podwarn.h). */
#include "wh/podwarn.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strlen, memcpy */

#include "wh/json.h"     /* wh_json_* */
#include "wh/kinds.h"    /* wh_kinds, wh_kind_find */
#include "wh/podspec.h"  /* WH_SEL_*, wh_meta_label, wh_meta_annotation */
#include "wh/topology.h" /* WH_TOPOLOGY_MAX_CHIPS */
#include "wh/utf8.h"     /* wh_utf8_trim_cut */

const struct wh_pod_warning_info wh_pod_warnings[WH_PW_COUNT] = {
    [WH_PW_TOPOLOGY_UNKNOWN] = {"topology-unknown", "TPUTopologyUnknown",
                                "no TPU env injected: add nodeSelector " WH_SEL_TOPOLOGY, "warning"},
    [WH_PW_GENERATION_UNKNOWN] = {"generation-unknown", "TPUGenerationUnknown",
                                  "no TPU env injected: add nodeSelector " WH_SEL_ACCELERATOR,
                                  "warning"},
    [WH_PW_NOT_INDEXED] = {"not-indexed", "TPUMultiHostNotIndexed",
                           "no TPU env injected: several hosts need an Indexed Job, JobSet or LWS",
                           "denial: completionMode is not \"Indexed\""},
    [WH_PW_TORCH_TOPOLOGY] = {"torch-topology-kept", "TPUTorchTopologyKept", "TORCH_TPU_TOPOLOGY",
                              "warning"},
    [WH_PW_MEGASCALE_OWN] = {"megascale-own-world", "TPUMegascaleOwnWorld",
                             "own MEGASCALE_NUM_SLICES/SLICE_ID; set PET_NNODES, PET_NODE_RANK, "
                             "PET_MASTER_ADDR",
                             "warning"},
    [WH_PW_TORCH_PRESET] = {"torch-preset-contradicts", "TPUTorchPresetContradicts",
                            "a preset PET_* value the slice contradicts (envverdict.h)",
                            "warning if its rule warns, else denial by its rule"},
};

void wh_megascale_own_text(char *out, size_t n, const char *container)
{
    snprintf(out, n, "container \"%.24s\": %s", container, wh_pod_warnings[WH_PW_MEGASCALE_OWN].fix);
    wh_utf8_trim_cut(out, n);
}

void wh_torch_kept_text(char *out, size_t n, const char *container, const char *value,
                        const char *topology, const char *want)
{
    /* Built on a buffer of its own and cut once: the same text on both paths. */
    char t[256];
    snprintf(t, sizeof(t),
             "container \"%.40s\": TORCH_TPU_TOPOLOGY \"%.32s\" kept; topology %.16s gives \"%.40s\"",
             container, value, topology, want);
    size_t len = strlen(t) < n ? strlen(t) : n - 1;
    memcpy(out, t, len);
    out[len] = '\0';
    wh_utf8_trim_cut(out, n);
}

int wh_torch_fields(const char *s, long *product)
{
    int n = 0;
    long p = 1;
    while (*s) {
        long v = 0;
        const char *start = s;
        while (*s >= '0' && *s <= '9' && s - start < 7)
            v = v * 10 + (*s++ - '0');
        if (s == start || v <= 0 || (*s && *s != ','))
            return 0;
        p *= v;
        n++;
        if (*s == ',' && !*++s)
            return 0;
        if (p > WH_TOPOLOGY_MAX_CHIPS * 2)
            return 0;
    }
    *product = p;
    return n;
}

/* The uid of the pod's controller ownerReference when it is kind/name. */
static const char *owner_uid(const cJSON *pod, const char *kind, const char *name)
{
    const cJSON *refs = wh_json_path(pod, "metadata", "ownerReferences", NULL);
    for (const cJSON *r = cJSON_IsArray(refs) ? refs->child : NULL; r; r = r->next)
        if (cJSON_IsTrue(wh_json_get(r, "controller")) && !strcmp(wh_json_str0(r, "kind"), kind) &&
            !strcmp(wh_json_str0(r, "name"), name))
            return wh_json_str0(r, "uid");
    return "";
}

void wh_event_subject_of(struct wh_event_subject *s, const cJSON *pod, const char *ns,
                         const char *kind, const char *owner)
{
    /* kind is a row's, or "Indexed Job" (a Job's row); an owner of another
     * kind is named as a batch/v1 object. */
    if (!strcmp(kind, "Indexed Job"))
        kind = wh_kinds[WH_ROW_JOB].kind;
    const struct wh_kind_def *def = wh_kind_find(kind);
    const char *api = def && def->review == WH_KIND_WORKLOAD ? def->api_version
                                                             : wh_kinds[WH_ROW_JOB].api_version;
    if (!owner || !*owner || strlen(owner) >= sizeof(s->name) || strlen(ns) >= sizeof(s->ns))
        return; /* no controller (a plain pod's client reads its own warnings) */
    snprintf(s->api_version, sizeof(s->api_version), "%s", api);
    snprintf(s->kind, sizeof(s->kind), "%s", kind);
    snprintf(s->ns, sizeof(s->ns), "%s", ns);
    snprintf(s->name, sizeof(s->name), "%s", owner);
    /* A Job's pod names it in its controller ownerReference; a JobSet's pods
     * carry its uid as label (and annotation) jobset.sigs.k8s.io/jobset-uid;
     * an LWS's pods carry none (docs/workloads.md, "Events on the workload"). */
    const char *uid = "";
    if (def && def->identity == WH_IDENTITY_JOB_INDEX) {
        uid = owner_uid(pod, kind, owner);
    } else if (def && def->identity == WH_IDENTITY_JOBSET) {
        uid = wh_meta_label(pod, WH_KEY_JS_UID);
        uid = uid ? uid : wh_meta_annotation(pod, WH_KEY_JS_UID);
        uid = uid ? uid : "";
    }
    snprintf(s->uid, sizeof(s->uid), "%s", strlen(uid) < sizeof(s->uid) ? uid : "");
}

void wh_event_subject_object(struct wh_event_subject *s, const cJSON *obj, const char *ns,
                             const char *name)
{
    const char *api = wh_json_str0(obj, "apiVersion"), *kind = wh_json_str0(obj, "kind");
    memset(s, 0, sizeof(*s));
    if (!*api || !*kind || !name || !*name || !ns || strlen(api) >= sizeof(s->api_version) ||
        strlen(kind) >= sizeof(s->kind) || strlen(ns) >= sizeof(s->ns) ||
        strlen(name) >= sizeof(s->name))
        return;
    snprintf(s->api_version, sizeof(s->api_version), "%s", api);
    snprintf(s->kind, sizeof(s->kind), "%s", kind);
    snprintf(s->ns, sizeof(s->ns), "%s", ns);
    snprintf(s->name, sizeof(s->name), "%s", name);
}
