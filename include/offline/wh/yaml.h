/* yaml.h: YAML (or JSON) text to cJSON with Kubernetes semantics (yaml_emit.h
 * writes cJSON back as YAML).
 *
 * Loading follows what kubectl does with a manifest (sigs.k8s.io/yaml, i.e.
 * go-yaml v2 resolution, then JSON):
 *   - quoted scalars, block scalars (| >) and !!str stay strings ("4" vs 4);
 *   - plain scalars resolve YAML 1.1-style: null/Null/NULL/~/empty -> null;
 *     true/false and y/yes/on, n/no/off in the cases go-yaml v2 accepts
 *     (y Y yes Yes YES on On ON, n N no No NO off Off OFF) -> booleans;
 *     integers in Go's base-0 syntax (0x1f, 0o17, 017 octal, 0b101, + and
 *     - signs, '_' ignored) and floats ([-+](.d|d[.d])[e[-+]d]) -> numbers;
 *     timestamps and everything else -> strings. .inf/.nan are refused
 *     (JSON cannot hold them), as json.Marshal refuses them;
 *   - non-string mapping keys are turned into strings the way sigs.k8s.io/yaml
 *     does (yes: -> "true", 1: -> "1"); a null or collection key is an error;
 *   - a duplicate key in one mapping is an ERROR (deliberate: kubectl keeps
 *     the last one silently, which hides manifest bugs);
 *   - anchors, aliases and merge keys (<<) work; explicit keys win over
 *     merged ones, earlier merge sources over later ones.
 * The nodes of all documents of the stream together, alias expansions and
 * empty documents included, count against WH_YAML_MAX_NODES, so an alias
 * bomb (billion laughs) fails cleanly before it allocates; nesting is capped
 * at WH_YAML_MAX_DEPTH. Errors name the line and column (1-based).
 *
 * Input whose first non-blank byte is '{' or '[' is tried as JSON first
 * (cJSON, fast); if that fails it is parsed as YAML, which gives a located
 * error.
 */
#ifndef WH_YAML_H
#define WH_YAML_H

#include <stddef.h> /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

/* Largest input accepted (the API server takes objects up to 3 MiB; a file
 * may hold many). */
#define WH_YAML_MAX_BYTES ((size_t)16 * 1024 * 1024)
/* Nodes a whole stream may expand to (aliases included). */
#define WH_YAML_MAX_NODES 1000000L
/* Deepest nesting of collections. */
#define WH_YAML_MAX_DEPTH 128

/* Parse a stream of one or more documents. On success *docs is a new JSON
 * array (caller frees with cJSON_Delete) holding every document that is not
 * empty (null documents are skipped, as kubectl does). When lines is not
 * NULL, *lines is a malloc'd array (caller frees) with the 1-based line
 * where each kept document starts (NULL when there are none). Errors:
 * WH_ERR_TOOBIG (size, node or depth limit), WH_ERR_INVALID (syntax,
 * duplicate key, bad alias, unrepresentable value), WH_ERR_NOMEM; errbuf
 * says what and where. */
WH_NODISCARD enum wh_err wh_yaml_load(const char *text, size_t len, cJSON **docs, unsigned **lines,
                                      char *errbuf);

/* Where a load failed: 1-based line and column, 0 when the error has no
 * place (a size limit, out of memory). */
struct wh_yaml_pos {
    unsigned line, column;
};

/* wh_yaml_load that also says where the error is (where may be NULL; it is
 * zeroed on success). */
WH_NODISCARD enum wh_err wh_yaml_load_at(const char *text, size_t len, cJSON **docs,
                                         unsigned **lines, struct wh_yaml_pos *where, char *errbuf);

/* Parse a stream that must hold exactly one non-empty document. *doc is the
 * caller's (cJSON_Delete). WH_ERR_INVALID when there are none or several. */
WH_NODISCARD enum wh_err wh_yaml_load_one(const char *text, size_t len, cJSON **doc, char *errbuf);

#endif /* WH_YAML_H */
