/* jsonpatch.h: apply an RFC 6902 JSON Patch to a cJSON document.
 *
 * Used by `render` (to show the mutated pod) and by the tests (every patch
 * the engine produces must apply to the object it came from). All-or-nothing:
 * the patch is applied to a copy and swapped in only when every operation
 * succeeded, so a failed patch leaves *doc untouched.
 */
#ifndef WH_JSONPATCH_H
#define WH_JSONPATCH_H

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

/* Apply patch (a JSON array of operations) to *doc. On success *doc is
 * replaced by the patched document (the old tree is deleted; the caller owns
 * the new one). WH_ERR_INVALID with the failing operation's index, op and
 * path in errbuf otherwise. The patch stays the caller's. */
WH_NODISCARD enum wh_err wh_jsonpatch_apply(cJSON **doc, const cJSON *patch, char *errbuf);

#endif
