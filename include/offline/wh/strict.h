/* strict.h: unknown fields and unknown kinds, as kubeconform -strict reports
 * them (`check --strict`, docs/cli.md).
 *
 * The field sets are a table generated from the OpenAPI schemas of the core
 * API and of the KubeRay, JobSet and LWS CRDs (scripts/strict-schemas.py,
 * tests/fixtures/schemas/SOURCES.md): wh_strict_kinds names every kind of
 * the known groups, and for the kinds check understands (Pod, Job, JobSet,
 * LeaderWorkerSet, RayCluster, RayJob, RayService) the root node of its
 * schema. A node is a closed object (its fields, sorted by name, each with
 * the node of its value, plus optionally the node every other key's value
 * has), an array (the node of its items), a map (the node of its values),
 * a scalar, or open (anything goes: x-kubernetes-preserve-unknown-fields,
 * a free-form object).
 *
 * The walk over a parsed object visits each of its values once, with a
 * binary search per key: linear in the object's size (times log of the
 * widest object's field count). A suggestion (the nearest known name by
 * edit distance) is looked for only for an unknown key, among its object's
 * fields, for keys up to WH_STRICT_SUGGEST_MAX bytes.
 */
#ifndef WH_STRICT_H
#define WH_STRICT_H

#include <stddef.h> /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err, WH_NODISCARD */

enum wh_strict_node_kind {
    WH_SN_SCALAR, /* a value with no keys to check */
    WH_SN_OPEN,   /* any keys, not checked below */
    WH_SN_OBJECT, /* fields [first, first + n); rest: the node of other keys, -1: unknown */
    WH_SN_ARRAY,  /* child: the node of each item */
    WH_SN_MAP,    /* child: the node of each value */
};

struct wh_strict_node {
    enum wh_strict_node_kind kind;
    int first, n;
    int child, rest; /* -1 when none */
};

struct wh_strict_field {
    const char *name;
    int node;
};

struct wh_strict_kind {
    const char *api_version; /* "v1", "batch/v1", "ray.io/v1", ... */
    const char *kind;
    int root; /* the node of the whole object; -1: a known kind whose fields are not checked */
};

/* The generated table (src/offline/strict_fields.c); kinds sorted by
 * apiVersion, then kind. */
extern const struct wh_strict_node wh_strict_nodes[];
extern const size_t wh_strict_n_nodes;
extern const struct wh_strict_field wh_strict_fields[];
extern const struct wh_strict_kind wh_strict_kinds[];
extern const size_t wh_strict_n_kinds;
extern const char *const wh_strict_sources; /* "module@version, ..." */

/* Findings listed per object; past it, one line says how many more. */
#define WH_STRICT_MAX_FINDINGS 50
/* Longest unknown key a suggestion is looked for. */
#define WH_STRICT_SUGGEST_MAX 64

/* One finding: path is the field's full path ("spec.workerGroupSpecs[0]
 * .numOfHost", "kind", "apiVersion"); message is the whole sentence
 * ("spec.x: unknown field; did you mean y?"); suggestion is the nearest
 * known name or NULL. All borrowed for the call only. A non-OK return
 * stops the walk and is returned by wh_strict_object. */
typedef enum wh_err (*wh_strict_sink)(void *ctx, const char *path, const char *message,
                                      const char *suggestion);

enum wh_strict_verdict {
    WH_STRICT_OTHER_GROUP, /* a group check knows nothing of: not judged */
    WH_STRICT_KNOWN,       /* a known kind whose fields are not checked (Service, ...) */
    WH_STRICT_CHECKED,     /* a known kind, its fields walked */
    WH_STRICT_UNKNOWN,     /* an unknown kind or version in a known group: reported */
};

/* Judge one object (a document with string apiVersion and kind): report
 * every unknown field (WH_STRICT_MAX_FINDINGS at most, then one "and N more"
 * finding) or its unknown kind through sink. *verdict (may be NULL) says
 * which case it was. Errors: what sink returns, WH_ERR_NOMEM. */
WH_NODISCARD enum wh_err wh_strict_object(const cJSON *obj, wh_strict_sink sink, void *ctx,
                                          enum wh_strict_verdict *verdict);

#endif /* WH_STRICT_H */
