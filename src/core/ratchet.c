/* ratchet.c: UPDATEs judged by what they change (ratchet.h). */
#include "wh/ratchet.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* qsort */
#include <string.h> /* strcmp */

#include "wh/json.h"              /* wh_json_path */
#include "wh/review.h"            /* wh_review_of_old, wh_review_object, wh_review_info */
#include "wh/mem.h"               /* wh_malloc, wh_free */
#include "wh/validate.h"          /* wh_validate_raycluster_report */
#include "wh/workload_validate.h" /* wh_validate_workload_report */
#include "wh/violations.h"        /* wh_violations_add, wh_violations_free */

/* Problems admitted as already there are each named in a warning, up to
 * this many; the rest are counted in one more. */
#define KEPT_WARNINGS 3

/* Order of keys (rule, part, then value), for qsort and the searches. */
static int key_cmp(const void *a, const void *b)
{
    const struct wh_violation *x = a, *y = b;
    int c = strcmp(x->rule, y->rule);
    if (!c)
        c = strcmp(x->part, y->part);
    return c ? c : strcmp(x->value, y->value);
}

/* How many of v's problems (sorted by key_cmp) have x's key: two bounds
 * found by bisection, so that an UPDATE's n problems against oldObject's m
 * cost n log m, not n * m (thousands of broken worker groups). */
static size_t key_count(const struct wh_violations *v, const struct wh_violation *x)
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(&v->items[mid], x) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t first = lo;
    hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(&v->items[mid], x) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - first;
}

/* Pointers into one array of problems, by key, then by their order in it
 * (for qsort). */
static int ptr_cmp(const void *a, const void *b)
{
    const struct wh_violation *const *x = a, *const *y = b;
    int c = key_cmp(*x, *y);
    return c ? c : (*x > *y) - (*x < *y);
}

/* fresh[i]: now's problem i is not in before. A key counts as often as it
 * occurs: the k-th problem of a key is kept only if before had k of them,
 * so a second broken group of a kept group's name is new. before is sorted
 * (key_cmp). */
static enum wh_err mark_fresh(const struct wh_violations *now, const struct wh_violations *before,
                              bool *fresh, size_t *n_fresh)
{
    const struct wh_violation **by = wh_malloc(now->n * sizeof(*by));
    if (!by)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < now->n; i++)
        by[i] = &now->items[i];
    qsort(by, now->n, sizeof(*by), ptr_cmp);
    size_t rank = 0, kept = 0;
    *n_fresh = 0;
    for (size_t i = 0; i < now->n; i++) {
        if (i && !key_cmp(by[i - 1], by[i])) {
            rank++;
        } else {
            rank = 0;
            kept = key_count(before, by[i]);
        }
        bool f = rank >= kept;
        fresh[by[i] - now->items] = f;
        *n_fresh += f;
    }
    wh_free(by);
    return WH_OK;
}
/* One policy, judging rv's object into d and listing its problems in out
 * (NULL: not asked for). */
typedef enum wh_err (*judge_fn)(const struct wh_review *rv, const void *ctx, struct wh_decision *d,
                                struct wh_violations *out, char *errbuf);

static bool deleting(const cJSON *obj)
{
    const cJSON *ts = wh_json_path(obj, "metadata", "deletionTimestamp", NULL);
    return ts && !cJSON_IsNull(ts) && !(cJSON_IsString(ts) && !*ts->valuestring);
}

/* The denial names the problems this update adds first: its own list
 * stops after a bounded number, and may then name only problems that were
 * in oldObject already (the new group last of hundreds of broken ones). */
static enum wh_err name_fresh(struct wh_decision *d, const struct wh_violations *now,
                              const bool *is_fresh, size_t fresh)
{
    char text[KEPT_WARNINGS * (WH_VIOLATION_MESSAGE_MAX + 2) + 64];
    size_t o = 0, shown = 0;
    for (size_t i = 0; i < now->n && shown < KEPT_WARNINGS; i++) {
        if (!is_fresh[i])
            continue;
        int w = snprintf(text + o, sizeof(text) - o, "%s%s", shown ? "; " : "",
                         now->items[i].message);
        o += w > 0 && (size_t)w < sizeof(text) - o ? (size_t)w : 0;
        shown++;
    }
    if (fresh > shown)
        snprintf(text + o, sizeof(text) - o, "; and %zu more", fresh - shown);
    const char *was = d->message ? d->message : "";
    return wh_decision_deny(d, "new in this update (not in oldObject): %s. All problems: %s", text,
                            was);
}

