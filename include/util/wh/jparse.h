/* jparse.h: RFC 8259 JSON text into a cJSON tree, in one pass.
 *
 * The tree is the one cJSON_ParseWithLengthOpts builds for the same valid
 * JSON (types, valueint saturated to int, valuedouble correctly rounded,
 * keys in document order with duplicates kept, child->prev at the last
 * child; a string with "\u0000" ends there as a C string), so any code that
 * reads, edits or deletes cJSON trees works on it unchanged. It refuses text
 * that is not RFC 8259 JSON where cJSON takes some (leading zeros, "1.", raw
 * control characters in strings, white space other than RFC 8259's):
 * docs/internals/json-parser.md lists the differences.
 *
 * Memory: every node and string comes from wh_malloc (mem.h), the heap
 * cJSON's hooks use, so cJSON_Delete frees the tree. When that memory is
 * released in bulk (wh_mem_bulk: the server's request arena), nodes and
 * strings are carved out of a few larger blocks instead, which mem.h's
 * bulk contract allows.
 */
#ifndef WH_JPARSE_H
#define WH_JPARSE_H

#include <stddef.h> /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

/* Parse the one JSON value in text[0..len) (not necessarily NUL-terminated;
 * an optional UTF-8 byte order mark before it, white space and NUL bytes
 * after it). WH_OK: *out is the tree, the caller's to cJSON_Delete.
 * WH_ERR_INVALID: not JSON, *at is the offset of the first byte that is
 * wrong; a value followed by more than white space is WH_ERR_INVALID with
 * *trailing set. WH_ERR_NOMEM. On any error *out is NULL and nothing is
 * left to free. */
WH_NODISCARD enum wh_err wh_jparse(const char *text, size_t len, cJSON **out, size_t *at,
                                   int *trailing);

#endif /* WH_JPARSE_H */
