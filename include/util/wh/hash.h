/* hash.h: FNV-1a over strings, for the hash tables of the shell (cache,
 * ledger). Pure. */
#ifndef WH_HASH_H
#define WH_HASH_H

#include <stdint.h> /* uint32_t */

#define WH_HASH_INIT 2166136261u

/* Fold string s into hash h, followed by a separator, so that chaining
 * ("ab","c") and ("a","bc") give different hashes. */
uint32_t wh_hash_str(uint32_t h, const char *s);

#endif
