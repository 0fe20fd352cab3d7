/* doctor.c: slices as they stand, judged (doctor.h): the findings' form
 * (wh_dr_problem), the order the rule families run in (judge), the report
 * and the model's lifetime. How the pods are read and grouped, and each
 * family of rules, are the room's other files (doctor_impl.h). */
#include "wh/doctor.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* snprintf, vsnprintf */
#include <stdlib.h> /* free, qsort */
#include <string.h> /* strcmp, strlen */

#include "doctor_impl.h" /* struct doc, wh_dr_* */
#include "wh/json.h"     /* wh_json_* */
#include "wh/kinds.h"    /* wh_kinds */
#include "wh/state.h"    /* wh_memstate_* */

#define SHOW_MAX 160 /* longest value shown in a problem */

/* ---- problems ------------------------------------------------------------ */

/* s cut for display: at most max bytes, "..." and the entry count of a
 * long comma list after. out has room for SHOW_ROOM bytes. */
static const char *show_n(const char *s, size_t max, char *out)
{
    if (!s)
        return "(unset)";
    size_t n = strlen(s);
    if (n <= max)
        return s;
    size_t entries = 1;
    for (const char *p = s; *p; p++)
        entries += *p == ',';
    size_t cut = max;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--; /* not inside a UTF-8 character */
    snprintf(out, SHOW_ROOM, "%.*s... (%zu entries)", (int)cut, s, entries);
    return out;
}

const char *wh_dr_show(const char *s, char out[static SHOW_ROOM])
{
    return show_n(s, SHOW_MAX, out);
}

enum wh_err wh_dr_problem(struct dslice *s, bool error, const struct pfields *f, const char *fmt,
                          ...)
{
    char fix[1024], h[SHOW_ROOM], e[SHOW_ROOM];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fix, sizeof(fix), fmt, ap);
    va_end(ap);
    cJSON *p = cJSON_CreateObject();
    if (!p || wh_json_add(s->problems, p) || wh_json_set_str(p, "problem", f->problem) ||
        wh_json_set_str(p, "severity", error ? "error" : "warning") ||
        wh_json_set_str(p, "pod", f->pod ? f->pod : "") ||
        wh_json_set_str(p, "field", f->field ? f->field : "") ||
        wh_json_set_str(p, "holds", show_n(f->holds, 1000, h)) ||
        wh_json_set_str(p, "expected", show_n(f->expected, 1000, e)) ||
        wh_json_set_str(p, "fix", fix))
        return WH_ERR_NOMEM;
    if (error)
        s->errors++;
    else
        s->warnings++;
    return WH_OK;
}

/* ---- judging and the report ------------------------------------------------ */

static enum wh_err judge(struct doc *d, const struct wh_state *st, bool no_drift)
{
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < d->n_sl && !err; i++) {
        struct dslice *s = d->sl[i];
        err = s->hosts < 0 ? wh_dr_topology_unknown(s) : wh_dr_host_rules(s);
        if (!err)
            err = wh_dr_list_rules(s);
        if (!err)
            err = wh_dr_torch_rules(s);
        if (!err)
            err = wh_dr_service_rules(d, s);
        if (!err)
            err = wh_dr_dns_rules(s);
        if (!err)
            err = wh_dr_node_rules(d, s);
    }
    for (size_t i = 0; i < d->n_gr && !err; i++)
        err = wh_dr_megascale_rules(d->gr[i]);
    for (size_t i = 0; i < d->n_pods && !err && !no_drift; i++)
        if (wh_dr_webhook_serves(&d->pods[i]))
            err = wh_dr_drift_pod(d->pods[i].slice, &d->pods[i], st, d->errbuf);
    return err;
}

static int cmp_slice(const void *a, const void *b)
{
    const struct dslice *x = *(struct dslice *const *)a, *y = *(struct dslice *const *)b;
    int c = strcmp(x->ns, y->ns);
    if (!c)
        c = strcmp(wh_kinds[x->kind].kind, wh_kinds[y->kind].kind);
    return c ? c : strcmp(x->name, y->name);
}

static enum wh_err slice_json(struct dslice *s, cJSON *arr, long counts[3])
{
    cJSON *o = cJSON_CreateObject();
    const char *status = s->errors ? "broken" : s->warnings ? "warning" : "ok";
    counts[s->errors ? 2 : s->warnings ? 1 : 0]++;
    if (!o || wh_json_add(arr, o) || wh_json_set_str(o, "namespace", s->ns) ||
        wh_json_set_str(o, "kind", wh_kinds[s->kind].kind) || wh_json_set_str(o, "name", s->name) ||
        wh_json_set(o, "hostsExpected", cJSON_CreateNumber((double)s->hosts)) ||
        wh_json_set(o, "hostsPresent", cJSON_CreateNumber((double)s->n)) ||
        wh_json_set_str(o, "status", status))
        return WH_ERR_NOMEM;
    cJSON *pr = s->problems;
    s->problems = NULL;
    return wh_json_set(o, "problems", pr);
}

