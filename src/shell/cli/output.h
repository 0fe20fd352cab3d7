/* output.h: what a command that prints data prints, one way for all of them
 * (the -o of flags.h's WH_FLAGS_OUTPUT): JSON indented by two spaces, as
 * kubectl prints it, or YAML (wh_yaml_emit); either ends with a newline.
 * The document is borrowed; the text is appended to the caller's buffer.
 *
 * Admission answers are not printed here: `review` writes the
 * AdmissionReview exactly as the server sends it unless asked otherwise. */
#ifndef WH_OUTPUT_H
#define WH_OUTPUT_H

#include <cjson/cJSON.h>

#include "wh/buf.h" /* struct wh_buf */
#include "wh/err.h" /* enum wh_err */

/* doc as JSON, two-space indent, keys in the document's order; DEL, C1
 * controls and the characters that reorder text inside strings as \u
 * escapes (wh_term_json), since the values come from others. */
WH_NODISCARD enum wh_err wh_output_json(const cJSON *doc, struct wh_buf *out);

/* doc as format says, "json" or "yaml" (a -o value; anything else is
 * WH_ERR_INVALID). */
WH_NODISCARD enum wh_err wh_output_doc(const cJSON *doc, const char *format, struct wh_buf *out);

#endif /* WH_OUTPUT_H */
