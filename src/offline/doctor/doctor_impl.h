/* doctor_impl.h: the slice model the doctor's files share (private to
 * src/offline/doctor; the room's public face is wh/doctor.h).
 *
 * One pass (input.c) reads every pod into a struct dpod and files it under
 * its slice (slices.c), and the slice under its multi-slice group; each
 * family of rules then walks one slice's pods (hosts.c, peers.c,
 * services.c, nodes.c), one group's slices (multislice.c) or one pod
 * (drift.c), and writes its findings with wh_dr_problem (doctor.c), which
 * also judges and reports. table.c prints a report.
 *
 * Ownership: struct doc owns the pods (their containers), slices, groups,
 * node records and maps, freed together by doctor.c; every cJSON and
 * string the model points at is borrowed from the caller's input lists. */
#ifndef WH_DOCTOR_IMPL_H
#define WH_DOCTOR_IMPL_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/err.h"       /* enum wh_err */
#include "wh/htab.h"      /* struct wh_htab */
#include "wh/json.h"      /* cJSON */
#include "wh/kinds.h"     /* enum wh_kind_row */
#include "wh/nodeindex.h" /* struct wh_node_rec, struct wh_nodeindex */
#include "wh/podspec.h"   /* wh_env_lookup, wh_meta_label, wh_meta_annotation */
#include "wh/state.h"     /* struct wh_state */

/* ---- the maps: string keys over the tree's hash table (map.c) ------------- */

/* Keys are copied, values borrowed; wh_dr_map_free frees the entries. */
struct dmap {
    struct wh_htab t;
};

void *wh_dr_map_get(const struct dmap *m, const char *key);
/* Add key (copied) -> val; the key must not be there yet. */
WH_NODISCARD enum wh_err wh_dr_map_put(struct dmap *m, const char *key, void *val);
void wh_dr_map_free(struct dmap *m);

/* ---- the model ------------------------------------------------------------ */

struct dcont {
    int index; /* in spec.containers */
    const cJSON *env;
    bool id_set; /* TPU_WORKER_ID holds an integer */
    long id;
};

struct dslice;

struct dpod {
    const cJSON *obj, *spec, *labels;
    const char *ns, *name, *node, *hostname, *subdomain, *accel, *topology;
    /* The row of the workload that made it (a KubeRay pod's is
     * RayCluster's, whatever made the RayCluster; a lone pod's, Pod's). */
    enum wh_kind_row kind;
    bool kuberay_legacy, pending;
    unsigned n_tpu;
    long chips;
    struct dcont *c;
    bool tpu7x;
    long hosts;              /* hosts of its slice by topology and chips; -1 unknown */
    long host;               /* its index in the slice; -1 unknown */
    long slice_no;           /* its slice's index in a multi-slice group; -1 none */
    long n_slices;           /* slices its controller says the group has; -1 unknown */
    const char *index_field; /* where host came from, for messages */
    struct dslice *slice;
};

struct dgroup;

struct dslice {
    char name[512];
    const char *ns;
    enum wh_kind_row kind; /* its pods' */
    struct dpod **pods;
    size_t n, cap;
    long hosts;
    struct dgroup *group;
    cJSON *problems;
    size_t errors, warnings;
};

struct dgroup {
    struct dslice **slices;
    size_t n, cap;
};

struct doc {
    struct dmap slices, groups, nodes, services, selectors;
    struct dpod *pods;
    size_t n_pods;
    struct dslice **sl; /* every slice, in first-seen order */
    size_t n_sl, cap_sl;
    struct dgroup **gr;
    size_t n_gr, cap_gr;
    bool have_nodes, have_services;
    struct wh_node_rec *nrecs; /* every node, labels borrowed from the input */
    size_t n_nrecs;
    struct wh_nodeindex *by_label; /* nrecs by label (id: the index in nrecs) */
    char *errbuf;
};

/* ---- problems (doctor.c) --------------------------------------------------- */

/* Room for a value cut for display (wh_dr_show). */
#define SHOW_ROOM 1100
/* s cut for display: at most SHOW_MAX bytes, "..." and the entry count of
 * a long comma list after; out has room for SHOW_ROOM bytes. */
const char *wh_dr_show(const char *s, char out[static SHOW_ROOM]);

struct pfields {
    const char *problem, *pod, *field, *holds, *expected;
};

