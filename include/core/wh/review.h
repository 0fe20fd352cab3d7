/* review.h: the parsed AdmissionReview, the engine's input side.
 *
 * A shell parses the body once (wh_review_parse), reads who it is about
 * (wh_review_info) to lock what it needs, then hands the review to
 * wh_engine_decide (engine.h). struct wh_review is opaque outside the core.
 * Memory: like the engine, through mem.h.
 */
#ifndef WH_REVIEW_H
#define WH_REVIEW_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#include "wh/err.h"   /* enum wh_err */
#include "wh/kinds.h" /* enum wh_kind */

/* Largest AdmissionReview the engine accepts (the API server's own 3 MiB
 * request limit, doubled for UPDATE's oldObject). */
#define WH_REVIEW_MAX_BYTES ((size_t)6 * 1024 * 1024)

struct wh_review;

/* What a shell may want to know before deciding. Strings borrow from the
 * review and are "" when absent. */
struct wh_review_info {
    const char *uid;
    const char *operation; /* CREATE, UPDATE, ... */
    enum wh_kind kind;
    const char *kind_name; /* request.kind.kind as sent */
    /* request.namespace, the API server's word for where the request
     * belongs (Events and claims go there only); else, for a review with
     * none (offline, hand-written), the object's metadata.namespace. */
    const char *ns;
    const char *object_ns; /* the object's metadata.namespace as sent */
    bool ns_from_request;  /* ns is request.namespace */
    const char *name;      /* object name, generateName, or request.name */
    /* The object's metadata.name, else its generateName; "" when neither
     * (answers about a Pod or workload name the object as it names
     * itself). */
    const char *object_name;
    /* Pod: ray.io/cluster label; RayCluster: its metadata.name, else
     * request.name (a generateName is only a prefix of the name). */
    const char *cluster;
    const char *group; /* Pod: ray.io/group label */
    /* Pod: uid of the RayCluster instance that owns it (its controller
     * ownerReference of kind RayCluster named after the cluster label, as
     * KubeRay sets it: docs/kuberay-pods.md); "" when it has none. */
    const char *cluster_uid;
    bool legacy;  /* Pod whose indices come from cluster state */
    bool dry_run; /* request.dryRun: nothing may be reserved */
};

/* Parse an AdmissionReview (JSON). On success *out is owned by the caller
 * (wh_review_free). WH_ERR_INVALID / WH_ERR_TOOBIG with a reason in errbuf
 * when the bytes are not a readable AdmissionReview v1 with a request. */
WH_NODISCARD enum wh_err wh_review_parse(const char *body, size_t len, struct wh_review **out,
                                         char *errbuf);
/* A review over a request object the caller built (offline render, tests),
 * with the same info as wh_review_parse would read: request is borrowed and
 * must outlive *out, which the caller frees with wh_review_free (the
 * request stays the caller's). WH_ERR_INVALID when request is not an
 * object, WH_ERR_NOMEM. */
WH_NODISCARD enum wh_err wh_review_of_request(const cJSON *request, struct wh_review **out);
void wh_review_free(struct wh_review *rv); /* NULL-safe */
/* Borrowed; valid while rv lives. */
const struct wh_review_info *wh_review_info(const struct wh_review *rv);

/* For the policies: request.object and request.oldObject as sent (NULL
 * when absent; maybe not objects), borrowed; valid while rv lives. The
 * policies read the request only through these and wh_review_info. */
const cJSON *wh_review_object(const struct wh_review *rv);
const cJSON *wh_review_old_object(const struct wh_review *rv);
/* For the ratchet (ratchet.h): the review as it would have been for rv's
 * oldObject, with the same request fields (operation, kind, uid, dryRun,
 * request.namespace...), its object being oldObject and its info read from
 * it; it has no oldObject. It borrows from rv, which must outlive *out; the
 * caller frees *out with wh_review_free. WH_ERR_INVALID when rv's oldObject
 * is not an object, WH_ERR_NOMEM. */
WH_NODISCARD enum wh_err wh_review_of_old(const struct wh_review *rv, struct wh_review **out);
/* For the engine: the top-level apiVersion, NULL when absent or not a
 * string. */
const char *wh_review_api_version(const struct wh_review *rv);

#endif
