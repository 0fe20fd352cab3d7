/* peers.c: the rules of the lists by which a slice's hosts find each
 * other, TPU_WORKER_HOSTNAMES and TORCH_TPU_SLICEBUILDER_ADDRESSES: the same
 * on every host, entry i naming worker i (doctor_impl.h). */
#include "doctor_impl.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memcmp, strcmp, strcspn, strlen, strrchr */

#include "wh/tpuenv.h" /* WH_MAX_HOSTS */

/* The value most TPU containers of the slice hold for env name (NULL when
 * most hold none); *n_with how many hold it. Distinct values are few (one
 * when healthy), so counting them is linear in the containers. */
const char *wh_dr_mode_env(const struct dslice *s, const char *name, size_t *n_with)
{
    const char *vals[MODE_MAX];
    size_t counts[MODE_MAX], nv = 0, nulls = 0;
    for (size_t i = 0; i < s->n; i++)
        for (unsigned ci = 0; ci < s->pods[i]->n_tpu; ci++) {
            const char *v = env_of(&s->pods[i]->c[ci], name);
            size_t k = 0;
            if (!v) {
                nulls++;
                continue;
            }
            while (k < nv && strcmp(vals[k], v))
                k++;
            if (k == nv && nv < MODE_MAX) {
                vals[nv] = v;
                counts[nv++] = 0;
            }
            if (k < nv)
                counts[k]++;
        }
    size_t best = 0;
    for (size_t k = 1; k < nv; k++)
        if (counts[k] > counts[best])
            best = k;
    if (!nv || counts[best] < nulls) {
        *n_with = nulls;
        return NULL;
    }
    *n_with = counts[best];
    return vals[best];
}

static long count_entries(const char *list)
{
    long n = *list ? 1 : 0;
    for (; *list; list++)
        n += *list == ',';
    return n;
}

/* The first entry where a and b differ, both shown; one walk over both. */
static void first_diff(const char *a, const char *b, char *ha, char *hb, size_t n)
{
    long na = count_entries(a), nb = count_entries(b);
    const char *pa = a, *pb = b;
    for (long i = 0; pa || pb; i++) {
        size_t la = pa ? strcspn(pa, ",") : 0, lb = pb ? strcspn(pb, ",") : 0;
        if (!pa || !pb || la != lb || memcmp(pa, pb, la)) {
            snprintf(ha, n, "entry %ld %.*s (%ld entries)", i, pa ? (int)(la > 200 ? 200 : la) : 6,
                     pa ? pa : "absent", na);
            snprintf(hb, n, "entry %ld %.*s (%ld entries)", i, pb ? (int)(lb > 200 ? 200 : lb) : 6,
                     pb ? pb : "absent", nb);
            return;
        }
        pa = pa[la] ? pa + la + 1 : NULL;
        pb = pb[lb] ? pb + lb + 1 : NULL;
    }
    snprintf(ha, n, "%s", a);
    snprintf(hb, n, "%s", b);
}

/* Walks a comma list: the next entry into out (cut), false at the end. */
struct walker {
    const char *p;
};
static bool next_entry(struct walker *w, char *out, size_t n)
{
    if (!w->p)
        return false;
    size_t len = strcspn(w->p, ",");
    snprintf(out, n, "%.*s", (int)len, w->p);
    w->p = w->p[len] ? w->p + len + 1 : NULL;
    return true;
}

/* Every TPU container of the slice must hold the slice's value of name. */
enum wh_err wh_dr_same_everywhere(struct dslice *s, const char *name, const char *id,
                                  const char *mode, size_t n_with)
{
    enum wh_err err = WH_OK;
    size_t total = 0;
    for (size_t i = 0; i < s->n; i++)
        total += s->pods[i]->n_tpu;
    for (size_t i = 0; i < s->n && !err; i++)
        for (unsigned ci = 0; ci < s->pods[i]->n_tpu && !err; ci++) {
            struct dpod *p = s->pods[i];
            const char *v = env_of(&p->c[ci], name);
            if (v && mode && !strcmp(v, mode))
                continue;
            if (!v && !mode)
                continue;
            char field[128], h[512], e[512];
            snprintf(field, sizeof(field), "spec.containers[%d].env[%s]", p->c[ci].index, name);
            if (v && mode) {
                first_diff(v, mode, h, e, sizeof(h));
            } else {
                snprintf(h, sizeof(h), "%s", v ? v : "(unset)");
                snprintf(e, sizeof(e), "%s", mode ? mode : "(unset)");
            }
            size_t el = strlen(e);
            snprintf(e + el, sizeof(e) - el, ", as %zu of the slice's %zu containers", n_with,
                     total);
            struct pfields f = {id, p->name, field, h, e};
            err = wh_dr_problem(s, true, &f,
                                "every worker of a slice must see the same list; the pod was "
                                "admitted by another webhook or edited: delete it so that it is "
                                "created again through the webhook");
        }
    return err;
}

/* Worker i's DNS name: hostname.subdomain of the pod at host i. */
static void host_name(const struct dpod *p, char *out, size_t n)
{
    snprintf(out, n, "%s.%s", p->hostname ? p->hostname : "", p->subdomain ? p->subdomain : "");
}

