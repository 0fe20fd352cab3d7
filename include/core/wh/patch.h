/* patch.h: writing the RFC 6902 JSON Patch of a mutation.
 *
 * The patch is text the decision owns (d->patch): each helper writes one
 * operation {"op":op,"path":path,"value":value} straight into it as compact
 * JSON, the bytes the answer carries (base64'd, no tree and no second
 * printing pass). After every operation the text is a whole document
 * ("[...]"), and its length is the exact size of the patch: an operation
 * that would take it past WH_PATCH_MAX_BYTES fails with WH_ERR_TOOBIG and
 * sets d->patch_need. Any failed operation (WH_ERR_TOOBIG, WH_ERR_NOMEM)
 * empties the patch: the caller denies or fails, never answers a part.
 *
 * Every operation is checked as it is written against the API server's name
 * rules (names.h: spec.hostname, spec.subdomain, label values, env var
 * names); the first offender's message goes into d->bad_name, and the
 * caller denies with it once the patch is complete.
 *
 * The env helpers implement "one entry per env name" (D5): a variable that
 * already has an entry is replaced in place, a new one is appended (the
 * first append to an empty env creates the array, as the reference does),
 * and an entry that already holds the wanted value yields no operation at
 * all (D6). Values are only read while the operation is written: the
 * caller keeps ownership of every argument. */
#ifndef WH_PATCH_H
#define WH_PATCH_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

struct wh_decision;

/* Append an operation whose value is the string value. */
WH_NODISCARD enum wh_err wh_patch_add_string(struct wh_decision *d, const char *op,
                                             const char *path, const char *value);
/* Append an operation whose value is the JSON value (such as the merged
 * affinity); value is borrowed. */
WH_NODISCARD enum wh_err wh_patch_add_json(struct wh_decision *d, const char *op, const char *path,
                                           const cJSON *value);
/* Writes one JSON value, compact, to b; arg is the writer's own. */
struct wh_buf;
typedef enum wh_err (*wh_patch_value_fn)(struct wh_buf *b, const void *arg);
/* Append an operation whose value write(b, arg) writes: a value the engine
 * builds as text without a tree (the slice's spec.affinity). Its names are
 * not looked at, so not for env, hostname, subdomain or label paths (those
 * are refused as not strings). arg is borrowed. */
WH_NODISCARD enum wh_err wh_patch_add_written(struct wh_decision *d, const char *op,
                                              const char *path, wh_patch_value_fn write,
                                              const void *arg);
/* Make room for about n bytes of patch at once (an estimate: the patch
 * still grows past it, and never past WH_PATCH_MAX_BYTES). */
WH_NODISCARD enum wh_err wh_patch_reserve(struct wh_decision *d, size_t n);

/* Escape a JSON Pointer reference token (~ -> ~0, / -> ~1) into out. */
void wh_pointer_escape(const char *token, char *out, size_t out_len);

/* A new env entry {name, value}, or with field_path set {name, valueFrom:
 * {fieldRef: {fieldPath}}}, as a tree for the offline tools; owned by the
 * caller (cJSON_Delete). NULL on OOM. */
cJSON *wh_env_entry(const char *name, const char *value, const char *field_path);

/* Env writer for one container of the original pod. */
struct wh_env_writer {
    struct wh_decision *d; /* whose patch gets the operations */
    int container;         /* index in spec.containers */
    const cJSON *env;      /* the container's env as sent (may be NULL) */
    bool initialised;      /* the env array has at least one entry */
};

void wh_env_writer_init(struct wh_env_writer *w, struct wh_decision *d, int container,
                        const cJSON *env);
/* Set name=value. */
WH_NODISCARD enum wh_err wh_env_set(struct wh_env_writer *w, const char *name, const char *value);
/* Set name from valueFrom.fieldRef.fieldPath. */
WH_NODISCARD enum wh_err wh_env_set_field_ref(struct wh_env_writer *w, const char *name,
                                              const char *field_path);

#endif
