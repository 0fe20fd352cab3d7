/* slices.c: the live slice check (see wh/slices.h). */
#include "wh/slices.h"

#include <pthread.h> /* pthread_* */
#include <stdlib.h>  /* calloc, free, qsort */
#include <string.h>  /* strcmp, strdup */
#include <time.h>    /* struct timespec */

#include <cjson/cJSON.h>

#include "wh/clock.h"  /* wh_clock_deadline, wh_clock_wait_flag */
#include "wh/doctor.h" /* wh_doctor_run */
#include "wh/json.h"   /* wh_json_get, wh_json_str0, wh_json_print, wh_json_set_lit, wh_json_add */
#include "wh/log.h"    /* wh_log */

#define OTHER "(other)"

struct wh_slices {
    struct wh_cache *cache; /* borrowed */
    long interval_ms;
    pthread_t th;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t wake;
    bool stop;
    unsigned long long seen; /* cache version of the last check */
    unsigned long checks;
    long ok, broken;
    char *problems; /* exposition lines of tpu_webhook_slice_problems (malloc) */
    char *debug;    /* the /debug/slices document (malloc) */
};

struct pkey {
    const char *ns, *kind, *problem;
};

static int cmp_pkey(const void *a, const void *b)
{
    const struct pkey *x = a, *y = b;
    int c = strcmp(x->ns, y->ns);
    if (!c)
        c = strcmp(x->kind, y->kind);
    return c ? c : strcmp(x->problem, y->problem);
}

/* A label value, escaped as the exposition format wants. */
static enum wh_err add_label(struct wh_buf *b, const char *name, const char *v, bool comma)
{
    enum wh_err err = wh_buf_addf(b, "%s%s=\"", comma ? "," : "", name);
    for (; *v && !err; v++)
        err = *v == '\\'   ? wh_buf_add(b, "\\\\")
              : *v == '"'  ? wh_buf_add(b, "\\\"")
              : *v == '\n' ? wh_buf_add(b, "\\n")
                           : wh_buf_addc(b, *v);
    return err ? err : wh_buf_addc(b, '"');
}

static enum wh_err add_series(struct wh_buf *b, const struct pkey *k, size_t n)
{
    enum wh_err err = wh_buf_add(b, "tpu_webhook_slice_problems{");
    if (!err)
        err = add_label(b, "namespace", k->ns, false);
    if (!err)
        err = add_label(b, "kind", k->kind, true);
    if (!err)
        err = add_label(b, "problem", k->problem, true);
    return err ? err : wh_buf_addf(b, "} %zu\n", n);
}

/* The series of tpu_webhook_slice_problems: one per (namespace, kind,
 * problem), the first WH_SLICES_MAX_SERIES - 1 in order, the rest summed. */
static enum wh_err problem_lines(const cJSON *report, struct wh_buf *b)
{
    size_t n = 0, cap = 0;
    struct pkey *keys = NULL;
    enum wh_err err = WH_OK;
    const cJSON *s, *p;
    cJSON_ArrayForEach(s, wh_json_get(report, "slices"))
    {
        cJSON_ArrayForEach(p, wh_json_get(s, "problems"))
        {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                struct pkey *nk = realloc(keys, cap * sizeof(*nk));
                if (!nk) {
                    free(keys);
                    return WH_ERR_NOMEM;
                }
                keys = nk;
            }
            keys[n++] = (struct pkey){wh_json_str0(s, "namespace"), wh_json_str0(s, "kind"),
                                      wh_json_str0(p, "problem")};
        }
    }
    if (n)
        qsort(keys, n, sizeof(*keys), cmp_pkey);
    size_t series = 0, other = 0;
    for (size_t i = 0; i < n && !err;) {
        size_t j = i + 1;
        while (j < n && !cmp_pkey(&keys[i], &keys[j]))
            j++;
        if (series < WH_SLICES_MAX_SERIES - 1) {
            err = add_series(b, &keys[i], j - i);
            series++;
        } else {
            other += j - i;
        }
        i = j;
    }
    if (!err && other)
        err = add_series(b, &(struct pkey){OTHER, OTHER, OTHER}, other);
    free(keys);
    return err;
}

