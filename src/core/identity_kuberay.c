/* identity_kuberay.c: a KubeRay worker pod's replica and host index
 * (identity_kuberay.h). */
#include "wh/identity_kuberay.h"

#include <string.h> /* strlen, strncmp */

#include "wh/json.h"    /* wh_json_*, wh_parse_long */
#include "wh/legacy.h"  /* wh_legacy_choose, wh_legacy_claim_nonce */
#include "wh/podspec.h" /* WH_LABEL_*, wh_env_lookup */
#include "wh/text.h"    /* wh_text */

static enum wh_err native_indices(struct wh_tpu_pod *c)
{
    static const char *const keys[2] = {WH_LABEL_REPLICA_INDEX, WH_LABEL_HOST_INDEX};
    long v[2];
    for (int i = 0; i < 2; i++) {
        const char *s = wh_json_str(c->labels, keys[i]);
        if (!wh_parse_long(s, &v[i]) || v[i] < 0) {
            return wh_tpu_pod_deny(c,
                                   "label \"%s\" is "
                                   "\"%s\", not a whole number >= 0; KubeRay sets it to the %s index, "
                                   "remove it to let the webhook assign one",
                                   keys[i], s ? s : "(not a string)", i ? "host" : "replica");
        }
    }
    if (v[1] >= c->n_hosts) {
        return wh_tpu_pod_deny(c,
                               "label \"%s\" is %ld but "
                               "topology %s with %ld chips per pod has %ld hosts (0..%ld); check "
                               "numOfHosts of the worker group",
                               WH_LABEL_HOST_INDEX, v[1], c->topology, c->tc.chips, c->n_hosts,
                               c->n_hosts - 1);
    }
    c->slice = v[0];
    c->host = v[1];
    return WH_OK;
}

/* A pod reviewed again (reinvocation) keeps the indices the first review
 * gave it (D6). The evidence is what that review wrote and a user cannot
 * have set differently: the replicaIndex label "<group>-<r>" plus, on a
 * multi-host pod, the hostname "<group>-<r>-<h>" (TPU_WORKER_ID is no
 * evidence: a user value is kept, docs/internals/reference-behaviour.md
 * §2.7.6); a single-host pod's host is always 0, and its TPU_WORKER_ID must
 * be set. */
static bool reuse_indices(struct wh_tpu_pod *c)
{
    const char *label = wh_json_str(c->labels, WH_LABEL_LEGACY_REPLICA);
    size_t gl = strlen(c->group);
    long r, h = 0;
    if (!label || strncmp(label, c->group, gl) || label[gl] != '-' || label[gl + 1] == '+' ||
        !wh_parse_long(label + gl + 1, &r) || r < 0)
        return false;
    if (c->n_hosts > 1) {
        const char *hostname = wh_json_str(c->spec, "hostname");
        size_t ll = strlen(label);
        if (!hostname || strncmp(hostname, label, ll) || hostname[ll] != '-' ||
            hostname[ll + 1] == '+' || !wh_parse_long(hostname + ll + 1, &h) || h < 0 ||
            h >= c->n_hosts)
            return false;
    } else {
        struct wh_env_lookup lk;
        wh_env_lookup(wh_json_get(c->tc.items[0].obj, "env"), "TPU_WORKER_ID", &lk);
        if (!lk.exists)
            return false;
    }
    c->slice = r;
    c->host = h;
    return true;
}

static enum wh_err legacy_indices(struct wh_tpu_pod *c, const struct wh_state *st, char *errbuf)
{
    if (reuse_indices(c))
        return WH_OK;
    const char *why = st->ops->legacy_unavailable ? st->ops->legacy_unavailable(st->impl) : NULL;
    if (why) {
        c->d->state_unavailable = true;
        return wh_decision_deny(c->d,
                                "%s (RayCluster \"%s\", worker group \"%s\") needs a TPU "
                                "worker id "
                                "assigned from the pods that already exist, but %s; the pod is not "
                                "created now and KubeRay will retry",
                                c->who, c->cluster, c->group, why);
    }
    struct wh_legacy_group g = {.ns = c->ns,
                                .cluster = c->cluster,
                                .group = c->group,
                                .n_hosts = c->n_hosts,
                                .tpu7x = c->tpu7x};
    enum wh_err err = wh_legacy_choose(st, &g, c->d, &c->slice, &c->host, errbuf);
    if (err)
        return err;
    if (c->host < 0) {
        return wh_tpu_pod_deny(c,
                               "replica %ld already has "
                               "two pods with the same TPU_WORKER_ID, so the slice cannot start; "
                               "delete the replica's pods (or the RayCluster) to let KubeRay "
                               "re-create them",
                               c->slice);
    }
    c->d->assigned = true;
    return wh_legacy_claim_nonce(st, c->pod, c->d); /* the claim standing for them */
}

enum wh_err wh_kuberay_identity(struct wh_tpu_pod *c, const struct wh_state *st, bool *skipped,
                                char *errbuf)
{
    (void)skipped; /* a KubeRay worker pod is always the webhook's to name */
    c->legacy = !(wh_json_has(c->labels, WH_LABEL_REPLICA_INDEX) &&
                  wh_json_has(c->labels, WH_LABEL_HOST_INDEX));
    enum wh_err err = c->legacy ? legacy_indices(c, st, errbuf) : native_indices(c);
    if (err || wh_tpu_pod_denied(c))
        return err;
    c->identity = true;
    struct wh_text t;
    wh_text_init(&t, c->headless, sizeof(c->headless));
    wh_text_add(&t, c->cluster);
    wh_text_add(&t, "-headless"); /* D2 */
    wh_text_init(&t, c->tpu_name, sizeof(c->tpu_name));
    wh_text_add(&t, c->group);
    wh_text_add(&t, "-");
    wh_text_addl(&t, c->slice);
    return WH_OK;
}
