/* table.c: a doctor report as the table people read (doctor.h,
 * wh_doctor_table); every value from the cluster escaped. */
#include "wh/doctor.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strlen */

#include "wh/json.h" /* wh_json_* */
#include "wh/term.h" /* wh_term_escape, wh_term_escaped_len */

/* Widest value of key among the slices as the table shows it (escaped),
 * between min and 60. */
static int width(const cJSON *slices, const char *key, int min)
{
    int w = min;
    for (const cJSON *s = slices ? slices->child : NULL; s; s = s->next) {
        const char *v = wh_json_str0(s, key);
        size_t l = wh_term_escaped_len(v, strlen(v));
        w = (int)l > w ? (l > 60 ? 60 : (int)l) : w;
    }
    return w;
}

/* A value from the cluster, escaped (term.h: a pod's name or env value must
 * not drive the reader's terminal), then padded to pad bytes. */
static enum wh_err cell(struct wh_buf *out, const char *v, int pad)
{
    size_t before = wh_buf_len(out);
    enum wh_err err = wh_term_escape(out, v, strlen(v));
    for (size_t l = wh_buf_len(out) - before; !err && (int)l < pad; l++)
        err = wh_buf_addc(out, ' ');
    return err;
}

/* Text around escaped values: each %s of fmt is the next value of vals. */
static enum wh_err line(struct wh_buf *out, const char *fmt, const char *const *vals)
{
    enum wh_err err = WH_OK;
    for (const char *f = fmt; *f && !err; f++) {
        if (f[0] == '%' && f[1] == 's') {
            err = cell(out, *vals++, 0);
            f++;
        } else {
            err = wh_buf_addc(out, *f);
        }
    }
    return err;
}

static enum wh_err problem_lines(const cJSON *s, struct wh_buf *out)
{
    enum wh_err err = WH_OK;
    const cJSON *pr = wh_json_get(s, "problems");
    for (const cJSON *p = pr ? pr->child : NULL; p && !err; p = p->next) {
        const char *pod = wh_json_str0(p, "pod");
        err = wh_buf_add(out,
                         strcmp(wh_json_str0(p, "severity"), "error") ? "warning: " : "error: ");
        const char *const v[] = {wh_json_str0(s, "kind"), wh_json_str0(s, "namespace"),
                                 wh_json_str0(s, "name"), wh_json_str0(p, "problem")};
        if (!err)
            err = line(out, "%s %s/%s: [%s] ", v);
        if (!err && *pod)
            err = line(out, "pod %s: ", (const char *const[]){pod});
        const char *const w[] = {wh_json_str0(p, "field"), wh_json_str0(p, "holds"),
                                 wh_json_str0(p, "expected"), wh_json_str0(p, "fix")};
        if (!err)
            err = line(out, "%s holds %s, should hold %s; fix: %s\n", w);
    }
    return err;
}

enum wh_err wh_doctor_table(const cJSON *report, struct wh_buf *out)
{
    const cJSON *slices = wh_json_get(report, "slices");
    int wn = width(slices, "namespace", 9), wk = width(slices, "kind", 4),
        ws = width(slices, "name", 5);
    enum wh_err err = wh_buf_addf(out, "%-*s  %-*s  %-*s  %-7s  %-7s  %s\n", wn, "NAMESPACE", wk,
                                  "KIND", ws, "SLICE", "HOSTS", "STATUS", "PROBLEMS");
    for (const cJSON *s = slices ? slices->child : NULL; s && !err; s = s->next) {
        char hosts[48];
        double e = cJSON_GetNumberValue(wh_json_get(s, "hostsExpected"));
        double n = cJSON_GetNumberValue(wh_json_get(s, "hostsPresent"));
        if (e < 0)
            snprintf(hosts, sizeof(hosts), "%.0f/?", n);
        else
            snprintf(hosts, sizeof(hosts), "%.0f/%.0f", n, e);
        err = cell(out, wh_json_str0(s, "namespace"), wn);
        if (!err)
            err = wh_buf_add(out, "  ");
        if (!err)
            err = cell(out, wh_json_str0(s, "kind"), wk);
        if (!err)
            err = wh_buf_add(out, "  ");
        if (!err)
            err = cell(out, wh_json_str0(s, "name"), ws);
        if (!err)
            err = wh_buf_addf(out, "  %-7s  ", hosts);
        if (!err)
            err = cell(out, wh_json_str0(s, "status"), 7);
        if (!err)
            err = wh_buf_addf(out, "  %d\n", cJSON_GetArraySize(wh_json_get(s, "problems")));
    }
    if (!err && slices && slices->child)
        err = wh_buf_addc(out, '\n');
    for (const cJSON *s = slices ? slices->child : NULL; s && !err; s = s->next)
        err = problem_lines(s, out);
    const cJSON *notes = wh_json_get(report, "notes");
    for (const cJSON *nt = notes ? notes->child : NULL; nt && !err; nt = nt->next) {
        const char *text = cJSON_GetStringValue(nt);
        err = line(out, "note: %s\n", (const char *const[]){text ? text : ""});
    }
    if (!err)
        err = wh_buf_addf(out, "%.0f TPU pods in %d slices: %.0f ok, %.0f warning, %.0f broken\n",
                          cJSON_GetNumberValue(wh_json_get(report, "pods")),
                          cJSON_GetArraySize(slices),
                          cJSON_GetNumberValue(wh_json_get(report, "ok")),
                          cJSON_GetNumberValue(wh_json_get(report, "warning")),
                          cJSON_GetNumberValue(wh_json_get(report, "broken")));
    return err;
}
