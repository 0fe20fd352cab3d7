/* json.h: small helpers over cJSON that encode our rules for it.
 *
 * Only case-sensitive lookups (Kubernetes field names are case-sensitive).
 * Every getter returns a BORROWED pointer, valid until the tree is changed or
 * deleted. The wh_json_add_* helpers take ownership of the item they are
 * given in every case: on failure they delete it, so callers never leak.
 */
#ifndef WH_JSON_H
#define WH_JSON_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

/* Child of an object by exact key, or NULL (also when obj is not an object). */
const cJSON *wh_json_get(const cJSON *obj, const char *key);
/* Walk a path of keys: wh_json_path(pod, "spec", "nodeSelector", NULL). */
const cJSON *wh_json_path(const cJSON *obj, ...);
/* String value of obj[key], or NULL when absent or not a string. */
const char *wh_json_str(const cJSON *obj, const char *key);
/* Like wh_json_str but "" instead of NULL. */
const char *wh_json_str0(const cJSON *obj, const char *key);
/* True when obj[key] exists (any type, null included). */
bool wh_json_has(const cJSON *obj, const char *key);

/* Add item to an array / object; takes ownership of item in all cases. */
WH_NODISCARD enum wh_err wh_json_add(cJSON *array, cJSON *item);
WH_NODISCARD enum wh_err wh_json_set(cJSON *obj, const char *key, cJSON *item);
/* Convenience: set a string member (copied). */
WH_NODISCARD enum wh_err wh_json_set_str(cJSON *obj, const char *key, const char *value);
/* wh_json_set / wh_json_set_str for a key that is a string literal: the
 * tree points at the key instead of copying it (cJSON's StringIsConst). */
WH_NODISCARD enum wh_err wh_json_set_lit(cJSON *obj, const char *key, cJSON *item);
WH_NODISCARD enum wh_err wh_json_set_str_lit(cJSON *obj, const char *key, const char *value);

/* cJSON_Delete(item), unless item lives in memory released as a whole
 * (wh_mem_bulk, mem.h: the server's request arena), where walking the tree
 * to free it node by node would only cost time. Only for a tree built in
 * one piece, under one binding (a decision's warnings), never for a tree that
 * outlives the request. NULL-safe. */
void wh_json_delete(cJSON *item);

/* Parse len bytes (not necessarily NUL-terminated) with wh_jparse (jparse.h:
 * the tree cJSON would build, faster). Caller owns the result (cJSON_Delete).
 * WH_ERR_INVALID for an empty text, text that is not JSON (errbuf: "not valid
 * JSON (syntax error near byte N)") and a value followed by more than white
 * space or NULs ("trailing data after JSON value at byte N"); WH_ERR_NOMEM. */
WH_NODISCARD enum wh_err wh_json_parse(const char *text, size_t len, cJSON **out, char *errbuf);

/* Replace, in every string and key under item, each byte that is not part
 * of a UTF-8 character by U+FFFD, as Go's encoding/json decodes them: the
 * engine then sees the strings the API server would, and what it copies into
 * a patch is what the object holds. WH_ERR_NOMEM (the tree stays valid). */
WH_NODISCARD enum wh_err wh_json_repair_utf8(cJSON *item);

/* Print unformatted; malloc'd text the caller frees with cJSON_free. */
WH_NODISCARD enum wh_err wh_json_print(const cJSON *item, char **out);

/* Append item as compact JSON to b (the same text as cJSON_PrintUnformatted
 * for the values we build). Escapes runs with memcpy, so long strings such
 * as address lists cost little more than a copy. */
struct wh_buf;
WH_NODISCARD enum wh_err wh_json_write(struct wh_buf *b, const cJSON *item);
/* Append s as a quoted, escaped JSON string. */
WH_NODISCARD enum wh_err wh_json_write_string(struct wh_buf *b, const char *s);

/* A JSON number that is a whole number in [lo, hi] (each within +-2^53, so
 * exact in a double): *out gets it. False for anything else (not a number,
 * a fraction, out of range), and never casts a double that long cannot
 * hold (undefined behaviour). */
bool wh_json_whole(const cJSON *v, long lo, long hi, long *out);

/* Strict base-10 integer (optional leading '-' or '+', digits only, no
 * spaces, fits in long). */
bool wh_parse_long(const char *s, long *out);

#endif /* WH_JSON_H */