/* The /debug/slices document from doctor's report (taken apart). */
static enum wh_err debug_doc(cJSON *report, unsigned long checks, char **out)
{
    cJSON *doc = cJSON_CreateObject(), *broken = cJSON_CreateArray();
    enum wh_err err = doc && broken ? WH_OK : WH_ERR_NOMEM;
    if (err) {
        cJSON_Delete(doc);
        cJSON_Delete(broken);
        return err;
    }
    size_t listed = 0;
    bool cut = false;
    cJSON *slices = cJSON_GetObjectItemCaseSensitive(report, "slices");
    for (cJSON *s = slices ? slices->child : NULL, *next; s && !err; s = next) {
        next = s->next;
        if (strcmp(wh_json_str0(s, "status"), "broken"))
            continue;
        if (listed == WH_SLICES_MAX_DEBUG) {
            cut = true;
            break;
        }
        err = wh_json_add(broken, cJSON_DetachItemViaPointer(slices, s));
        listed++;
    }
    static const char *const copied[] = {"pods", "ok", "warning", "broken", "notes"};
    if (wh_json_set_lit(doc, "slices", broken) || err)
        err = WH_ERR_NOMEM;
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]) && !err; i++)
        err = wh_json_set_lit(doc, copied[i],
                              cJSON_DetachItemFromObjectCaseSensitive(report, copied[i]));
    if (!err)
        err = wh_json_set_lit(doc, "checked", cJSON_CreateTrue());
    if (!err)
        err = wh_json_set_lit(doc, "checks", cJSON_CreateNumber((double)checks));
    if (!err)
        err = wh_json_set_lit(doc, "truncated", cJSON_CreateBool(cut));
    if (!err)
        err = wh_json_print(doc, out);
    cJSON_Delete(doc);
    return err;
}

/* One check; the lock is not held. */
static void check(struct wh_slices *s, unsigned long long version)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *pods = NULL, *nodes = NULL, *report = NULL;
    unsigned long long at = version;
    enum wh_err err = wh_cache_slice_lists(s->cache, &pods, &nodes, &at, errbuf);
    if (err == WH_ERR_UNAVAILABLE)
        return; /* before the first sync: nothing to say yet */
    struct wh_doctor_input in = {.pods = pods, .nodes = nodes, .no_drift = true};
    if (!err)
        err = wh_doctor_run(&in, &report, errbuf);
    cJSON_Delete(pods);
    cJSON_Delete(nodes);
    struct wh_buf lines;
    wh_buf_init(&lines, 1 << 20);
    char *debug = NULL;
    long ok = 0, broken = 0;
    if (!err) {
        ok = (long)(cJSON_GetNumberValue(wh_json_get(report, "ok")) +
                    cJSON_GetNumberValue(wh_json_get(report, "warning")));
        broken = (long)cJSON_GetNumberValue(wh_json_get(report, "broken"));
        err = problem_lines(report, &lines);
    }
    pthread_mutex_lock(&s->lock);
    unsigned long checks = ++s->checks;
    pthread_mutex_unlock(&s->lock);
    char *problems = NULL;
    if (!err && !(problems = strdup(wh_buf_len(&lines) ? wh_buf_ptr(&lines) : "")))
        err = WH_ERR_NOMEM;
    wh_buf_free(&lines);
    if (!err)
        err = debug_doc(report, checks, &debug);
    cJSON_Delete(report);
    if (err) {
        wh_log(WH_LOG_WARN, "slice_check_failed", "error", WH_F_STR,
               *errbuf ? errbuf : "out of memory", (char *)NULL);
        free(problems);
        return; /* the last result stays; the next change retries */
    }
    pthread_mutex_lock(&s->lock);
    bool changed = s->broken != broken;
    s->seen = at;
    s->ok = ok;
    s->broken = broken;
    free(s->problems);
    s->problems = problems;
    free(s->debug);
    s->debug = debug;
    pthread_mutex_unlock(&s->lock);
    if (changed || checks == 1)
        wh_log(broken ? WH_LOG_WARN : WH_LOG_NOTICE, "slices_checked", "ok", WH_F_INT,
               (long long)ok, "broken", WH_F_INT, (long long)broken, (char *)NULL);
}

