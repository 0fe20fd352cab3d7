/* hosts.c: the rules of a slice's hosts: one pod per host index, every
 * host present, TPU_WORKER_ID per container (doctor_impl.h). */
#include "doctor_impl.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */

#include "wh/tpuenv.h" /* wh_tpu_worker_id, WH_MAX_HOSTS */

static const char *kind_fix(enum wh_kind_row k)
{
    switch (k) {
    case WH_ROW_RAYCLUSTER:
        return "check numOfHosts of the worker group and the KubeRay operator's events";
    case WH_ROW_JOBSET: return "set parallelism and completions of the replicated job to the hosts";
    case WH_ROW_JOB: return "set parallelism and completions of the Job to the hosts";
    case WH_ROW_LWS: return "set spec.leaderWorkerTemplate.size to the hosts";
    default: return "give each host its own workload";
    }
}

static enum wh_err place_hosts(struct dslice *s, struct dpod **at)
{
    enum wh_err err = WH_OK;
    char h[32], want[128];
    for (size_t i = 0; i < s->n && !err; i++) {
        struct dpod *p = s->pods[i];
        if (p->host < 0)
            continue;
        snprintf(h, sizeof(h), "%ld", p->host);
        snprintf(want, sizeof(want), "0..%ld", s->hosts - 1);
        if (p->host >= s->hosts) {
            struct pfields f = {"extra-host", p->name, p->index_field, h, want};
            err = wh_dr_problem(s, true, &f,
                                "topology %s with %ld chips per pod has %ld hosts; delete the pod, "
                                "or %s",
                                p->topology, p->chips, s->hosts, kind_fix(s->kind));
        } else if (at[p->host]) {
            snprintf(want, sizeof(want), "one pod per host (pod %.40s is host %ld)",
                     at[p->host]->name, p->host);
            struct pfields f = {"extra-host", p->name, p->index_field, h, want};
            err = wh_dr_problem(s, true, &f,
                                "two pods are host %ld of the slice; delete the one that should "
                                "not be there (its controller re-creates what it owns)",
                                p->host);
        } else {
            at[p->host] = p;
        }
    }
    return err;
}

static enum wh_err missing_hosts(struct dslice *s, struct dpod **at)
{
    char holds[256], want[64], list[200];
    size_t present = 0, used = 0;
    long missing = 0;
    for (long i = 0; i < s->hosts; i++) {
        if (at[i]) {
            present++;
            continue;
        }
        missing++;
        if (used < sizeof(list) - 24)
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%ld", used ? "," : "", i);
    }
    if (!missing)
        return WH_OK;
    list[used] = '\0';
    snprintf(holds, sizeof(holds), "%zu of %ld hosts (missing host %s%s)", present, s->hosts, list,
             used >= sizeof(list) - 24 ? ",..." : "");
    snprintf(want, sizeof(want), "%ld hosts", s->hosts);
    struct pfields f = {"missing-hosts", "", "pods", holds, want};
    return wh_dr_problem(s, true, &f,
                         "the slice starts only when every host runs: see why the controller did "
                         "not create the missing pods (kubectl describe its owner; quota, a "
                         "refused admission), or %s",
                         kind_fix(s->kind));
}

