/* megascale.c: the slices a container's MEGASCALE_* joins (megascale.h). */
#include "wh/megascale.h"

#include "wh/json.h"    /* wh_parse_long, wh_json_get */
#include "wh/podspec.h" /* wh_env_lookup, wh_container_requests_tpu */

enum wh_ms_world wh_megascale_world(const cJSON *env, long slices, bool fill, const char **declared)
{
    struct wh_env_lookup lk;
    *declared = "";
    wh_env_lookup(env, "MEGASCALE_NUM_SLICES", &lk);
    if (lk.first_index < 0)
        return fill ? WH_MS_REPLICAS : WH_MS_SLICE;
    if (!lk.exists)
        return WH_MS_SLICE; /* declared empty: independent slices */
    long n;
    *declared = lk.value;
    if (!*lk.value || (wh_parse_long(lk.value, &n) && n == slices))
        return WH_MS_REPLICAS;
    wh_env_lookup(env, "MEGASCALE_SLICE_ID", &lk);
    return lk.first_index >= 0 ? WH_MS_OWN : WH_MS_CONFLICT;
}

long wh_megascale_joined_slices(const cJSON *containers, long slices, bool fill)
{
    const char *declared;
    for (const cJSON *c = cJSON_IsArray(containers) ? containers->child : NULL; c; c = c->next)
        if (wh_container_requests_tpu(c) &&
            wh_megascale_world(wh_json_get(c, "env"), slices, fill, &declared) != WH_MS_SLICE)
            return slices;
    return 1;
}

long wh_megascale_declared_port(const cJSON *env)
{
    struct wh_env_lookup lk;
    long port;
    wh_env_lookup(env, "MEGASCALE_PORT", &lk);
    return *lk.value && wh_parse_long(lk.value, &port) && port >= 0 ? port : -1;
}

long wh_megascale_port(const cJSON *env, long ci)
{
    long p = wh_megascale_declared_port(env);
    return p >= 0 ? p : WH_MEGASCALE_PORT + ci;
}

bool wh_megascale_shared_port(const cJSON *containers, const cJSON *c, const cJSON **other,
                              int *other_index, long *port)
{
    long ci = 0;
    int i = 0;
    for (const cJSON *o = containers ? containers->child : NULL; o && o != c; o = o->next)
        ci += wh_container_requests_tpu(o);
    *port = wh_megascale_port(wh_json_get(c, "env"), ci);
    long k = 0;
    for (const cJSON *o = containers ? containers->child : NULL; o && o != c; o = o->next, i++) {
        if (!wh_container_requests_tpu(o))
            continue;
        if (wh_megascale_port(wh_json_get(o, "env"), k++) == *port) {
            *other = o;
            *other_index = i;
            return true;
        }
    }
    return false;
}

bool wh_megascale_shared_slice_id(const cJSON *env, bool on, long slices, const char **value)
{
    struct wh_env_lookup lk;
    wh_env_lookup(env, "MEGASCALE_SLICE_ID", &lk);
    *value = lk.value;
    return on && slices > 1 && *lk.value;
}