static enum wh_err build_report(struct doc *d, bool no_drift, cJSON **report)
{
    if (d->n_sl)
        qsort(d->sl, d->n_sl, sizeof(*d->sl), cmp_slice);
    cJSON *r = cJSON_CreateObject(), *arr = cJSON_CreateArray(), *notes = cJSON_CreateArray();
    long counts[3] = {0, 0, 0};
    enum wh_err err = r && arr && notes ? WH_OK : WH_ERR_NOMEM;
    for (size_t i = 0; i < d->n_sl && !err; i++)
        err = slice_json(d->sl[i], arr, counts);
    if (!err && !d->have_nodes)
        err = wh_json_add(notes, cJSON_CreateString("no node list: node pools, placement, node "
                                                    "labels and unschedulable pods not judged"));
    if (!err && !d->have_services)
        err = wh_json_add(notes, cJSON_CreateString("no service list: headless Services not "
                                                    "judged"));
    if (!err && no_drift)
        err = wh_json_add(notes, cJSON_CreateString("drift not judged"));
    if (err || wh_json_set(r, "pods", cJSON_CreateNumber((double)d->n_pods)) ||
        wh_json_set(r, "ok", cJSON_CreateNumber((double)counts[0])) ||
        wh_json_set(r, "warning", cJSON_CreateNumber((double)counts[1])) ||
        wh_json_set(r, "broken", cJSON_CreateNumber((double)counts[2]))) {
        cJSON_Delete(r);
        cJSON_Delete(arr);
        cJSON_Delete(notes);
        return WH_ERR_NOMEM;
    }
    err = wh_json_set(r, "slices", arr); /* takes arr and notes in every case */
    if (wh_json_set(r, "notes", notes))
        err = WH_ERR_NOMEM;
    if (err) {
        cJSON_Delete(r);
        return err;
    }
    *report = r;
    return WH_OK;
}

static void doc_free(struct doc *d)
{
    for (size_t i = 0; i < d->n_sl; i++) {
        cJSON_Delete(d->sl[i]->problems);
        free(d->sl[i]->pods);
        free(d->sl[i]);
    }
    for (size_t i = 0; i < d->n_gr; i++) {
        free(d->gr[i]->slices);
        free(d->gr[i]);
    }
    for (size_t i = 0; i < d->n_pods; i++)
        free(d->pods[i].c);
    for (size_t i = 0; i < d->n_nrecs; i++)
        free((void *)d->nrecs[i].keys);
    free(d->nrecs);
    wh_nodeindex_free(d->by_label);
    free(d->pods);
    free(d->sl);
    free(d->gr);
    wh_dr_map_free(&d->slices);
    wh_dr_map_free(&d->groups);
    wh_dr_map_free(&d->nodes);
    wh_dr_map_free(&d->services);
    wh_dr_map_free(&d->selectors);
}

enum wh_err wh_doctor_run(const struct wh_doctor_input *in, cJSON **report, char *errbuf)
{
    struct doc d = {.errbuf = errbuf, .have_nodes = in->nodes, .have_services = in->services};
    const cJSON *pods, *nodes = NULL, *services = NULL;
    struct wh_memstate *ms = NULL;
    *report = NULL;
    enum wh_err err = wh_dr_items_of(in->pods, "pods", "Pod", &pods, errbuf);
    if (!err && in->nodes)
        err = wh_dr_items_of(in->nodes, "nodes", "Node", &nodes, errbuf);
    if (!err && in->services)
        err = wh_dr_items_of(in->services, "services", "Service", &services, errbuf);
    if (err)
        return err;
    if (!(ms = wh_memstate_new()))
        err = WH_ERR_NOMEM;
    if (!err && nodes)
        err = wh_memstate_add_nodes(ms, nodes, NULL, errbuf);
    if (!err && nodes)
        err = wh_dr_read_nodes(&d, nodes);
    if (!err && services)
        err = wh_dr_read_services(&d, services);
    if (!err)
        err = wh_dr_read_pods(&d, pods);
    struct wh_state st = ms ? wh_memstate_view(ms) : (struct wh_state){0};
    if (!err)
        err = judge(&d, &st, in->no_drift);
    if (!err)
        err = build_report(&d, in->no_drift, report);
    if (err == WH_ERR_NOMEM)
        wh_fail(errbuf, err, "out of memory");
    doc_free(&d);
    wh_memstate_free(ms);
    return err;
}

bool wh_doctor_ok(const cJSON *report)
{
    const cJSON *b = wh_json_get(report, "broken");
    return cJSON_IsNumber(b) && b->valuedouble == 0;
}
