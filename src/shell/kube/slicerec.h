/* slicerec.h: the compact records the pod store keeps of TPU pods for the
 * live slice check (wh/slices.h; docs/internals/threads.md, "Slice check").
 *
 * Only what the doctor's slice rules read (wh/doctor.h), drift excepted:
 * name, namespace, deletion; the labels and annotations of the controllers
 * and of GKE (keys under ray.io/, jobset.sigs.k8s.io/,
 * leaderworkerset.sigs.k8s.io/, batch.kubernetes.io/, cloud.google.com/,
 * tpu-webhook/, and app.kubernetes.io/created-by, replicaIndex); spec
 * nodeName, hostname, subdomain, hostNetwork, dnsPolicy and nodeSelector;
 * each container's name, and for the TPU containers their google.com/tpu
 * requests and limits and their env entries named TPU_*, MEGASCALE_*,
 * TORCH_* or PET_*; status.phase. Every string is interned in the table's
 * own string table (the hostnames lists and labels of a slice are one
 * copy), so a pod costs one struct wh_sfield per field plus what is its own
 * (name, hostname, node). Pods without a TPU container get no record.
 *
 * Thread-safe: one mutex of the table's own, apart from the store's reader-
 * writer lock, so that the slice check's walk (wh_slicerecs_pods) holds up
 * at most the pod watch's next write, never an admission. A pod's fields
 * are collected outside the mutex.
 *
 * Ownership: the table copies everything it keeps; wh_slicerecs_free()
 * frees it all. The Pod objects wh_slicerecs_pods() adds are the array's.
 */
#ifndef WH_SLICEREC_H
#define WH_SLICEREC_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint32_t */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

struct wh_sfield {
    const char *k, *v;   /* interned; v NULL: an env entry without a value */
    unsigned short c;    /* container index (container, env, resource fields) */
    unsigned char where; /* enum in slicerec.c */
};

/* Fields pointing into the object, before interning. */
struct wh_slicerec_tmp {
    struct wh_sfield *f; /* strings borrowed from the object or owned (res) */
    size_t n, cap;
    char **owned; /* printed resource quantities */
    size_t n_owned;
};

struct wh_slicerecs;

struct wh_slicerecs *wh_slicerecs_new(void);    /* NULL on OOM */
void wh_slicerecs_free(struct wh_slicerecs *t); /* NULL-safe */

/* keep: ns/name is a TPU pod, not deleted: its record is (re)built from pod
 * and tagged gen; else its record, if any, is dropped. WH_ERR_NOMEM (the old
 * record stays). */
WH_NODISCARD enum wh_err wh_slicerecs_apply(struct wh_slicerecs *t, const cJSON *pod,
                                            const char *ns, const char *name, bool keep,
                                            bool deleting, uint32_t gen);
/* After a complete LIST tagged gen: drop the records it did not show. */
void wh_slicerecs_sweep(struct wh_slicerecs *t, uint32_t gen);
/* Something else the slice check reads changed (a node). */
void wh_slicerecs_bump(struct wh_slicerecs *t);
/* Moves with every change of a record and every bump; never waits. */
unsigned long long wh_slicerecs_version(struct wh_slicerecs *t);
/* Append every record to pods as a Pod object doctor reads; *version: the
 * version they show. WH_ERR_NOMEM (pods then holds some). */
WH_NODISCARD enum wh_err wh_slicerecs_pods(struct wh_slicerecs *t, cJSON *pods,
                                           unsigned long long *version);
/* Records held. */
size_t wh_slicerecs_count(struct wh_slicerecs *t);

#endif /* WH_SLICEREC_H */
