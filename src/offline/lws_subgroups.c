/* lws_subgroups.c: LeaderWorkerSet subgroups as LWS v0.9.0 applies them
 * (lws_subgroups.h): its LWS webhook's validateUpdateSubGroupPolicy, its pod
 * webhook's getSubGroupIndex and addTPUVariablesSubGroup, quirks included. */
#include "lws_subgroups.h"

#include <string.h> /* strcmp */

#include "wh/json.h" /* wh_json_* */

#define SG_FIELD "spec.leaderWorkerTemplate.subGroupPolicy"

enum wh_err wh_lws_sg_parse(const cJSON *obj, long size, struct wh_lws_sg *sg, char *errbuf)
{
    const cJSON *p = wh_json_path(obj, "spec", "leaderWorkerTemplate", "subGroupPolicy", NULL);
    *sg = (struct wh_lws_sg){.type = "LeaderWorker"};
    if (!p || cJSON_IsNull(p))
        return WH_OK;
    const cJSON *n = wh_json_get(p, "subGroupSize");
    if (n && !wh_json_whole(n, 0, 1000000000L, &sg->size))
        return wh_fail(errbuf, WH_ERR_INVALID,
                       SG_FIELD ".subGroupSize is not a whole number >= 0; the API server "
                                "would refuse the object");
    const char *type = wh_json_str(p, "subGroupPolicyType");
    sg->type = type ? type : sg->type;
    sg->leader_excluded = !strcmp(sg->type, "LeaderExcluded");
    const char *why = NULL;
    if (!sg->leader_excluded && strcmp(sg->type, "LeaderWorker"))
        why = "subGroupPolicyType must be \"LeaderWorker\" or \"LeaderExcluded\"";
    else if (sg->size < 1)
        why = "subGroupSize must be at least 1";
    else if (size % sg->size && (size - 1) % sg->size)
        why = "size or size - 1 must be divisible by subGroupSize";
    else if (size < sg->size)
        why = "subGroupSize cannot be larger than size";
    else if (sg->leader_excluded && (size - 1) % sg->size)
        why = "size - 1 must be divisible by subGroupSize with LeaderExcluded";
    if (why)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       SG_FIELD " (subGroupSize %ld, size %ld, type \"%.32s\"): %s; LWS's "
                                "webhook would refuse the object",
                       sg->size, size, sg->type, why);
    sg->excl = wh_json_str(wh_json_path(obj, "metadata", "annotations", NULL),
                           "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology");
    if (sg->excl && !*sg->excl)
        sg->excl = NULL;
    return WH_OK;
}

/* Workers are counted from 1 when size - 1 divides evenly (the leader is an
 * extra pod of subgroup 0), else from 0, whatever the policy type. */
long wh_lws_sg_index(const struct wh_lws_sg *sg, long size, long w)
{
    if (w == 0)
        return sg->leader_excluded ? -1 : 0;
    return (size - 1) % sg->size == 0 ? (w - 1) / sg->size : w / sg->size;
}

/* Subgroup i's hosts counted from i * subGroupSize + 1, shifted by one when
 * the leader requests TPUs (the leader first in subgroup 0). The id is
 * (w - 1) mod subGroupSize unless the pod carries leader-requests-tpus,
 * which only workers do: a leader with TPUs gets -1 (C's % truncates toward
 * zero, as Go's does). */
void wh_lws_sg_span(const struct wh_lws_sg *sg, long w, long i, bool leader_tpu, long *first,
                    long *last, long *id)
{
    bool ann_tpu = w && leader_tpu; /* leader-requests-tpus */
    *first = sg->size * i + 1;
    *last = sg->size * (i + 1);
    if (w == 0 || (ann_tpu && i == 0)) {
        *first = 0;
        --*last;
    } else if (ann_tpu) {
        --*first;
        --*last;
    }
    *id = (w - (ann_tpu ? 0 : 1)) % sg->size;
}
