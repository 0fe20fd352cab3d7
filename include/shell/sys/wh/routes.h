/* routes.h: the routes the HTTPS server serves, in one table (shell only).
 *
 * Every rule about a route comes from wh_routes[]: the router (wh_route_find,
 * used by src/shell/http), the 405 answers (allow, method_hint), the 404
 * answer (wh_routes_not_found, which lists the table), the metrics' path
 * labels (src/shell/sys/metrics.c, which is why the table lives in sys, the
 * lowest room that needs it) and the engine route of an admission. The enum
 * only names the rows. Static data: nothing to free.
 */
#ifndef WH_ROUTES_H
#define WH_ROUTES_H

#include <stdbool.h> /* bool */

#include "wh/engine.h" /* enum wh_route */

/* The rows of wh_routes[], in the order /metrics lists them. Unknown paths
 * share WH_MPATH_OTHER (label "other") so that a scanner cannot grow the
 * metrics' label set. */
enum wh_mpath {
    WH_MPATH_MUTATE,
    WH_MPATH_VALIDATE,
    WH_MPATH_MUTATE_WORKLOAD,
    WH_MPATH_VALIDATE_WORKLOAD,
    WH_MPATH_ROOT,
    WH_MPATH_HEALTHZ,
    WH_MPATH_READYZ,
    WH_MPATH_METRICS,
    WH_MPATH_DEBUG_SLICES, /* off unless serve --debug-slices */
    WH_MPATH_OTHER,
    WH_MPATH__COUNT
};

struct wh_route_def {
    const char *path;        /* as requested, the query string removed; NULL: no path */
    const char *label;       /* the metrics' path label */
    const char *allow;       /* the methods served, as a 405's Allow header lists them */
    const char *method_hint; /* a 405's message */
    bool admission;          /* POST of an AdmissionReview through the pipeline */
    enum wh_route engine;    /* an admission's route in the engine */
};

extern const struct wh_route_def wh_routes[WH_MPATH__COUNT];

/* The row of a decoded path (exact match), WH_MPATH_OTHER if none. */
enum wh_mpath wh_route_find(const char *path);

/* Whether the row serves method (one of those its allow lists). */
bool wh_route_allows(enum wh_mpath p, const char *method);

/* The 404 message: the paths of the table, admissions first ("no such path;
 * the webhook serves POST /mutate, ... and /validate-workload, GET /, ...
 * and /metrics"). Static text, built once; thread-safe. */
const char *wh_routes_not_found(void);

#endif /* WH_ROUTES_H */
