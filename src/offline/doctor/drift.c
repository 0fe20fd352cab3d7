/* drift.c: what the webhook would write now, against what a pod holds
 * (doctor_impl.h).
 *
 * A pod as created never shows which env entries the webhook added. So the
 * pod is rebuilt as its controller sent it, minus every variable a mutation
 * path writes (injected below, from the table of envtab.h; the user's
 * MEGASCALE_NUM_SLICES stays, it is an input; so does a value the verb
 * keeps that the whole slice holds alike: kept_values), and goes through the engine (wh_render_admit_pod) against the
 * listed nodes. A legacy KubeRay pod keeps its TPU_WORKER_ID, replicaIndex
 * label and hostname: they are the evidence from which the engine re-derives
 * its indices (mutate.c, reuse_indices), so no cluster state is needed; the
 * id rules judge the id itself. What the engine writes is compared with what
 * the pod holds; a variable the engine leaves alone (LWS's own) is not
 * compared. */
#include "doctor_impl.h"

#include <stdint.h> /* uint32_t */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp */

#include "wh/buf.h"    /* wh_buf_* */
#include "wh/envtab.h" /* wh_envtab, wh_env_find */
#include "wh/render.h" /* wh_render_admit_pod */

/* The variables compared (envtab.h, in its order): every one a mutation
 * path writes, except an input some path only reads (the KubeRay user's
 * MEGASCALE_NUM_SLICES), which the pod keeps. */
static bool injected(const struct wh_env_def *r)
{
    bool writes = false;
    for (int p = 0; p < WH_PATH__COUNT; p++) {
        if (r->verb[p] == WH_VERB_READ)
            return false;
        writes |= r->verb[p] != WH_VERB_NONE;
    }
    return writes;
}

/* Whether the webhook mutates the pod: every KubeRay TPU pod (a legacy
 * one only with the evidence the engine re-derives its indices from);
 * another workload's pod when it opts in by label or already carries a
 * value only this webhook writes (a namespace's opt-in label is not in a
 * pod list). */
bool wh_dr_webhook_serves(const struct dpod *p)
{
    if (p->kind == WH_ROW_RAYCLUSTER)
        return !p->kuberay_legacy || wh_meta_has_label(p->obj, WH_LABEL_LEGACY_REPLICA);
    const char *in = wh_meta_label(p->obj, "tpu-webhook/inject");
    if (in)
        return !strcmp(in, "enabled");
    for (unsigned i = 0; i < p->n_tpu; i++)
        if (env_of(&p->c[i], "PET_NNODES") || env_of(&p->c[i], "TORCH_TPU_SLICEBUILDER_ADDRESSES"))
            return true;
    return false;
}

/* The variables of TPU container i of p taken as the user's, kept: the
 * pod's entry is one the variable's verb on p's path keeps (envtab.h: a
 * KubeRay user's TORCH_TPU_TOPOLOGY, "set if unset", turns TorchTPU off on
 * purpose), and every pod of its slice holds the same value, as a value
 * from the template does (an edit of one pod, or a per-host value, does
 * not). A bit per enum wh_env_var. A value the webhook wrote alike on the
 * whole slice under such a verb cannot be told from a template's: it is
 * taken as the user's. */
_Static_assert(WH_ENV__COUNT <= 32, "kept_values: a bit per variable");

static uint32_t kept_values(const struct dpod *p, unsigned i)
{
    enum wh_env_path path = p->kind == WH_ROW_RAYCLUSTER ? WH_PATH_KUBERAY : WH_PATH_WORKLOAD;
    uint32_t keep = 0;
    for (int k = 0; k < WH_ENV__COUNT; k++) {
        struct wh_env_lookup held;
        wh_env_lookup(p->c[i].env, wh_envtab[k].name, &held);
        if (!injected(&wh_envtab[k]) || held.first_index < 0 ||
            wh_env_verb_writes(wh_envtab[k].verb[path], &held, false))
            continue;
        bool alike = true;
        for (size_t q = 0; q < p->slice->n && alike; q++) {
            const struct dpod *o = p->slice->pods[q];
            const char *v = o->n_tpu > i ? env_of(&o->c[i], wh_envtab[k].name) : NULL;
            alike = v && !strcmp(v, held.value);
        }
        if (alike)
            keep |= (uint32_t)1 << k;
    }
    return keep;
}

