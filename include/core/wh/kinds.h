/* kinds.h: the workload kinds the webhook knows, in one table.
 *
 * Every rule about a kind of object comes from wh_kinds[]: how an
 * AdmissionReview of it is judged (review.c, engine.c), the kind label of
 * the admission metrics (src/shell/sys/metrics.c), which kinds render,
 * check and doctor expand into pods and how (src/offline), the owner a
 * pod's warnings and Events name (podwarn.c), and the deploy manifests'
 * webhook rules (tests/deploy/test_kinds.py holds the Helm chart and the
 * kustomize rules against it, as test_manifests.py holds their paths
 * against the route table). Adding a kind starts with a row here.
 * Static data: nothing to free. Pure; depends on nothing but its own
 * enums, so any core module may read it.
 */
#ifndef WH_KINDS_H
#define WH_KINDS_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

/* How the engine judges an AdmissionReview of a kind: the class each
 * admission route accepts (engine.h's wh_engine_route_kind). */
enum wh_kind {
    WH_KIND_OTHER,      /* admitted unchanged; no route accepts it */
    WH_KIND_POD,        /* /mutate, /mutate-workload */
    WH_KIND_RAYCLUSTER, /* /validate: numOfHosts against the topology (validate.h) */
    WH_KIND_WORKLOAD,   /* /validate-workload: the template against the topology */
};

/* How the webhook gives the pods of a kind their TPU identity (the
 * worker id and the peers' names). */
enum wh_kind_identity {
    WH_IDENTITY_KUBERAY, /* worker-group replica and host index (mutate.c, docs/kuberay-pods.md) */
    WH_IDENTITY_JOB_INDEX, /* the Job's completion index (workload_identity.c) */
    WH_IDENTITY_JOBSET,    /* the child Job's index and its completion index */
    WH_IDENTITY_LWS,       /* LWS's worker index, the leader being 0 */
    WH_IDENTITY_SINGLE,    /* one host: worker 0, no peers */
};

/* How an object of a kind is judged on CREATE and UPDATE. */
enum wh_kind_validator {
    WH_VALIDATOR_NONE,       /* not judged itself (its RayCluster or its pods are) */
    WH_VALIDATOR_RAYCLUSTER, /* wh_validate (validate.h) */
    WH_VALIDATOR_WORKLOAD,   /* wh_validate_workload (workload_validate.h) */
};

/* How render, check and doctor build the pods a controller would make from
 * a manifest of a kind (src/offline). */
enum wh_kind_pods {
    WH_PODS_NONE,     /* none: a pod is itself */
    WH_PODS_KUBERAY,  /* the RayCluster's worker groups (kuberay.h, render.h) */
    WH_PODS_WORKLOAD, /* the Job, JobSet or LWS controller's pods (workload_pods.h) */
};

/* The rows of wh_kinds[]. The order is the admission metrics' order of
 * their kind labels. */
enum wh_kind_row {
    WH_ROW_POD,
    WH_ROW_RAYCLUSTER,
    WH_ROW_RAYJOB,
    WH_ROW_RAYSERVICE,
    WH_ROW_JOB,
    WH_ROW_JOBSET,
    WH_ROW_LWS,
    WH_ROW__COUNT
};

struct wh_kind_def {
    const char *kind;        /* the object's kind, as request.kind.kind and manifests spell it */
    const char *group;       /* API group, "" for the core group */
    const char *version;     /* the version the webhook registers for (its rules' apiVersions) */
    const char *api_version; /* group/version, as ownerReferences and Events name it */
    const char *resource;    /* the API's plural, as webhook rules name it */
    enum wh_kind review;     /* how an AdmissionReview of it is judged */
    /* The kind label of tpu_webhook_admissions_total; NULL: counted as
     * "other" (RayJob and RayService reach the webhook as RayClusters). */
    const char *metrics_label;
    /* The label (or, for JobSet, label or annotation) its controller puts
     * on each pod it creates, naming the object; NULL for a Pod. RayJob and
     * RayService pods carry WH_KIND_ORIGIN_LABEL naming the kind besides. */
    const char *pod_label;
    /* KubeRay: where the RayCluster spec sits in the object ("spec" for a
     * RayCluster); NULL for the other kinds. */
    const char *cluster_spec;
    /* Its controller creates the headless Service its pods' subdomain
     * names (KubeRay for a multi-host group, JobSet, LeaderWorkerSet);
     * false: the user writes it (a Job's) or there is none (a Pod's).
     * check and render judge the user's Services (doctor.h). */
    bool service_by_controller;
    enum wh_kind_identity identity;
    enum wh_kind_validator validator;
    enum wh_kind_pods pods;
    /* What its controller does not create while spec.suspend is true (a
     * note of render and check, which show no pods then); NULL when the
     * kind has no spec.suspend. */
    const char *suspended;
};

/* The label KubeRay puts on a RayCluster (and its pods) made from a RayJob
 * or a RayService, naming that kind. */
#define WH_KIND_ORIGIN_LABEL "ray.io/originated-from-crd"

extern const struct wh_kind_def wh_kinds[WH_ROW__COUNT];

/* The row of kind (exact match, as Kubernetes compares kinds); NULL for
 * NULL or a kind of no row. */
const struct wh_kind_def *wh_kind_find(const char *kind);

/* The row's index in wh_kinds[] (for tables indexed like it). */
enum wh_kind_row wh_kind_row_of(const struct wh_kind_def *def);

/* How an AdmissionReview of kind is judged: its row's review, else
 * WH_KIND_OTHER. */
enum wh_kind wh_kind_class(const char *kind);

/* The kinds of the rows whose review is `review` (as the admission routes
 * accept them), or whose pods are built with one of the expanders in
 * `pods` (a mask of WH_PODS_BIT), in the table's order, as a message lists
 * them: "A", "A <conj> B" or "A, B <conj> C". Written into out (n bytes,
 * cut when short, always terminated); returns out. Messages that name the
 * kinds build the list here, so a new row shows in them. */
const char *wh_kind_list_by_review(char *out, size_t n, enum wh_kind review, const char *conj);
#define WH_PODS_BIT(p) (1u << (p))
const char *wh_kind_list_by_pods(char *out, size_t n, unsigned pods, const char *conj);

/* True when render, check and doctor expand kind's manifests with p. */
static inline bool wh_kind_pods_by(const char *kind, enum wh_kind_pods p)
{
    const struct wh_kind_def *d = wh_kind_find(kind);
    return d && d->pods == p;
}

#endif /* WH_KINDS_H */
