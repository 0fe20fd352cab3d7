/* multislice.c: the rules across the slices of one job: MEGASCALE_*
 * (one count, one id per slice, one coordinator) and torchrun's rendezvous
 * (doctor_impl.h). */
#include "doctor_impl.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* strcmp */

#include "wh/tpuenv.h" /* WH_MAX_HOSTS */

/* The value of name in the first TPU container of slice s's pods that has
 * one, and its pod. */
static const char *slice_value(const struct dslice *s, const char *name, const struct dpod **pod)
{
    for (size_t i = 0; i < s->n; i++) {
        const char *v = s->pods[i]->n_tpu ? env_of(&s->pods[i]->c[0], name) : NULL;
        if (v) {
            *pod = s->pods[i];
            return v;
        }
    }
    return NULL;
}

/* name must hold one value across the whole group (mode of the slices'
 * values): the slices whose value differs are told. */
static enum wh_err group_same(struct dgroup *g, const char *name, const char *id, const char *fix)
{
    const char *vals[MODE_MAX];
    size_t counts[MODE_MAX], nv = 0;
    for (size_t i = 0; i < g->n; i++) {
        const struct dpod *p;
        const char *v = slice_value(g->slices[i], name, &p);
        size_t k = 0;
        while (v && k < nv && strcmp(vals[k], v))
            k++;
        if (v && k == nv && nv < MODE_MAX) {
            vals[nv] = v;
            counts[nv++] = 0;
        }
        if (v && k < nv)
            counts[k]++;
    }
    size_t best = 0;
    for (size_t k = 1; k < nv; k++)
        if (counts[k] > counts[best])
            best = k;
    enum wh_err err = WH_OK;
    for (size_t i = 0; nv > 1 && i < g->n && !err; i++) {
        const struct dpod *p;
        const char *v = slice_value(g->slices[i], name, &p);
        if (!v || !strcmp(v, vals[best]))
            continue;
        char field[96], want[400];
        snprintf(field, sizeof(field), "spec.containers[%d].env[%s]", p->c[0].index, name);
        snprintf(want, sizeof(want), "%s (as %zu of the %zu slices)", vals[best], counts[best],
                 g->n);
        struct pfields f = {id, p->name, field, v, want};
        err = wh_dr_problem(g->slices[i], true, &f, "%s", fix);
    }
    return err;
}

static enum wh_err slice_ids(struct dgroup *g, long n_slices)
{
    enum wh_err err = WH_OK;
    struct dslice **by_id = calloc((size_t)n_slices, sizeof(*by_id));
    if (!by_id)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < g->n && !err; i++) {
        struct dslice *s = g->slices[i];
        const struct dpod *p;
        const char *v = slice_value(s, "MEGASCALE_SLICE_ID", &p);
        long id = num_or(v, -1);
        if (!v)
            continue;
        char field[96], want[200];
        snprintf(field, sizeof(field), "spec.containers[%d].env[MEGASCALE_SLICE_ID]", p->c[0].index);
        long want_id = p->slice_no;
        if (id >= 0 && id < n_slices && !by_id[id] && (want_id < 0 || want_id == id)) {
            by_id[id] = s;
            continue;
        }
        if (want_id >= 0)
            snprintf(want, sizeof(want), "%ld (this slice's index)", want_id);
        else
            snprintf(want, sizeof(want), "0..%ld, one per slice", n_slices - 1);
        struct pfields f = {"megascale-slice-id", p->name, field, v, want};
        err = wh_dr_problem(s, true, &f,
                            "each slice of a multi-slice job needs its own id below "
                            "MEGASCALE_NUM_SLICES; re-create the slice's pods through the webhook");
        for (size_t j = 0; j < s->n && !err; j++) {
            /* every pod of one slice holds the slice's id */
            const char *pv = s->pods[j]->n_tpu ? env_of(&s->pods[j]->c[0], "MEGASCALE_SLICE_ID")
                                               : NULL;
            if (pv && strcmp(pv, v)) {
                struct pfields g2 = {"megascale-slice-id", s->pods[j]->name, field, pv, v};
                err = wh_dr_problem(s, true, &g2, "all hosts of one slice hold one slice id");
            }
        }
    }
    free(by_id);
    return err;
}

enum wh_err wh_dr_megascale_rules(struct dgroup *g)
{
    const struct dpod *p = NULL;
    const char *ns = NULL;
    for (size_t i = 0; i < g->n && !ns; i++)
        ns = slice_value(g->slices[i], "MEGASCALE_NUM_SLICES", &p);
    enum wh_err err = WH_OK;
    if (ns) {
        err = group_same(g, "MEGASCALE_NUM_SLICES", "megascale-num-slices",
                         "every slice of the job must agree on the slice count");
        long n = num_or(ns, -1), want = p->n_slices >= 0 ? p->n_slices : (long)g->n;
        if (!err && n != want) {
            char holds[64], exp[160], field[96];
            snprintf(holds, sizeof(holds), "%s", ns);
            snprintf(exp, sizeof(exp), "%ld (%s)", want,
                     p->n_slices >= 0 ? "the replicated job's replicas" : "the slices found");
            snprintf(field, sizeof(field), "spec.containers[%d].env[MEGASCALE_NUM_SLICES]",
                     p->c[0].index);
            struct pfields f = {"megascale-num-slices", p->name, field, holds, exp};
            err = wh_dr_problem(p->slice, true, &f,
                                "the coordinator waits for MEGASCALE_NUM_SLICES slices; make it the "
                                "number of slices (replicas) the workload runs, or create the "
                                "missing slices");
        }
        if (!err && n > 0 && n <= WH_MAX_HOSTS)
            err = slice_ids(g, n);
        if (!err)
            err = group_same(g, "MEGASCALE_COORDINATOR_ADDRESS", "megascale-coordinator",
                             "every slice must dial the same coordinator (slice 0, worker 0); "
                             "re-create the slice's pods through the webhook");
    }
    /* torchrun's world is the slices MEGASCALE joins (docs/workloads.md, "One
     * world"): without it each slice is its own (torch_rules). */
    static const char *const torch[] = {"PET_NNODES", "PET_MASTER_ADDR", "PET_MASTER_PORT"};
    for (size_t i = 0; i < 3 && !err && ns; i++)
        err = group_same(g, torch[i], "torchrun-differ",
                         "torchrun's nodes must agree on the rendezvous; re-create the pods "
                         "through the webhook");
    return err;
}

/* A slice outside any group: torchrun values identical across its pods. */
enum wh_err wh_dr_torch_rules(struct dslice *s)
{
    static const char *const torch[] = {"PET_NNODES", "PET_MASTER_ADDR", "PET_MASTER_PORT"};
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < 3 && !err && s->hosts > 1; i++) {
        size_t n_with;
        const char *m = wh_dr_mode_env(s, torch[i], &n_with);
        if (m)
            err = wh_dr_same_everywhere(s, torch[i], "torchrun-differ", m, n_with);
    }
    return err;
}
