/* kuberay_json.h: the JSON edits the KubeRay pod builder (kuberay.c,
 * kuberay_spec.c) repeats: replace-or-add, a child created on demand, Go's
 * sorted map order, environment entries, quantities in whole units.
 *
 * Ownership: wh_kr_put takes item (freed on failure too); every other
 * function borrows its arguments and adds new nodes to the object it is
 * given, which owns them. */
#ifndef WH_KUBERAY_JSON_H
#define WH_KUBERAY_JSON_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

/* Replace or add obj[key]; takes ownership of item (NULL item: NOMEM). */
WH_NODISCARD enum wh_err wh_kr_put(cJSON *obj, const char *key, cJSON *item);
/* wh_kr_put of a new string. */
WH_NODISCARD enum wh_err wh_kr_put_str(cJSON *obj, const char *key, const char *value);
/* obj[key] as an object (array: an array), created when absent or of
 * another type; NULL when out of memory. Owned by obj. */
cJSON *wh_kr_child(cJSON *obj, const char *key, bool array);
/* A scalar as text ("" for anything else); numbers are written into buf. */
const char *wh_kr_scalar_text(const cJSON *v, char *buf, size_t len);
/* Sort an object's members by key, as Go prints its maps. */
WH_NODISCARD enum wh_err wh_kr_sort_object(cJSON *obj);
/* Append {name, value} to the env array unless always is false and name is
 * already there. */
WH_NODISCARD enum wh_err wh_kr_env_put(cJSON *env, const char *name, const char *value, bool always);
/* Append {name, valueFrom.fieldRef.fieldPath: path} to the env array. */
WH_NODISCARD enum wh_err wh_kr_env_put_field(cJSON *env, const char *name, const char *path);
/* A Kubernetes quantity in whole units, rounded up, without the clamp of
 * wh_quantity_ceil (memory is reported in bytes). False when unparsable. */
bool wh_kr_quantity_units(const cJSON *v, double *out);

#endif /* WH_KUBERAY_JSON_H */