static void *slices_main(void *arg)
{
    struct wh_slices *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        struct timespec until;
        wh_clock_deadline(&until, s->interval_ms);
        if (wh_clock_wait_flag(&s->wake, &s->lock, &s->stop, &until))
            break;
        /* Debounced: changes that arrive within one interval make one
         * check. */
        unsigned long long v = wh_cache_version(s->cache);
        bool due = !s->checks || v != s->seen;
        pthread_mutex_unlock(&s->lock);
        if (due)
            check(s, v);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

struct wh_slices *wh_slices_start(struct wh_cache *cache, long interval_ms, char *errbuf)
{
    struct wh_slices *s = calloc(1, sizeof(*s));
    if (!s) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->cache = cache;
    s->interval_ms = interval_ms <= 0                          ? WH_SLICES_DEFAULT_INTERVAL_MS
                     : interval_ms < WH_SLICES_MIN_INTERVAL_MS ? WH_SLICES_MIN_INTERVAL_MS
                                                               : interval_ms;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->lock, NULL);
    if (pthread_create(&s->th, NULL, slices_main, s)) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        free(s);
        wh_fail(errbuf, WH_ERR_NOMEM, "cannot start the slice check thread");
        return NULL;
    }
    return s;
}

void wh_slices_free(struct wh_slices *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->th, NULL);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s->problems);
    free(s->debug);
    free(s);
}

enum wh_err wh_slices_metrics(struct wh_slices *s, struct wh_buf *out)
{
    pthread_mutex_lock(&s->lock);
    enum wh_err err = wh_buf_addf(
        out,
        "# HELP tpu_webhook_slices TPU slices of the pod cache by whether doctor's rules say they "
        "can start (a slice with warnings only is ok). KubeRay worker slices only, and Service "
        "and drift problems are not judged: run tpu-webhook doctor for those "
        "(docs/troubleshooting.md).\n"
        "# TYPE tpu_webhook_slices gauge\n"
        "tpu_webhook_slices{state=\"ok\"} %ld\ntpu_webhook_slices{state=\"broken\"} %ld\n"
        "# HELP tpu_webhook_slice_checks_total Slice checks run on the caches.\n"
        "# TYPE tpu_webhook_slice_checks_total counter\n"
        "tpu_webhook_slice_checks_total %lu\n",
        s->ok, s->broken, s->checks);
    /* No series, no family: an empty family would be a TYPE without samples. */
    if (!err && s->problems && *s->problems)
        err = wh_buf_addf(
            out,
            "# HELP tpu_webhook_slice_problems Problems doctor's rules find in the cached TPU "
            "slices, by namespace, slice kind and problem id; at most %d series, the rest summed "
            "in namespace=kind=problem=\"" OTHER "\". Never service-* or drift (Services are "
            "not cached; the cache is not the whole pod).\n"
            "# TYPE tpu_webhook_slice_problems gauge\n%s",
            WH_SLICES_MAX_SERIES, s->problems);
    pthread_mutex_unlock(&s->lock);
    return err;
}

enum wh_err wh_slices_debug(struct wh_slices *s, struct wh_buf *out)
{
    pthread_mutex_lock(&s->lock);
    enum wh_err err = s->debug
                          ? wh_buf_add(out, s->debug)
                          : wh_buf_add(out, "{\"checked\":false,\"checks\":0,\"slices\":[],\"notes\":"
                                            "[\"no check yet: the caches have not synced\"]}");
    pthread_mutex_unlock(&s->lock);
    return err;
}

unsigned long wh_slices_checks(struct wh_slices *s)
{
    pthread_mutex_lock(&s->lock);
    unsigned long n = s->checks;
    pthread_mutex_unlock(&s->lock);
    return n;
}
