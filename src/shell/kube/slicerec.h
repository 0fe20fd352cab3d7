/* slicerec.h: the compact record the pod store keeps of a TPU pod for the
 * live slice check (docs/internals/threads.md, "slice check").
 *
 * Only what the doctor's slice rules read (wh/doctor.h), drift excepted:
 * name, namespace, deletion; the labels and annotations of the controllers
 * and of GKE (keys under ray.io/, jobset.sigs.k8s.io/,
 * leaderworkerset.sigs.k8s.io/, batch.kubernetes.io/, cloud.google.com/,
 * tpu-webhook/, and app.kubernetes.io/created-by, replicaIndex); spec
 * nodeName, hostname, subdomain, hostNetwork, dnsPolicy and nodeSelector;
 * each container's name, and for the TPU containers their google.com/tpu
 * requests and limits and their env entries named TPU_*, MEGASCALE_*,
 * TORCH_* or PET_*; status.phase. Every string is interned in the store's
 * table (the hostnames lists and labels of a slice are one copy), so a pod
 * costs about one struct wh_sfield per field plus what is its own
 * (name, hostname, node). Pods without a TPU container get no record.
 *
 * Not thread-safe: the store calls it under its lock, except
 * wh_slicerec_collect(), which only reads the object.
 */
#ifndef WH_SLICEREC_H
#define WH_SLICEREC_H

#include <stddef.h> /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */
#include "htab.h"   /* struct wh_htab */

struct wh_sfield {
    const char *k, *v;   /* interned; v NULL: an env entry without a value */
    unsigned short c;    /* container index (container, env, resource fields) */
    unsigned char where; /* enum in slicerec.c */
};

/* Fields pointing into the object, before interning (outside the lock).
 * Owned by the caller: free with wh_slicerec_tmp_free(). */
struct wh_slicerec_tmp {
    struct wh_sfield *f; /* strings borrowed from the object or owned (res) */
    size_t n, cap;
    char **owned; /* printed resource quantities */
    size_t n_owned;
};

/* Collect pod's fields into tmp (emptied first). WH_ERR_NOMEM only. */
WH_NODISCARD enum wh_err wh_slicerec_collect(const cJSON *pod, struct wh_slicerec_tmp *tmp);
void wh_slicerec_tmp_free(struct wh_slicerec_tmp *tmp);

/* Intern tmp's fields into a new array (*out, *n; the caller's, released
 * with wh_slicerec_release). WH_ERR_NOMEM: nothing kept. */
WH_NODISCARD enum wh_err wh_slicerec_intern(struct wh_htab *strings,
                                            const struct wh_slicerec_tmp *tmp,
                                            struct wh_sfield **out, unsigned short *n);
/* Drop the references of a record and free it. NULL-safe. */
void wh_slicerec_release(struct wh_htab *strings, struct wh_sfield *f, unsigned short n);

/* The pod the record describes, as a Pod object doctor reads (the
 * caller's); NULL on OOM. */
cJSON *wh_slicerec_pod(const char *ns, const char *name, int deleting, const struct wh_sfield *f,
                       unsigned short n);

#endif /* WH_SLICEREC_H */
