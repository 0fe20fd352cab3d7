/* topology.h: TPU slice topologies ("2x2x2", "4x4") and generations. */
#ifndef WH_TOPOLOGY_H
#define WH_TOPOLOGY_H

#include <stdbool.h> /* bool */

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

enum wh_tpu_gen { WH_GEN_UNKNOWN, WH_GEN_V4, WH_GEN_V5E, WH_GEN_V5P, WH_GEN_V6E, WH_GEN_TPU7X };

/* From the cloud.google.com/gke-tpu-accelerator label value. */
enum wh_tpu_gen wh_tpu_gen_from_accelerator(const char *accel);
/* 2 for the 2-D generations (v5e, v6e), 3 for the others, 0 when unknown. */
int wh_tpu_gen_dims(enum wh_tpu_gen gen);
const char *wh_tpu_gen_name(enum wh_tpu_gen gen);

/* True when the accelerator label starts with "tpu7x"
 * (docs/internals/reference-behaviour.md §2.3). */
bool wh_is_tpu7x(const char *accel);

#endif
