/* patch.h: building the RFC 6902 JSON Patch of a mutation.
 *
 * Operations are appended to a cJSON array that the decision owns. The env
 * helpers implement "one entry per env name" (D5): a variable that already
 * has an entry is replaced in place, a new one is appended (the first append
 * to an empty env creates the array, as the reference does), and an entry
 * that already holds the wanted value yields no operation at all (D6). */
#ifndef WH_PATCH_H
#define WH_PATCH_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

struct wh_decision;

/* Append {"op":op,"path":path,"value":value} to d->patch (created on first
 * use) and count its size in d->patch_bytes. WH_ERR_TOOBIG, adding nothing,
 * when the patch would pass WH_PATCH_MAX_BYTES. Takes ownership of value in
 * all cases. */
WH_NODISCARD enum wh_err wh_patch_op(struct wh_decision *d, const char *op, const char *path,
                                     cJSON *value);

/* Escape a JSON Pointer reference token (~ -> ~0, / -> ~1) into out. */
void wh_pointer_escape(const char *token, char *out, size_t out_len);

/* Env writer for one container of the original pod. */
struct wh_env_writer {
    struct wh_decision *d; /* whose patch gets the operations */
    int container;         /* index in spec.containers */
    const cJSON *env;      /* the container's env as sent (may be NULL) */
    bool initialised;      /* the env array has at least one entry */
};

void wh_env_writer_init(struct wh_env_writer *w, struct wh_decision *d, int container,
                        const cJSON *env);
/* Set name=value (value copied). */
/* A new env entry {name, value}, or with field_path set {name, valueFrom:
 * {fieldRef: {fieldPath}}}; owned by the caller (cJSON_Delete). NULL on OOM. */
cJSON *wh_env_entry(const char *name, const char *value, const char *field_path);
WH_NODISCARD enum wh_err wh_env_set(struct wh_env_writer *w, const char *name, const char *value);
/* Set name=value without a copy of value, which must live as long as the
 * decision's patch (text the decision keeps: wh_decision_keep). For the
 * address lists the TPU containers of a pod share, 100+ KB each at 256
 * hosts. */
WH_NODISCARD enum wh_err wh_env_set_shared(struct wh_env_writer *w, const char *name,
                                           const char *value);
/* Set name from valueFrom.fieldRef.fieldPath. */
WH_NODISCARD enum wh_err wh_env_set_field_ref(struct wh_env_writer *w, const char *name,
                                              const char *field_path);

#endif
