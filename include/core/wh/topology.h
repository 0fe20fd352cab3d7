/* topology.h: TPU slice topologies ("2x2x2", "4x4") and generations. */
#ifndef WH_TOPOLOGY_H
#define WH_TOPOLOGY_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/err.h" /* enum wh_err */

#define WH_TOPOLOGY_MAX_CHIPS (1L << 24)

struct wh_topology {
    int ndims;    /* as written: 2 or 3 */
    long dims[3]; /* a 2-D topology gets a third dimension 1 */
    long chips;   /* product of the dims */
};

/* Parse "AxB" or "AxBxC" of positive integers. WH_ERR_INVALID with the reason
 * (naming the bad part) in errbuf otherwise. */
WH_NODISCARD enum wh_err wh_topology_parse(const char *s, struct wh_topology *t, char *errbuf);

/* Hosts a slice needs: max(chips / chips_per_host, 1) (integer division).
 * chips_per_host <= 0 counts as 1 host. */
long wh_topology_hosts(const struct wh_topology *t, long chips_per_host);

/* Subslice rule (docs/internals/reference-behaviour.md §3.3): same number of
 * x-separated parts, all integers, child_i <= parent_i. Unparsable counts as
 * not a subset. */
bool wh_topology_is_subset(const char *child, const char *parent);

/* The one subslice rule of every path (docs/workloads.md, "Subslices"): the
 * RayCluster's (/validate), the workload template's (/validate-workload, and
 * so check and render) and the workload pod's (/mutate-workload). A subslice
 * (annotation WH_ANN_SLICE_TOPOLOGY, value subslice) fits its parent node
 * pool's topology (parent) by wh_topology_is_subset. False when it does not,
 * with the message in out (n bytes; 512 or more holds it whole): the values,
 * and that the annotation must fit the pool dimension by dimension, with
 * the orders of the same shape that fit, if any (the axes are the pool's,
 * in order: another order is refused, docs/workloads.md, "Subslices"). */
bool wh_subslice_fits(const char *subslice, const char *parent, char *out, size_t n);

enum wh_tpu_gen { WH_GEN_UNKNOWN, WH_GEN_V4, WH_GEN_V5E, WH_GEN_V5P, WH_GEN_V6E, WH_GEN_TPU7X };

/* One GKE machine type of a generation: a TPU VM is one pod, so its chips are
 * the google.com/tpu a pod requests. It serves a topology when its chips
 * divide the topology's and, if only is set, the topology is exactly only
 * (the 1-chip VM makes only 1x1 / 1x1x1, the 8-chip VM only the single-host
 * 2x4). */
struct wh_tpu_vm {
    long chips;          /* 0 ends a list */
    const char *machine; /* "ct6e-standard-4t" */
    const char *only;    /* the one topology it serves; NULL: any it divides */
};

/* The one table of TPU generations (docs/workloads.md, "TPU generations"):
 * every path that needs a generation fact reads it from here. Static data,
 * nothing to free. */
struct wh_tpu_gen_info {
    enum wh_tpu_gen gen;
    const char *name;            /* "v6e" */
    const char *const *labels;   /* cloud.google.com/gke-tpu-accelerator values, NULL-ended */
    int dims;                    /* topology dimensions: 2 or 3 */
    int tensorcores_per_chip;    /* 2 on v4, v5p and TPU7x */
    int devices_per_chip;        /* PJRT devices: 2 on TPU7x (its cores are separate devices) */
    const struct wh_tpu_vm *vms; /* the machine types, chips 0-ended */
    /* The documented slice topologies (docs/workloads.md, "Documented
     * topologies", with their sources): the enumerated ones, NULL-ended, and
     * on the 3-D generations the rest by one rule: AxBxC, each dimension a
     * multiple of 4, at most cubes_max cubes of 4x4x4 (0: no such rule),
     * A <= B <= C when cubes_sorted. The messages state them, and a topology
     * outside them is warned about (wh_tpu_topology_undocumented). */
    const char *const *topologies;
    int cubes_max;
    bool cubes_sorted;
};

/* The generation whose label is exactly accel; NULL when accel is NULL, ""
 * or no GKE accelerator label (e.g. the typo "tpu-v6e-podslice"). */
const struct wh_tpu_gen_info *wh_tpu_gen_find(const char *accel);
/* The generation's row; NULL for WH_GEN_UNKNOWN. */
const struct wh_tpu_gen_info *wh_tpu_gen_info(enum wh_tpu_gen gen);
/* Every accelerator label value of the table, ", "-joined (for messages). */
const char *wh_tpu_accelerators(void);
/* True when a VM of the generation has exactly chips chips. */
bool wh_tpu_gen_has_vm(const struct wh_tpu_gen_info *g, long chips);
/* The generation's documented topologies, ", "-joined, then its cube rule
 * in words, into out (n bytes; 256 holds every row of the table). */
void wh_tpu_gen_topologies(const struct wh_tpu_gen_info *g, char *out, size_t n);
/* True when t (parsed) is one of the generation's documented topologies:
 * enumerated (compared as written) or by its cube rule. */