/* d denied the object: judge oldObject too and admit when every problem
 * was there before. */
static enum wh_err ratchet(const struct wh_review *rv, judge_fn judge, const void *ctx,
                           struct wh_decision *d, struct wh_violations *now, char *errbuf)
{
    struct wh_violations before = {0};
    struct wh_decision od;
    wh_decision_init(&od);
    struct wh_review *old = NULL; /* the same request, about oldObject */
    enum wh_err err = wh_review_of_old(rv, &old);
    if (!err)
        err = judge(old, ctx, &od, &before, errbuf);
    if (!err && before.n)
        qsort(before.items, before.n, sizeof(*before.items), key_cmp);
    size_t fresh = 0;
    bool *is_fresh = err ? NULL : wh_malloc(now->n * sizeof(*is_fresh));
    if (!err && !is_fresh)
        err = WH_ERR_NOMEM;
    if (!err)
        err = mark_fresh(now, &before, is_fresh, &fresh);
    if (!err && fresh == 0 && now->n > 0) {
        wh_free(d->message);
        d->message = NULL;
        d->allowed = true;
        for (size_t i = 0; !err && i < now->n && i < KEPT_WARNINGS; i++)
            err = wh_decision_warn(d, "kept, already broken before this update: %s",
                                   now->items[i].message);
        if (!err && now->n > KEPT_WARNINGS)
            err = wh_decision_warn(d, "and %zu more problems already there before this update",
                                   now->n - KEPT_WARNINGS);
        if (!err)
            err = wh_decision_note(d, "update admitted: its %zu problems were all in oldObject",
                                   now->n);
    } else if (!err) {
        err = name_fresh(d, now, is_fresh, fresh);
        if (!err)
            err = wh_decision_note(d, "update denied: %zu of its %zu problems are not in oldObject",
                                   fresh, now->n);
    }
    wh_free(is_fresh);
    wh_review_free(old);
    wh_decision_free(&od);
    wh_violations_free(&before);
    return err;
}

static enum wh_err decide(const struct wh_review *rv, judge_fn judge, const void *ctx,
                          struct wh_decision *d, char *errbuf)
{
    if (strcmp(wh_review_info(rv)->operation, "UPDATE") || !cJSON_IsObject(wh_review_old_object(rv)))
        return judge(rv, ctx, d, NULL, errbuf);
    if (deleting(wh_review_object(rv)))
        return wh_decision_note(d, "update admitted: the object is being deleted");
    struct wh_violations now = {0};
    enum wh_err err = judge(rv, ctx, d, &now, errbuf);
    if (!err && !d->allowed && now.n > 0)
        err = ratchet(rv, judge, ctx, d, &now, errbuf);
    wh_violations_free(&now);
    return err;
}

static enum wh_err judge_raycluster(const struct wh_review *rv, const void *ctx,
                                    struct wh_decision *d, struct wh_violations *out, char *errbuf)
{
    const struct wh_state *st = ctx;
    if (!out)
        return wh_validate_raycluster(rv, st, d, errbuf);
    struct wh_validation rep = {0};
    enum wh_err err = wh_validate_raycluster_report(rv, st, d, &rep, errbuf);
    for (size_t i = 0; !err && i < rep.n; i++) {
        const struct wh_group_finding *f = &rep.items[i];
        if (f->warning)
            continue;
        char part[600], message[WH_VIOLATION_MESSAGE_MAX + 1];
        /* Keyed by name: a group moved in the list is the same group. */
        snprintf(part, sizeof(part), "%s\x1f%s", *f->group ? f->group : "", f->field);
        snprintf(message, sizeof(message), "worker group \"%s\"%s%s: %s", f->group,
                 *f->field ? " " : "", f->field, f->message);
        err = wh_violations_add(out, f->rule, part, f->key, message);
    }
    wh_validation_free(&rep);
    return err;
}

enum wh_err wh_ratchet_raycluster(const struct wh_review *rv, const struct wh_state *st,
                                  struct wh_decision *d, char *errbuf)
{
    return decide(rv, judge_raycluster, st, d, errbuf);
}

static enum wh_err judge_workload(const struct wh_review *rv, const void *ctx,
                                  struct wh_decision *d, struct wh_violations *out, char *errbuf)
{
    return wh_validate_workload_report(rv, ctx, d, out, errbuf);
}

enum wh_err wh_ratchet_workload(const struct wh_review *rv, const struct wh_state *st,
                                struct wh_decision *d, char *errbuf)
{
    return decide(rv, judge_workload, st, d, errbuf);
}
