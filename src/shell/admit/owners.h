/* owners.h: RayCluster uids as the API server states them, for the
 * worker-id claims (claims.c, docs/legacy-indices.md "Recreated clusters").
 * A pod's ownerReferences are written by whoever creates the pod, so the
 * uid it names is trusted only once the RayCluster it names is read and has
 * that uid. Confirmations are kept OWNERS_KEEP_MS; denials are not kept (a
 * cluster may be created a moment later). Thread-safe. */
#ifndef WH_OWNERS_H
#define WH_OWNERS_H

#include <stdbool.h> /* bool */

#include "wh/kube.h" /* struct wh_kube */

#define OWNERS_KEEP_MS 30000L

struct wh_owners;

/* NULL when out of memory. Freed with wh_owners_free (NULL-safe). */
struct wh_owners *wh_owners_new(void);
void wh_owners_free(struct wh_owners *o);

/* Whether RayCluster ns/cluster has metadata.uid uid: from what was kept,
 * else by one GET through kube (RBAC: get rayclusters.ray.io), waiting at
 * most timeout_ms. False when it has another, is gone, or cannot be read
 * (logged: claim_owner_unverified). ns, cluster and uid must be safe in a
 * path (claims.c checks them). Blocks on the network: claims only. */
bool wh_owners_confirm(struct wh_owners *o, struct wh_kube *kube, const char *ns,
                       const char *cluster, const char *uid, long timeout_ms);

#endif