/* The pod as its controller sent it: the injected entries of its TPU
 * containers removed, but the user's (kept_values; a legacy KubeRay pod
 * also keeps TPU_WORKER_ID). */
static enum wh_err as_created(const struct dpod *p, cJSON **out)
{
    cJSON *pod = cJSON_Duplicate(p->obj, 1);
    if (!pod)
        return WH_ERR_NOMEM;
    cJSON *cs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "spec"),
                                                 "containers");
    for (unsigned i = 0; i < p->n_tpu; i++) {
        uint32_t keep = kept_values(p, i);
        cJSON *c = cJSON_GetArrayItem(cs, p->c[i].index);
        cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env");
        for (cJSON *e = cJSON_IsArray(env) ? env->child : NULL, *next; e; e = next) {
            next = e->next;
            const char *name = wh_json_str(e, "name");
            enum wh_env_var var = name ? wh_env_find(name) : WH_ENV__COUNT;
            bool strip = var < WH_ENV__COUNT && injected(&wh_envtab[var]) &&
                         !(keep & (uint32_t)1 << var);
            if (strip && p->kuberay_legacy && !strcmp(name, "TPU_WORKER_ID"))
                strip = false;
            if (strip)
                cJSON_Delete(cJSON_DetachItemViaPointer(env, e));
        }
    }
    *out = pod;
    return WH_OK;
}

/* "NAME=value; ..." of the entries that differ, in holds / want. */
static void diff_env(const struct dcont *c, const cJSON *env2, struct wh_buf *holds,
                     struct wh_buf *want, enum wh_err *err)
{
    for (int k = 0; k < WH_ENV__COUNT && !*err; k++) {
        const char *name = wh_envtab[k].name;
        if (!injected(&wh_envtab[k]))
            continue;
        struct wh_env_lookup now;
        wh_env_lookup(env2, name, &now);
        const char *has = env_of(c, name);
        if (!now.exists || (has && !strcmp(has, now.value)))
            continue;
        char a[SHOW_ROOM], b[SHOW_ROOM];
        *err = wh_buf_addf(holds, "%s%s=%s", wh_buf_len(holds) ? "; " : "", name,
                           wh_dr_show(has, a));
        if (!*err)
            *err = wh_buf_addf(want, "%s%s=%s", wh_buf_len(want) ? "; " : "", name,
                               wh_dr_show(now.value, b));
    }
}

enum wh_err wh_dr_drift_pod(struct dslice *s, const struct dpod *p, const struct wh_state *st,
                            char *errbuf)
{
    cJSON *pod = NULL, *now = NULL;
    char *denial = NULL;
    enum wh_err err = as_created(p, &pod);
    enum wh_route route = p->kind == WH_ROW_RAYCLUSTER ? WH_ROUTE_MUTATE : WH_ROUTE_MUTATE_WORKLOAD;
    if (!err)
        err = wh_render_admit_pod(pod, route, st, &now, &denial, errbuf);
    if (!err && denial) {
        struct pfields f = {"drift", p->name, "(the whole pod)", "admitted", "refused"};
        err = wh_dr_problem(s, false, &f, "the webhook would refuse this pod now: %s", denial);
    }
    const cJSON *cs = now ? wh_json_path(now, "spec", "containers", NULL) : NULL;
    for (unsigned i = 0; cs && i < p->n_tpu && !err; i++) {
        struct wh_buf holds, want;
        wh_buf_init(&holds, 64 * 1024);
        wh_buf_init(&want, 64 * 1024);
        diff_env(&p->c[i], wh_json_get(cJSON_GetArrayItem(cs, p->c[i].index), "env"), &holds, &want,
                 &err);
        if (!err && wh_buf_len(&holds)) {
            char field[64];
            snprintf(field, sizeof(field), "spec.containers[%d].env", p->c[i].index);
            struct pfields f = {"drift", p->name, field, wh_buf_ptr(&holds), wh_buf_ptr(&want)};
            err = wh_dr_problem(s, false, &f,
                                "the pod was admitted by another webhook (or an older version), or "
                                "edited; re-create it through this webhook to get these values");
        }
        wh_buf_free(&holds);
        wh_buf_free(&want);
    }
    free(denial);
    cJSON_Delete(pod);
    cJSON_Delete(now);
    return err;
}
