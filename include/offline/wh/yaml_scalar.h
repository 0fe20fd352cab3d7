/* yaml_scalar.h: what a plain (unquoted) YAML scalar resolves to, with the
 * rules yaml.h describes (go-yaml v2, as kubectl reads a manifest). The
 * loader (yaml.c) types scalars with it; the emitter (yaml_emit.c) quotes a
 * string that would not load back as itself. Pure; nothing is allocated, the
 * caller owns every buffer. */
#ifndef WH_YAML_SCALAR_H
#define WH_YAML_SCALAR_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

enum wh_yaml_sval {
    WH_YAML_STR,      /* a string */
    WH_YAML_NULL,     /* null, Null, NULL, ~ or empty */
    WH_YAML_BOOL,     /* *b set */
    WH_YAML_NUM,      /* *num set (a finite integer or float) */
    WH_YAML_NONFINITE /* .inf, .nan and their spellings: JSON cannot hold them */
};

/* The type of the plain scalar s (n bytes, NUL-terminated); *num or *b
 * receive the value of a number or a boolean. */
enum wh_yaml_sval wh_yaml_resolve_plain(const char *s, size_t n, double *num, bool *b);

/* The shortest %g text that reads back as d (as Go's FormatFloat(d, 'g', -1)
 * picks): 0.1, not 0.10000000000000001 or %g's 6-digit rounding. */
void wh_yaml_shortest_double(double d, char out[32]);

#endif /* WH_YAML_SCALAR_H */
