/* yaml_emit.h: cJSON back to YAML, in the form wh_yaml_load (yaml.h) reads
 * as the same JSON value. The item is borrowed; the text is appended to the
 * caller's buffer, which the caller frees. */
#ifndef WH_YAML_EMIT_H
#define WH_YAML_EMIT_H

#include <cjson/cJSON.h>

#include "wh/buf.h" /* struct wh_buf */
#include "wh/err.h" /* enum wh_err */

/* Append item as a YAML document (block style, two-space indent, no leading
 * "---") to out. Strings that would load back as anything but the same
 * string are double-quoted; multi-line strings use literal blocks. Loading
 * the output with wh_yaml_load gives back an equal JSON value. */
WH_NODISCARD enum wh_err wh_yaml_emit(const cJSON *item, struct wh_buf *out);

#endif /* WH_YAML_EMIT_H */
