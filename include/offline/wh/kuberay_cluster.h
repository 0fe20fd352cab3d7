/* kuberay_cluster.h: what every worker pod of one RayCluster shares (its
 * name, namespace, head service, GCS port, the feature switches read from its
 * annotations and spec), and KubeRay's naming rules (docs/kuberay-pods.md).
 *
 * Ownership: struct wh_kr_cluster borrows the cluster, the options and the
 * error buffer it was initialised with (they must outlive it); it owns
 * nothing and needs no cleanup. */
#ifndef WH_KUBERAY_CLUSTER_H
#define WH_KUBERAY_CLUSTER_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h"          /* enum wh_err */
#include "wh/kuberay_opts.h" /* struct wh_kuberay_opts */

struct wh_kr_cluster {
    const cJSON *cluster;               /* the RayCluster (borrowed) */
    const struct wh_kuberay_opts *opts; /* the operator's version and options */
    const char *name;                   /* metadata.name, never empty */
    const char *ns;                     /* metadata.namespace, "default" when absent */
    char head_svc[256];                 /* the head service's name */
    char fqdn[512];                     /* head_svc.ns.svc.<cluster domain> */
    char port[32];                      /* the GCS port (rayStartParams.port, 6379) */
    bool from_rayservice;               /* labelled as made for a RayService */
    bool overwrite_cmd;                 /* ray.io/overwrite-container-cmd: true */
    bool ft;                            /* GCS fault tolerance on */
    bool autoscaler_v2;                 /* in-tree autoscaler, version v2 */
    bool token_auth;                    /* authOptions.mode: token */
    bool new_ray;                       /* rayVersion >= 2.53.0 */
    char *errbuf;                       /* where messages go (borrowed) */
};

/* Read the cluster-level facts of cluster. WH_ERR_INVALID (in errbuf) when
 * it has no metadata.name or no spec. */
WH_NODISCARD enum wh_err wh_kr_cluster_init(struct wh_kr_cluster *c, const cJSON *cluster,
                                            const struct wh_kuberay_opts *opts, char *errbuf);
/* The operator is at least major.minor. */
bool wh_kr_at_least(const struct wh_kuberay_opts *o, int major, int minor);
/* Five characters from KubeRay's name alphabet, derived from text and salt
 * (FNV-1a) where KubeRay picks them at random. */
void wh_kr_invent_suffix(const char *text, long salt, char out[6]);
/* KubeRay's CheckName: keep the last 50 bytes, then a leading digit or
 * punctuation becomes 'r'. */
void wh_kr_check_name(const char *in, char *out, size_t len);
/* A decimal int at *p (leading blanks and a sign allowed); moves *p past
 * it. False, *p unchanged, without digits or beyond int. */
bool wh_kr_take_int(const char **p, int *out);

#endif /* WH_KUBERAY_CLUSTER_H */
