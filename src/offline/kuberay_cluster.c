/* kuberay_cluster.c: what every pod of one RayCluster shares (see
 * kuberay_cluster.h), and KubeRay's naming rules. */
#include "wh/kuberay_cluster.h"

#include <ctype.h>   /* ispunct, isdigit */
#include <errno.h>   /* errno, ERANGE */
#include <limits.h>  /* INT_MIN, INT_MAX */
#include <stdint.h>  /* uint32_t */
#include <stdio.h>   /* snprintf */
#include <stdlib.h>  /* strtol */
#include <string.h>  /* strcmp, strlen, memset */
#include <strings.h> /* strcasecmp */

#include "wh/json.h"         /* wh_json_* */
#include "wh/kinds.h"        /* wh_kinds, WH_KIND_ORIGIN_LABEL */
#include "wh/kuberay_json.h" /* wh_kr_scalar_text */

static const char name_alphabet[] = "bcdfghjklmnpqrstvwxz2456789";

bool wh_kr_at_least(const struct wh_kuberay_opts *o, int major, int minor)
{
    return o->major > major || (o->major == major && o->minor >= minor);
}

/* Five characters from KubeRay's alphabet, derived from text (FNV-1a). */
void wh_kr_invent_suffix(const char *text, long salt, char out[6])
{
    uint32_t h = 2166136261u;
    for (const char *p = text; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ (uint32_t)salt) * 16777619u;
    for (int i = 0; i < 5; i++) {
        out[i] = name_alphabet[h % (sizeof(name_alphabet) - 1)];
        h = h / (sizeof(name_alphabet) - 1) + (uint32_t)(i + 1) * 2654435761u;
    }
    out[5] = '\0';
}

/* KubeRay's CheckName: keep the last 50 bytes, then a leading digit or
 * punctuation becomes 'r'. */
void wh_kr_check_name(const char *in, char *out, size_t len)
{
    size_t n = strlen(in);
    const char *s = n > 50 ? in + (n - 50) : in;
    snprintf(out, len, "%s", s);
    if (isdigit((unsigned char)out[0]))
        out[0] = 'r';
    if (ispunct((unsigned char)out[0]))
        out[0] = 'r';
}

/* A decimal int at *p (leading blanks and a sign allowed, as scanf's %d);
 * moves *p past it. False, *p unchanged, without digits or beyond int. */
bool wh_kr_take_int(const char **p, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (end == *p || errno == ERANGE || v < INT_MIN || v > INT_MAX)
        return false;
    *out = (int)v;
    *p = end;
    return true;
}

/* "X.Y" or "X.Y.Z..." (Z 0 when missing) and at least a.b.c. */
static bool ray_version_at_least(const char *v, int a, int b, int c)
{
    int x = 0, y = 0, z = 0;
    const char *p = v;
    if (!p || !wh_kr_take_int(&p, &x) || *p != '.')
        return false;
    p++;
    if (!wh_kr_take_int(&p, &y))
        return false;
    if (*p == '.') {
        p++;
        (void)wh_kr_take_int(&p, &z);
    }
    return x != a ? x > a : y != b ? y > b : z >= c;
}

enum wh_err wh_kr_cluster_init(struct wh_kr_cluster *c, const cJSON *cluster,
                               const struct wh_kuberay_opts *opts, char *errbuf)
{
    memset(c, 0, sizeof(*c));
    c->cluster = cluster;
    c->opts = opts;
    c->errbuf = errbuf;
    const cJSON *meta = wh_json_get(cluster, "metadata");
    c->name = wh_json_str(meta, "name");
    if (!c->name || !c->name[0])
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "RayCluster has neither metadata.name nor metadata.generateName, which the API "
                       "server refuses; give it one");
    c->ns = wh_json_str(meta, "namespace");
    if (!c->ns || !c->ns[0])
        c->ns = "default";
    const cJSON *spec = wh_json_get(cluster, "spec");
    if (!cJSON_IsObject(spec))
        return wh_fail(errbuf, WH_ERR_INVALID, "RayCluster %s has no spec", c->name);
    const cJSON *head = wh_json_get(spec, "headGroupSpec");
    const char *svc = wh_json_str(wh_json_path(head, "headService", "metadata", NULL), "name");
    if (svc && svc[0])
        snprintf(c->head_svc, sizeof(c->head_svc), "%s", svc);
    else
        snprintf(c->head_svc, sizeof(c->head_svc), "%s-head-svc", c->name);
    char num[32];
    const cJSON *port = wh_json_path(head, "rayStartParams", "port", NULL);
    const char *p = port ? wh_kr_scalar_text(port, num, sizeof(num)) : "";
    snprintf(c->port, sizeof(c->port), "%s", p[0] ? p : "6379");
    snprintf(c->fqdn, sizeof(c->fqdn), "%s.%s.svc.%s", c->head_svc, c->ns,
             opts->cluster_domain ? opts->cluster_domain : "cluster.local");
    const cJSON *labels = wh_json_get(meta, "labels");
    c->from_rayservice = !strcmp(wh_json_str0(labels, WH_KIND_ORIGIN_LABEL),
                                 wh_kinds[WH_ROW_RAYSERVICE].kind);
    const cJSON *ann = wh_json_get(meta, "annotations");
    c->overwrite_cmd = !strcasecmp(wh_json_str0(ann, "ray.io/overwrite-container-cmd"), "true");
    c->ft = !strcasecmp(wh_json_str0(ann, "ray.io/ft-enabled"), "true") ||
            wh_json_has(spec, "gcsFaultToleranceOptions");
    c->autoscaler_v2 = cJSON_IsTrue(wh_json_get(spec, "enableInTreeAutoscaling")) &&
                       !strcmp(wh_json_str0(wh_json_get(spec, "autoscalerOptions"), "version"),
                               "v2");
    c->token_auth = !strcmp(wh_json_str0(wh_json_get(spec, "authOptions"), "mode"), "token");
    c->new_ray = ray_version_at_least(wh_json_str(spec, "rayVersion"), 2, 53, 0);
    return WH_OK;
}