/* One finding about slice s; fix is printf-style. */
WH_NODISCARD enum wh_err wh_dr_problem(struct dslice *s, bool error, const struct pfields *f,
                                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- reading a pod --------------------------------------------------------- */

static inline const char *env_of(const struct dcont *c, const char *name)
{
    struct wh_env_lookup lk;
    wh_env_lookup(c->env, name, &lk);
    return lk.exists ? lk.value : NULL;
}

/* A label, else the annotation of that key. */
static inline const char *lab(const struct dpod *p, const char *key)
{
    const char *v = wh_meta_label(p->obj, key);
    return v ? v : wh_meta_annotation(p->obj, key);
}

static inline long num_or(const char *s, long dflt)
{
    long v;
    return s && wh_parse_long(s, &v) && v >= 0 ? v : dflt;
}

/* slices.c: p's TPU containers (p->obj and p->spec set); whether a pod
 * takes part (a live TPU pod); a pod read into p (*tpu: it takes part),
 * and filed under its slice and group. */
WH_NODISCARD enum wh_err wh_dr_read_containers(struct dpod *p, char *errbuf);
bool wh_dr_live(const cJSON *pod);
WH_NODISCARD enum wh_err wh_dr_read_pod(struct doc *d, const cJSON *obj, struct dpod *p, bool *tpu);
WH_NODISCARD enum wh_err wh_dr_file_pod(struct doc *d, struct dpod *p);

/* input.c: the items of a List (or an array) whose members are objects of
 * kind (when they say their kind), what naming the flag in messages;
 * then the nodes, Services and pods of the checked lists into d. */
WH_NODISCARD enum wh_err wh_dr_items_of(const cJSON *list, const char *what, const char *kind,
                                        const cJSON **items, char *errbuf);
WH_NODISCARD enum wh_err wh_dr_read_nodes(struct doc *d, const cJSON *items);
WH_NODISCARD enum wh_err wh_dr_read_services(struct doc *d, const cJSON *items);
WH_NODISCARD enum wh_err wh_dr_read_pods(struct doc *d, const cJSON *items);

/* ---- the rules, by family -------------------------------------------------- */

/* hosts.c: one pod per host, every host present, worker ids; or, without a
 * topology, the warning that they were not judged. */
WH_NODISCARD enum wh_err wh_dr_host_rules(struct dslice *s);
WH_NODISCARD enum wh_err wh_dr_topology_unknown(struct dslice *s);

/* peers.c: TPU_WORKER_HOSTNAMES and TORCH_TPU_SLICEBUILDER_ADDRESSES. */
WH_NODISCARD enum wh_err wh_dr_list_rules(struct dslice *s);
/* The value most TPU containers of the slice hold for env name (NULL when
 * most hold none); *n_with how many hold it. At most MODE_MAX distinct
 * values are counted. */
#define MODE_MAX 16
const char *wh_dr_mode_env(const struct dslice *s, const char *name, size_t *n_with);
/* Every TPU container of the slice must hold mode (held by n_with) for
 * name; id names the problem. */
WH_NODISCARD enum wh_err wh_dr_same_everywhere(struct dslice *s, const char *name, const char *id,
                                               const char *mode, size_t n_with);

/* services.c: the headless Service, and DNS on hostNetwork. */
WH_NODISCARD enum wh_err wh_dr_service_rules(struct doc *d, struct dslice *s);
WH_NODISCARD enum wh_err wh_dr_dns_rules(struct dslice *s);

/* nodes.c: schedulable, on the TPU slice asked for, one pool and placement. */
WH_NODISCARD enum wh_err wh_dr_node_rules(struct doc *d, struct dslice *s);

/* multislice.c: MEGASCALE_* across a group, torchrun's values. */
WH_NODISCARD enum wh_err wh_dr_megascale_rules(struct dgroup *g);
WH_NODISCARD enum wh_err wh_dr_torch_rules(struct dslice *s);

/* drift.c: whether the webhook mutates p, and what it would write now. */
bool wh_dr_webhook_serves(const struct dpod *p);
WH_NODISCARD enum wh_err wh_dr_drift_pod(struct dslice *s, const struct dpod *p,
                                         const struct wh_state *st, char *errbuf);

#endif /* WH_DOCTOR_IMPL_H */
