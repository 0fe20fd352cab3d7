/* routes.c: the routes the HTTPS server serves (see wh/routes.h). */
#include "wh/routes.h"

#include <pthread.h> /* pthread_once */
#include <stdio.h>   /* snprintf */
#include <string.h>  /* strchr, strcmp, strlen, strncmp */

#define ADMISSION(p, r)                                                                        \
    {                                                                                          \
        .path = p, .label = p, .allow = "POST",                                                \
        .method_hint = "use POST with an AdmissionReview body", .admission = true, .engine = r \
    }
#define GET(p)                                                                                     \
    {                                                                                              \
        .path = p, .label = p, .allow = "GET, HEAD", .method_hint = "use GET", .admission = false, \
        .engine = WH_ROUTE_ANY                                                                     \
    }

const struct wh_route_def wh_routes[WH_MPATH__COUNT] = {
    [WH_MPATH_MUTATE] = ADMISSION("/mutate", WH_ROUTE_MUTATE),
    [WH_MPATH_VALIDATE] = ADMISSION("/validate", WH_ROUTE_VALIDATE),
    [WH_MPATH_MUTATE_WORKLOAD] = ADMISSION("/mutate-workload", WH_ROUTE_MUTATE_WORKLOAD),
    [WH_MPATH_VALIDATE_WORKLOAD] = ADMISSION("/validate-workload", WH_ROUTE_VALIDATE_WORKLOAD),
    [WH_MPATH_ROOT] = GET("/"),
    [WH_MPATH_HEALTHZ] = GET("/healthz"),
    [WH_MPATH_READYZ] = GET("/readyz"),
    [WH_MPATH_METRICS] = GET("/metrics"),
    [WH_MPATH_DEBUG_SLICES] = GET("/debug/slices"),
    [WH_MPATH_OTHER] = {.path = NULL, .label = "other", .allow = "", .method_hint = ""},
};

enum wh_mpath wh_route_find(const char *path)
{
    for (size_t i = 0; i < WH_MPATH__COUNT; i++)
        if (wh_routes[i].path && !strcmp(path, wh_routes[i].path))
            return (enum wh_mpath)i;
    return WH_MPATH_OTHER;
}

bool wh_route_allows(enum wh_mpath p, const char *method)
{
    if ((unsigned)p >= WH_MPATH__COUNT)
        return false;
    size_t n = strlen(method);
    for (const char *a = wh_routes[p].allow; *a;) {
        const char *end = strchr(a, ',');
        size_t len = end ? (size_t)(end - a) : strlen(a);
        if (len == n && !strncmp(a, method, n))
            return true;
        a += len;
        while (*a == ',' || *a == ' ')
            a++;
    }
    return false;
}

static char not_found[512];
static pthread_once_t not_found_once = PTHREAD_ONCE_INIT;

/* The paths of the admission rows (or of the others) as "A, B and C". */
static size_t list(char *out, size_t cap, bool admission)
{
    size_t n = 0, total = 0, seen = 0;
    for (size_t i = 0; i < WH_MPATH__COUNT; i++)
        total += wh_routes[i].path && wh_routes[i].admission == admission;
    for (size_t i = 0; i < WH_MPATH__COUNT && n < cap; i++) {
        if (!wh_routes[i].path || wh_routes[i].admission != admission)
            continue;
        const char *sep = !seen ? "" : seen + 1 == total ? " and " : ", ";
        int w = snprintf(out + n, cap - n, "%s%s", sep, wh_routes[i].path);
        n += w > 0 ? (size_t)w : 0;
        seen++;
    }
    return n < cap ? n : cap - 1;
}

static void build_not_found(void)
{
    char post[200], get[200];
    list(post, sizeof(post), true);
    list(get, sizeof(get), false);
    snprintf(not_found, sizeof(not_found), "no such path; the webhook serves POST %s, GET %s", post,
             get);
}

const char *wh_routes_not_found(void)
{
    pthread_once(&not_found_once, build_not_found);
    return not_found;
}
