/* owners.c: RayCluster uids confirmed by the API server (owners.h). */
#include "owners.h"

#include <pthread.h> /* pthread_mutex_t */
#include <stdio.h>   /* snprintf */
#include <stdlib.h>  /* calloc, free */
#include <string.h>  /* strcmp, strlen */

#include <cjson/cJSON.h>

#include "wh/buf.h"   /* wh_buf */
#include "wh/clock.h" /* wh_clock_ms */
#include "wh/log.h"   /* wh_log */

#define OWNERS_KEPT 64
#define FIELD_MAX 64
#define RESP_MAX ((size_t)4 * 1024 * 1024)

struct seen {
    char ns[FIELD_MAX], cluster[FIELD_MAX], uid[FIELD_MAX];
    long at_ms; /* 0: empty */
};

struct wh_owners {
    pthread_mutex_t mu;
    struct seen kept[OWNERS_KEPT]; /* the newest replaces the oldest */
};

struct wh_owners *wh_owners_new(void)
{
    struct wh_owners *o = calloc(1, sizeof(*o));
    if (o)
        pthread_mutex_init(&o->mu, NULL);
    return o;
}

void wh_owners_free(struct wh_owners *o)
{
    if (!o)
        return;
    pthread_mutex_destroy(&o->mu);
    free(o);
}

static bool kept(struct wh_owners *o, const char *ns, const char *cluster, const char *uid, long now)
{
    bool same = false;
    pthread_mutex_lock(&o->mu);
    for (int i = 0; i < OWNERS_KEPT && !same; i++) {
        const struct seen *s = &o->kept[i];
        same = s->at_ms && now - s->at_ms < OWNERS_KEEP_MS && !strcmp(s->ns, ns) &&
               !strcmp(s->cluster, cluster) && !strcmp(s->uid, uid);
    }
    pthread_mutex_unlock(&o->mu);
    return same;
}

static void keep(struct wh_owners *o, const char *ns, const char *cluster, const char *uid, long now)
{
    pthread_mutex_lock(&o->mu);
    struct seen *s = &o->kept[0];
    for (int i = 1; i < OWNERS_KEPT; i++)
        if (o->kept[i].at_ms < s->at_ms)
            s = &o->kept[i];
    snprintf(s->ns, sizeof(s->ns), "%s", ns);
    snprintf(s->cluster, sizeof(s->cluster), "%s", cluster);
    snprintf(s->uid, sizeof(s->uid), "%s", uid);
    s->at_ms = now ? now : 1;
    pthread_mutex_unlock(&o->mu);
}

bool wh_owners_confirm(struct wh_owners *o, struct wh_kube *kube, const char *ns,
                       const char *cluster, const char *uid, long timeout_ms)
{
    if (strlen(ns) >= FIELD_MAX || strlen(cluster) >= FIELD_MAX || strlen(uid) >= FIELD_MAX)
        return false; /* longer than Kubernetes allows: never a real one */
    long now = wh_clock_ms();
    if (kept(o, ns, cluster, uid, now))
        return true;
    if (timeout_ms <= 0)
        return false;
    char path[512], errbuf[WH_ERRBUF_LEN] = "";
    snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/%s/rayclusters/%s", ns, cluster);
    struct wh_buf resp;
    wh_buf_init(&resp, RESP_MAX);
    struct wh_kube_answer ans = {0};
    enum wh_err err = wh_kube_request(kube, "GET", path, NULL, 0, timeout_ms, &resp, &ans, errbuf);
    cJSON *j = !err && ans.status == 200
                   ? cJSON_ParseWithLength(wh_buf_ptr(&resp), wh_buf_len(&resp))
                   : NULL;
    wh_buf_free(&resp);
    const char *has = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "metadata"), "uid"));
    bool same = has && !strcmp(has, uid);
    if (same)
        keep(o, ns, cluster, uid, now);
    else
        wh_log(WH_LOG_WARN, "claim_owner_unverified", "namespace", WH_F_STR, ns, "cluster",
               WH_F_STR, cluster, "cluster_uid", WH_F_STR, uid, "status", WH_F_INT,
               (long long)(err ? 0 : ans.status), "error", WH_F_STR,
               err    ? errbuf
               : !has ? "the RayCluster could not be read"
                      : "the RayCluster has another uid",
               (char *)NULL);
    cJSON_Delete(j);
    return same;
}
