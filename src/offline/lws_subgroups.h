/* lws_subgroups.h: LeaderWorkerSet subgroups' rules as LWS v0.9.0 applies
 * them (its LWS webhook's checks, its pod webhook's subgroup index and TPU
 * host span), for workload_pods.c. docs/workloads.md, "What each controller
 * puts on a pod", says what they mean. Pure; the struct borrows strings
 * from the LWS object it was parsed from (nothing to free). */
#ifndef WH_LWS_SUBGROUPS_H
#define WH_LWS_SUBGROUPS_H

#include <stdbool.h> /* bool */

#include <cjson/cJSON.h>

#include "wh/err.h" /* enum wh_err */

struct wh_lws_sg {
    long size;            /* subGroupSize; 0: no subGroupPolicy */
    bool leader_excluded; /* subGroupPolicyType LeaderExcluded */
    const char *type;     /* as written, or LWS's default "LeaderWorker" */
    const char *excl;     /* the LWS's subgroup-exclusive-topology annotation, or NULL */
};

/* The subGroupPolicy of LWS obj whose groups have size pods (sg->size 0
 * when it has none). WH_ERR_INVALID, with LWS's webhook's reason, for what
 * that webhook refuses. */
WH_NODISCARD enum wh_err wh_lws_sg_parse(const cJSON *obj, long size, struct wh_lws_sg *sg,
                                         char *errbuf);

/* The subgroup of pod w (0: the leader) of a group of size pods: -1 for a
 * leader that LeaderExcluded keeps out of every subgroup. */
long wh_lws_sg_index(const struct wh_lws_sg *sg, long size, long w);

/* LWS's TPU identity for pod w in subgroup i (>= 0): the pods *first..*last
 * of its host list (0: the leader) and its TPU_WORKER_ID. leader_tpu: the
 * leader template requests TPUs. */
void wh_lws_sg_span(const struct wh_lws_sg *sg, long w, long i, bool leader_tpu, long *first,
                    long *last, long *id);

#endif /* WH_LWS_SUBGROUPS_H */
