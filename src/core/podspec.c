/* podspec.c: pod and container facts. */
#include "wh/podspec.h"

#include <string.h> /* strcmp */

#include "wh/json.h"     /* wh_json_get, wh_json_path */
#include "wh/quantity.h" /* wh_quantity_ceil */
#include "wh/utf8.h"     /* wh_utf8_cut */

/* One of limits/requests: 0 when absent; -1 when it does not parse. */
static long tpu_quantity(const cJSON *container, const char *which)
{
    const cJSON *q = wh_json_path(container, "resources", which, WH_TPU_RESOURCE, NULL);
    if (!q || cJSON_IsNull(q))
        return 0;
    long v;
    return wh_quantity_ceil(q, &v) ? v : -1;
}

enum wh_err wh_container_tpu(const cJSON *container, struct wh_tpu_request *out, char *errbuf)
{
    long lim = tpu_quantity(container, "limits");
    long req = tpu_quantity(container, "requests");
    if (lim < 0 || req < 0) {
        const char *which = lim < 0 ? "limits" : "requests";
        const cJSON *q = wh_json_path(container, "resources", which, WH_TPU_RESOURCE, NULL);
        char *text = cJSON_PrintUnformatted(q);
        if (!text)
            return WH_ERR_NOMEM;
        wh_fail(errbuf, WH_ERR_INVALID,
                "container \"%s\": resources.%s[\"google.com/tpu\"] is %.*s, which is not a "
                "Kubernetes quantity; set a whole number of chips such as \"4\"",
                wh_json_str0(container, "name"), which, (int)wh_utf8_cut(text, 64), text);
        cJSON_free(text);
        return WH_ERR_INVALID;
    }
    out->requests_tpu = lim > 0 || req > 0;
    out->chips = req > 0 ? req : lim;
    return WH_OK;
}

bool wh_container_requests_tpu(const cJSON *container)
{
    return tpu_quantity(container, "limits") > 0 || tpu_quantity(container, "requests") > 0;
}

void wh_env_lookup(const cJSON *env, const char *name, struct wh_env_lookup *out)
{
    out->value = "";
    out->exists = false;
    out->index = -1;
    out->first_index = -1;
    if (!cJSON_IsArray(env))
        return;
    int i = 0;
    for (const cJSON *e = env->child; e; e = e->next, i++) {
        const char *n = wh_json_str(e, "name");
        if (!n || strcmp(n, name))
            continue;
        if (out->first_index < 0)
            out->first_index = i;
        const char *v = wh_json_str(e, "value");
        const cJSON *vf = wh_json_get(e, "valueFrom");
        if (v && *v) {
            out->value = v;
        } else if (!vf || cJSON_IsNull(vf)) {
            /* empty entries do not decide
             * (docs/internals/reference-behaviour.md §2.7.1) */
            continue;
        }
        out->exists = true;
        out->index = i;
        return;
    }
}

static const cJSON *meta_map(const cJSON *obj, const char *map)
{
    return wh_json_path(obj, "metadata", map, NULL);
}

const char *wh_meta_name(const cJSON *meta)
{
    const char *name = wh_json_str0(meta, "name");
    return *name ? name : wh_json_str0(meta, "generateName");
}

const char *wh_meta_label(const cJSON *obj, const char *key)
{
    return wh_json_str(meta_map(obj, "labels"), key);
}

const char *wh_meta_annotation(const cJSON *obj, const char *key)
{
    return wh_json_str(meta_map(obj, "annotations"), key);
}

bool wh_meta_has_label(const cJSON *obj, const char *key)
{
    return wh_json_has(meta_map(obj, "labels"), key);
}

bool wh_meta_has_annotation(const cJSON *obj, const char *key)
{
    return wh_json_has(meta_map(obj, "annotations"), key);
}

const char *wh_node_selector(const cJSON *pod_spec, const char *key)
{
    return wh_json_str(wh_json_get(pod_spec, "nodeSelector"), key);
}

const char *wh_slice_topology(const cJSON *obj, const cJSON *spec, bool *from_annotation)
{
    *from_annotation = wh_meta_has_annotation(obj, WH_ANN_SLICE_TOPOLOGY);
    return *from_annotation ? wh_meta_annotation(obj, WH_ANN_SLICE_TOPOLOGY)
                            : wh_node_selector(spec, WH_SEL_TOPOLOGY);
}

bool wh_managed(const cJSON *labels, const cJSON *annotations)
{
    const char *q = wh_json_str(labels, WH_LABEL_QUEUE_NAME);
    const char *t = wh_json_str(annotations, WH_ANN_REQUIRED_TOPOLOGY);
    const char *s = wh_json_str(annotations, WH_ANN_SKIP_CHECK);
    return (q && *q) || (t && *t) || (s && !strcmp(s, "true"));
}

bool wh_pod_is_legacy(const cJSON *pod)
{
    const cJSON *containers = wh_json_path(pod, "spec", "containers", NULL);
    bool tpu = false;
    for (const cJSON *k = cJSON_IsArray(containers) ? containers->child : NULL; k && !tpu;
         k = k->next)
        tpu = wh_container_requests_tpu(k);
    return tpu && !(wh_meta_has_label(pod, WH_LABEL_REPLICA_INDEX) &&
                    wh_meta_has_label(pod, WH_LABEL_HOST_INDEX));
}
