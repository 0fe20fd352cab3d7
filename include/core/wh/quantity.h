/* quantity.h: Kubernetes resource quantities, as whole units rounded up. */
#ifndef WH_QUANTITY_H
#define WH_QUANTITY_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

/* Largest quantity we report; anything above is clamped (no TPU pod asks for
 * more chips than this). */
#define WH_QUANTITY_MAX 1000000000L

/* Parse a quantity given as a JSON string ("4", "500m", "1k", "2Ki", "1e3")
 * or a JSON number, rounded up to a whole unit and clamped to
 * [0, WH_QUANTITY_MAX]. False when v is neither or does not parse. */
bool wh_quantity_ceil(const cJSON *v, long *out);
/* The same for a C string. */
bool wh_quantity_ceil_str(const char *s, long *out);
/* The value of a quantity string, sign included, neither rounded nor
 * clamped (memory in bytes, for example). False when s does not parse. */
bool wh_quantity_parse(const char *s, double *out);

#endif