static enum wh_err names_present(struct dslice *s)
{
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        struct dpod *p = s->pods[i];
        bool nh = !p->hostname || !*p->hostname;
        if (!nh && p->subdomain && *p->subdomain)
            continue;
        struct pfields f = {"hostname-missing", p->name, nh ? "spec.hostname" : "spec.subdomain",
                            "(unset)", "a name its peers resolve"};
        err = wh_dr_problem(s, true, &f,
                            "the hosts of a multi-host slice find each other by hostname.subdomain; "
                            "%s",
                            s->kind == WH_ROW_RAYCLUSTER
                                ? "the webhook sets both: re-create the pod through it"
                            : s->kind == WH_ROW_JOB
                                ? "set spec.template.spec.subdomain to a headless "
                                  "Service selecting the Job's pods"
                                : "let the controller create the pod");
    }
    return err;
}

/* Entry i of the slice's TPU_WORKER_HOSTNAMES must be worker i's name. */
static enum wh_err hostname_entries(struct dslice *s, const char *list, struct dpod **at)
{
    long n = count_entries(list);
    char want[64], h[64];
    if (n != s->hosts) {
        snprintf(h, sizeof(h), "%ld entries", n);
        snprintf(want, sizeof(want), "%ld entries, one per host", s->hosts);
        struct pfields f = {"hostnames-entry", "", "env[TPU_WORKER_HOSTNAMES]", h, want};
        return wh_dr_problem(s, true, &f,
                             "the list must name every host of the slice in worker order; "
                             "re-create the slice's pods through the webhook");
    }
    struct walker w = {list};
    for (long i = 0; i < s->hosts; i++) {
        char e[256], name[600];
        if (!next_entry(&w, e, sizeof(e)))
            break;
        if (!at[i])
            continue;
        host_name(at[i], name, sizeof(name));
        if (!strcmp(e, name))
            continue;
        char field[64];
        snprintf(field, sizeof(field), "env[TPU_WORKER_HOSTNAMES] entry %ld", i);
        struct pfields f = {"hostnames-entry", at[i]->name, field, e, name};
        return wh_dr_problem(s, true, &f,
                             "entry %ld must be worker %ld's hostname.subdomain, or libtpu waits for "
                             "a host that is not there; re-create the slice's pods through the "
                             "webhook",
                             i, i);
    }
    return WH_OK;
}

/* TORCH_TPU_SLICEBUILDER_ADDRESSES: host-major, host i's entries name
 * worker i (docs/workloads.md). */
static enum wh_err slicebuilder_entries(struct dslice *s, const char *list, struct dpod **at)
{
    long n = count_entries(list), per = s->hosts > 0 ? n / s->hosts : 0;
    char h[300], want[600];
    if (!per || n % s->hosts) {
        snprintf(h, sizeof(h), "%ld entries", n);
        snprintf(want, sizeof(want), "a multiple of the %ld hosts", s->hosts);
        struct pfields f = {"slicebuilder-entry", "", "env[TORCH_TPU_SLICEBUILDER_ADDRESSES]", h,
                            want};
        return wh_dr_problem(s, true, &f,
                             "one entry per process, host by host; remove the variable "
                             "and re-create the pods through the webhook");
    }
    struct walker w = {list};
    for (long k = 0; k < n; k++) {
        const struct dpod *p = at[k / per];
        if (!next_entry(&w, h, sizeof(h)))
            break;
        if (!p)
            continue;
        char *colon = strrchr(h, ':');
        if (colon)
            *colon = '\0';
        if (s->hosts > 1)
            host_name(p, want, sizeof(want));
        else
            snprintf(want, sizeof(want), "localhost");
        if (!strcmp(h, want))
            continue;
        char field[96];
        snprintf(field, sizeof(field), "env[TORCH_TPU_SLICEBUILDER_ADDRESSES] entry %ld", k);
        struct pfields f = {"slicebuilder-entry", p->name, field, h, want};
        return wh_dr_problem(s, true, &f,
                             "entry %ld belongs to rank %ld, a process of worker %ld; re-create the "
                             "slice's pods through the webhook",
                             k, k, k / per);
    }
    return WH_OK;
}

enum wh_err wh_dr_list_rules(struct dslice *s)
{
    if (s->hosts <= 0 || s->hosts > WH_MAX_HOSTS)
        return WH_OK;
    struct dpod **at = calloc((size_t)s->hosts, sizeof(*at));
    if (!at)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < s->n; i++)
        if (s->pods[i]->host >= 0 && s->pods[i]->host < s->hosts && !at[s->pods[i]->host])
            at[s->pods[i]->host] = s->pods[i];
    enum wh_err err = s->hosts > 1 ? names_present(s) : WH_OK;
    size_t n_with;
    const char *hosts = wh_dr_mode_env(s, "TPU_WORKER_HOSTNAMES", &n_with);
    if (!err && s->hosts > 1)
        err = wh_dr_same_everywhere(s, "TPU_WORKER_HOSTNAMES", "hostnames-differ", hosts, n_with);
    if (!err && s->hosts > 1 && hosts)
        err = hostname_entries(s, hosts, at);
    if (!err && s->hosts > 1 && !hosts) {
        struct pfields f = {"hostnames-entry", "", "env[TPU_WORKER_HOSTNAMES]", "(unset)",
                            "the slice's hostname.subdomain names in worker order"};
        err = wh_dr_problem(s, true, &f,
                            "libtpu finds its peers through this list; re-create the "
                            "slice's pods through the webhook");
    }
    const char *sb = wh_dr_mode_env(s, "TORCH_TPU_SLICEBUILDER_ADDRESSES", &n_with);
    if (!err && sb)
        err = wh_dr_same_everywhere(s, "TORCH_TPU_SLICEBUILDER_ADDRESSES", "slicebuilder-differ",
                                    sb, n_with);
    if (!err && sb)
        err = slicebuilder_entries(s, sb, at);
    free(at);
    return err;
}