static enum wh_err container_id(struct dslice *s, struct dpod *p, unsigned ci, struct dpod **ids,
                                long n_workers)
{
    const struct dcont *c = &p->c[ci];
    char field[96], h[32], want[128];
    snprintf(field, sizeof(field), "spec.containers[%d].env[TPU_WORKER_ID]", c->index);
    snprintf(want, sizeof(want), "0..%ld", n_workers - 1);
    if (!c->id_set) {
        struct pfields f = {"worker-id-missing", p->name, field, env_of(c, "TPU_WORKER_ID"), want};
        return wh_dr_problem(s, true, &f,
                             "libtpu cannot tell which host this is; the pod was not admitted by "
                             "the webhook (failurePolicy Ignore, an outage, or no opt-in): delete "
                             "the pod so that it is created again through the webhook");
    }
    snprintf(h, sizeof(h), "%ld", c->id);
    if (c->id < 0 || c->id >= n_workers) {
        struct pfields f = {"worker-id-out-of-range", p->name, field, h, want};
        return wh_dr_problem(s, true, &f,
                             "the slice has %ld workers; delete the pod so that the "
                             "webhook gives it an id again",
                             n_workers);
    }
    if (ids[c->id]) {
        snprintf(want, sizeof(want), "an id no other pod holds (pod %.40s holds %ld)",
                 ids[c->id]->name, c->id);
        struct pfields f = {"duplicate-worker-id", p->name, field, h, want};
        return wh_dr_problem(s, true, &f,
                             "two workers with one id never initialise; delete the pods of the "
                             "slice (or the workload) so that they are created again together");
    }
    ids[c->id] = p;
    long w = p->host >= 0 ? wh_tpu_worker_id(p->host, p->n_tpu, ci, p->tpu7x) : c->id;
    if (w != c->id && p->host < s->hosts) {
        snprintf(want, sizeof(want), "%ld (host %ld)", w, p->host);
        struct pfields f = {"worker-id-not-host", p->name, field, h, want};
        return wh_dr_problem(s, true, &f,
                             "the id disagrees with the pod's host index (%s), so TPU_WORKER_HOSTNAMES "
                             "entry %ld is not this pod; delete the pod so that it is created again "
                             "through the webhook",
                             p->index_field ? p->index_field : "host", c->id);
    }
    return WH_OK;
}

/* TPU7x pods with several TPU containers: each container is a worker, one
 * id per container (docs/workloads.md). */
static bool shared_ids(const struct dpod *p)
{
    if (!p->tpu7x || p->n_tpu < 2 || !p->c[0].id_set)
        return false;
    for (unsigned i = 1; i < p->n_tpu; i++)
        if (!p->c[i].id_set || p->c[i].id != p->c[0].id)
            return false;
    return true;
}

static enum wh_err worker_ids(struct dslice *s)
{
    long per = s->n ? (s->pods[0]->tpu7x ? (long)s->pods[0]->n_tpu : 1) : 1;
    long n_workers = s->hosts * per;
    bool multi = n_workers > 1;
    struct dpod **ids = calloc((size_t)(n_workers > 0 ? n_workers : 1), sizeof(*ids));
    if (!ids)
        return WH_ERR_NOMEM;
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        struct dpod *p = s->pods[i];
        if (shared_ids(p)) {
            char field[96], h[32], want[64];
            snprintf(field, sizeof(field), "spec.containers[%d].env[TPU_WORKER_ID]", p->c[1].index);
            snprintf(h, sizeof(h), "%ld (as container %d)", p->c[0].id, p->c[0].index);
            snprintf(want, sizeof(want), "%ld",
                     wh_tpu_worker_id(p->host < 0 ? 0 : p->host, p->n_tpu, 1, true));
            struct pfields f = {"tpu7x-container-ids", p->name, field, h, want};
            err = wh_dr_problem(s, true, &f,
                                "on TPU7x each TPU container is a worker (host x containers + "
                                "index); delete the pod so that the webhook sets one id per "
                                "container");
            continue;
        }
        for (unsigned ci = 0; ci < p->n_tpu && !err; ci++)
            if (multi || p->c[ci].id_set)
                err = container_id(s, p, ci, ids, n_workers);
    }
    free(ids);
    return err;
}

/* Without a topology the hosts cannot be counted: said, not passed over. */
enum wh_err wh_dr_topology_unknown(struct dslice *s)
{
    struct pfields f = {"topology-unknown", s->pods[0]->name,
                        "spec.nodeSelector[" WH_SEL_TOPOLOGY "]",
                        s->pods[0]->topology ? s->pods[0]->topology : "(unset)",
                        "the slice's topology, e.g. 4x4"};
    return wh_dr_problem(s, false, &f,
                         "neither the pod (nodeSelector or the %s annotation) nor its node says the "
                         "topology, so the hosts and worker ids were not judged; add the "
                         "nodeSelector to the pod template",
                         WH_ANN_SLICE_TOPOLOGY);
}

enum wh_err wh_dr_host_rules(struct dslice *s)
{
    if (s->hosts <= 0 || s->hosts > WH_MAX_HOSTS)
        return WH_OK; /* no (believable) topology: nothing to count against */
    struct dpod **at = calloc((size_t)s->hosts, sizeof(*at));
    if (!at)
        return WH_ERR_NOMEM;
    enum wh_err err = place_hosts(s, at);
    if (!err)
        err = missing_hosts(s, at);
    if (!err)
        err = worker_ids(s);
    free(at);
    return err;
}