bool wh_tpu_gen_documented(const struct wh_tpu_gen_info *g, const struct wh_topology *t);
/* True when a slice of topology t is made of VMs of chips chips each. */
bool wh_tpu_gen_fits(const struct wh_tpu_gen_info *g, const struct wh_topology *t, long chips);

/* From the cloud.google.com/gke-tpu-accelerator label value (exact). */
enum wh_tpu_gen wh_tpu_gen_from_accelerator(const char *accel);
/* 2 for the 2-D generations (v5e, v6e), 3 for the others, 0 when unknown. */
int wh_tpu_gen_dims(enum wh_tpu_gen gen);
const char *wh_tpu_gen_name(enum wh_tpu_gen gen);

/* One way to make a topology: the chips of one VM (a pod's google.com/tpu)
 * and the hosts (pods) of one slice that go with them. */
struct wh_tpu_fit {
    long chips, hosts;
    const char *machine; /* static: the VM's machine type */
};
#define WH_TPU_FITS_MAX 4

/* The VMs of g that make topology t, in table order: at most max into out,
 * their count returned (0 when g or t is unknown or no VM makes t). */
size_t wh_tpu_gen_fit_list(const struct wh_tpu_gen_info *g, const struct wh_topology *t,
                           struct wh_tpu_fit *out, size_t max);

/* The valid values of n fits as a message says them, into out (len bytes;
 * 256 holds WH_TPU_FITS_MAX): "4 with numOfHosts 2, or 1 with numOfHosts 8"
 * (hosts_field "numOfHosts", each count plus hosts_plus), "4, 1" when
 * hosts_field is NULL. 512 bytes hold it with a JobSet's field names. */
void wh_tpu_fits_text(const struct wh_tpu_fit *f, size_t n, const char *hosts_field,
                      long hosts_plus, char *out, size_t len);

/* A slice shape as a pod or template states it, each part with the field
 * that states it (how messages name it). NULL or "" parts are not stated. */
struct wh_tpu_shape {
    const char *accel, *accel_field;
    const char *topology, *topo_field;
    long chips; /* google.com/tpu per pod (one VM); 0 when none */
    const char *chips_field;
    /* The field whose count changes with the chips per pod ("numOfHosts"):
     * the slice's hosts plus hosts_plus (an LWS leader without TPUs). NULL
     * when nothing counts the hosts. */
    const char *hosts_field;
    long hosts_plus;
};

/* Stable keys of the shape rules (a ratchet on UPDATE keys on them). */
#define WH_RULE_ACCELERATOR "tpu-accelerator-unknown"
#define WH_RULE_TOPOLOGY_FORM "tpu-topology-malformed"
#define WH_RULE_TOPOLOGY_DIMS "tpu-topology-dimensions"
#define WH_RULE_CHIPS_PER_VM "tpu-chips-per-vm"
/* A warning, not a refusal (docs/workloads.md, "TPU generations"): a topology
 * no documented node pool of the generation has. Also the Event's reason. */
#define WH_RULE_TOPOLOGY_UNDOCUMENTED "tpu-topology-undocumented"
#define WH_REASON_TOPOLOGY_UNDOCUMENTED "TPUTopologyUndocumented"

struct wh_shape_problem {
    const char *rule; /* one of WH_RULE_*; NULL when the shape is possible */
    char text[1024];  /* "<field> is \"<value>\", ...; valid values: ..." */
    /* WH_RULE_CHIPS_PER_VM on a stated topology: the chips per pod that make
     * it, with their hosts (the values the text names); else n_fits 0. */
    size_t n_fits;
    struct wh_tpu_fit fits[WH_TPU_FITS_MAX];
};

/* Judge a stated shape against the table, in this order: an unknown
 * accelerator, a malformed topology, a topology of the wrong dimensionality,
 * a chip count per pod no VM of the generation has, or none that makes the
 * stated topology (wh_tpu_gen_fits; judged only when it divides the
 * topology's chips: the callers' divisor rule speaks first). False with the first
 * problem in *p; on true *topo holds the parsed topology (ndims 0 when none
 * was stated) and *gen the generation (NULL when none was stated). */
bool wh_tpu_shape_check(const struct wh_tpu_shape *s, struct wh_topology *topo,
                        const struct wh_tpu_gen_info **gen, struct wh_shape_problem *p);

/* The warning of a topology t (as written: topology, stated by field) that is
 * not in generation g's documented list: false when it is in the list (or g
 * or t is unknown), else true with the full text in out (n bytes; 768 or more
 * holds it whole: the field, the value, the documented list and why it is
 * only a warning; for Events and check) and the admission warning's short
 * one in brief (nb bytes; 100 or more: the generation and the value). */
bool wh_tpu_topology_undocumented(const struct wh_tpu_gen_info *g, const struct wh_topology *t,
                                  const char *topology, const char *field, char *out, size_t n,
                                  char *brief, size_t nb);

/* True when the accelerator label starts with "tpu7x"
 * (docs/internals/reference-behaviour.md §2.3). */
bool wh_is_tpu7x(const char *accel);

#endif
