/* kuberay_json.c: the JSON edits the KubeRay pod builder repeats (see
 * kuberay_json.h). */
#include "wh/kuberay_json.h"

#include <math.h>   /* ceil, isfinite */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* qsort */
#include <string.h> /* strcmp */

#include "wh/json.h"     /* wh_json_* */
#include "wh/mem.h"      /* wh_malloc, wh_free */
#include "wh/quantity.h" /* wh_quantity_parse */

/* Replace or add obj[key]; takes ownership of item. */
enum wh_err wh_kr_put(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return WH_ERR_NOMEM;
    if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
        if (!cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item)) {
            cJSON_Delete(item);
            return WH_ERR_NOMEM;
        }
        return WH_OK;
    }
    return wh_json_set(obj, key, item);
}

enum wh_err wh_kr_put_str(cJSON *obj, const char *key, const char *value)
{
    return wh_kr_put(obj, key, cJSON_CreateString(value));
}

/* obj[key] as an object/array, created when absent or of another type. */
cJSON *wh_kr_child(cJSON *obj, const char *key, bool array)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (c && (array ? cJSON_IsArray(c) : cJSON_IsObject(c)))
        return c;
    if (wh_kr_put(obj, key, array ? cJSON_CreateArray() : cJSON_CreateObject()))
        return NULL;
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* A scalar as text ("" for anything else); buf holds numbers. */
const char *wh_kr_scalar_text(const cJSON *v, char *buf, size_t len)
{
    if (cJSON_IsString(v))
        return v->valuestring;
    if (cJSON_IsBool(v))
        return cJSON_IsTrue(v) ? "true" : "false";
    if (cJSON_IsNumber(v)) {
        snprintf(buf, len, "%.15g", v->valuedouble);
        return buf;
    }
    return "";
}

static int cmp_child(const void *a, const void *b)
{
    return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* Sort an object's members by key, as Go prints its maps. */
enum wh_err wh_kr_sort_object(cJSON *obj)
{
    int n = cJSON_GetArraySize(obj);
    if (n < 2)
        return WH_OK;
    cJSON **items = wh_malloc((size_t)n * sizeof(*items));
    if (!items)
        return WH_ERR_NOMEM;
    int i = 0;
    for (cJSON *c = obj->child; c; c = c->next)
        items[i++] = c;
    qsort(items, (size_t)n, sizeof(*items), cmp_child);
    for (i = 0; i < n; i++) {
        items[i]->prev = i ? items[i - 1] : items[n - 1];
        items[i]->next = i + 1 < n ? items[i + 1] : NULL;
    }
    obj->child = items[0];
    wh_free(items);
    return WH_OK;
}

static bool env_has(const cJSON *env, const char *name)
{
    for (const cJSON *e = cJSON_IsArray(env) ? env->child : NULL; e; e = e->next)
        if (!strcmp(wh_json_str0(e, "name"), name))
            return true;
    return false;
}

static cJSON *env_value(const char *name, const char *value)
{
    cJSON *e = cJSON_CreateObject();
    if (e && (wh_json_set_str(e, "name", name) || wh_json_set_str(e, "value", value))) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

static cJSON *env_field(const char *name, const char *path)
{
    cJSON *e = cJSON_CreateObject(), *vf = cJSON_CreateObject(), *fr = cJSON_CreateObject();
    if (!e || !vf || !fr || wh_json_set_str(fr, "fieldPath", path)) {
        cJSON_Delete(e);
        cJSON_Delete(vf);
        cJSON_Delete(fr);
        return NULL;
    }
    if (wh_json_set(vf, "fieldRef", fr)) {
        cJSON_Delete(e);
        cJSON_Delete(vf);
        return NULL;
    }
    if (wh_json_set_str(e, "name", name) || wh_json_set(e, "valueFrom", vf)) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

/* Append NAME=value unless unconditional is false and NAME is present. */
enum wh_err wh_kr_env_put(cJSON *env, const char *name, const char *value, bool always)
{
    if (!always && env_has(env, name))
        return WH_OK;
    cJSON *e = env_value(name, value);
    if (!e)
        return WH_ERR_NOMEM;
    return wh_json_add(env, e);
}

enum wh_err wh_kr_env_put_field(cJSON *env, const char *name, const char *path)
{
    cJSON *e = env_field(name, path);
    if (!e)
        return WH_ERR_NOMEM;
    return wh_json_add(env, e);
}

/* A Kubernetes quantity in whole units, rounded up, without the clamp of
 * wh_quantity_ceil (memory is reported in bytes). False when unparsable or
 * negative. */
bool wh_kr_quantity_units(const cJSON *v, double *out)
{
    if (cJSON_IsNumber(v)) {
        *out = ceil(v->valuedouble);
        return v->valuedouble >= 0 && isfinite(v->valuedouble);
    }
    double q;
    if (!cJSON_IsString(v) || !wh_quantity_parse(v->valuestring, &q) || !(q >= 0) || !isfinite(q))
        return false;
    *out = ceil(q - 1e-9);
    return true;
}
