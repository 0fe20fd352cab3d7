/* tpuenv.c: TPU facts shared by the KubeRay and the workload mutation. */
#include "wh/tpuenv.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* memchr, memcpy, strcmp, strlen */
#ifdef __SSE2__
#include <emmintrin.h> /* _mm_* */
#endif

#include "wh/decision.h" /* wh_decision_keep */
#include "wh/envtab.h"   /* wh_envtab */
#include "wh/json.h"     /* wh_json_str, wh_json_get, wh_parse_long */
#include "wh/mem.h"      /* wh_calloc, wh_malloc, wh_free */
#include "wh/podspec.h"  /* wh_container_tpu, wh_env_lookup */
#include "wh/utf8.h"     /* wh_utf8_cut */

enum wh_err wh_tpu_containers_collect(const cJSON *containers, struct wh_tpu_containers *out,
                                      char *errbuf)
{
    int n = cJSON_GetArraySize(containers);
    out->n = 0;
    out->chips = 0;
    out->items = wh_calloc(n > 0 ? (size_t)n : 1, sizeof(*out->items));
    if (!out->items)
        return WH_ERR_NOMEM;
    int i = 0;
    for (const cJSON *k = containers->child; k; k = k->next, i++) {
        struct wh_tpu_request rq;
        char why[WH_ERRBUF_LEN];
        enum wh_err err = wh_container_tpu(k, &rq, why);
        if (err) {
            wh_tpu_containers_free(out);
            return err == WH_ERR_NOMEM ? err
                                       : wh_fail(errbuf, err, "spec.containers[%d]: %s", i, why);
        }
        if (!rq.requests_tpu)
            continue;
        out->items[out->n].obj = k;
        out->items[out->n].index = i;
        out->items[out->n].chips = rq.chips;
        out->n++;
        out->chips += rq.chips;
    }
    return WH_OK;
}

void wh_tpu_containers_free(struct wh_tpu_containers *tc)
{
    if (!tc)
        return;
    wh_free(tc->items);
    tc->items = NULL;
    tc->n = 0;
}

void wh_torch_topology(const struct wh_topology *t, bool tpu7x, char *out, size_t n)
{
    snprintf(out, n, "%ld,%ld,%ld%s", t->dims[0], t->dims[1], t->dims[2], tpu7x ? ",2" : "");
}

long wh_host_count(const char *hostnames)
{
    long hosts = 1;
    size_t n = strlen(hostnames), i = 0;
#ifdef __SSE2__
    /* 16 bytes per step (SSE2 is part of x86-64): each byte lane counts its
     * commas (a match is -1, subtracted) for up to 255 steps, then the lanes
     * are summed. The list of 256 hosts is counted several times per pod;
     * strchr per comma took 1.7 us, this 0.5 with its strlen. */
    const __m128i comma = _mm_set1_epi8(','), zero = _mm_setzero_si128();
    __m128i total = zero;
    while (i + 16 <= n) {
        __m128i lanes = zero;
        for (int k = 0; k < 255 && i + 16 <= n; k++, i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(hostnames + i));
            lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(v, comma));
        }
        total = _mm_add_epi64(total, _mm_sad_epu8(lanes, zero));
    }
    hosts += (long)_mm_cvtsi128_si64(total) +
             (long)_mm_cvtsi128_si64(_mm_unpackhi_epi64(total, total));
#endif
    for (; i < n; i++)
        hosts += hostnames[i] == ',';
    return hosts;
}

/* Written straight into the reserved memory, without a checked append per
 * piece: at 256 TPU7x hosts the list has 2,048 entries of ~45 bytes and is
 * built for every pod (5% of the server's CPU with the appends). */
enum wh_err wh_host_ports(const char *hostnames, long per_host, struct wh_buf *b, bool *too_many)
{
    long hosts = wh_host_count(hostnames);
    *too_many = per_host > WH_MAX_TORCH_ADDRESSES || per_host * hosts > WH_MAX_TORCH_ADDRESSES;
    if (*too_many || per_host <= 0)
        return WH_OK;
    /* At most strlen + 8 bytes per entry: ',' (one fewer than entries), the
     * host, ':' and at most 5 digits (ports below 8471 + 65536). */
    size_t text_len = strlen(hostnames);
    WH_TRY(wh_buf_reserve(b, text_len * (size_t)per_host + (size_t)(per_host * hosts) * 8));
    /* ":<port>" of each k, formatted once for all hosts: PORT_SLOT bytes
     * each, the length first (at most ":74006", as per_host <= 65536). */
    enum { PORT_SLOT = 8 };
    char *ports = wh_malloc((size_t)per_host * PORT_SLOT);
    if (!ports)
        return WH_ERR_NOMEM;
    for (long k = 0; k < per_host; k++) {
        char digits[8], *slot = ports + k * PORT_SLOT;
        size_t n = 0;
        for (unsigned long v = (unsigned long)(WH_TPU_PROCESS_PORT_BASE + k); v; v /= 10)
            digits[n++] = (char)('0' + v % 10);
        slot[0] = (char)(n + 1);
        slot[1] = ':';
        for (size_t i = 0; i < n; i++)
            slot[2 + i] = digits[n - 1 - i];
    }
    char *o = b->ptr + b->len;
    bool comma = b->len > 0;
    const char *start = hostnames, *text_end = hostnames + text_len;
    for (long h = 0; h < hosts; h++) {
        const char *end = memchr(start, ',', (size_t)(text_end - start));
        size_t len = end ? (size_t)(end - start) : (size_t)(text_end - start);
        for (long k = 0; k < per_host; k++) {
            const char *slot = ports + k * PORT_SLOT;
            if (comma)
                *o++ = ',';
            comma = true;
            memcpy(o, start, len);
            o += len;
            memcpy(o, slot + 1, (size_t)slot[0]);
            o += slot[0];
        }
        start = end ? end + 1 : text_end;
    }
    b->len = (size_t)(o - b->ptr);
    b->ptr[b->len] = '\0';
    wh_free(ports);
    return WH_OK;
}

void wh_port_list_init(struct wh_port_list *pl)
{
    pl->text = NULL;
    wh_buf_init(&pl->hostnames, (size_t)-1 / 2);
    pl->per_host = 0;
    pl->too_many = false;
}

void wh_port_list_free(struct wh_port_list *pl)
{
    if (!pl)
        return;
    wh_buf_free(&pl->hostnames);
}

enum wh_err wh_port_list_get(struct wh_port_list *pl, struct wh_decision *d, const char *hostnames,
                             long per_host, size_t max, const char **out, bool *too_many)
{
    if (!pl->text || pl->per_host != per_host || strcmp(wh_buf_ptr(&pl->hostnames), hostnames)) {
        struct wh_buf text;
        wh_buf_init(&text, max);
        pl->text = NULL;
        wh_buf_reset(&pl->hostnames);
        enum wh_err err = wh_host_ports(hostnames, per_host, &text, &pl->too_many);
        char *kept = err ? NULL : wh_buf_take(&text, NULL);
        if (!err && !kept)
            err = WH_ERR_NOMEM;
        wh_buf_free(&text);
        /* d owns what it keeps: an earlier list stays valid for the
         * containers still to be written from it. */
        if (!err)
            err = wh_decision_keep(d, kept);
        if (!err)
            err = wh_buf_add(&pl->hostnames, hostnames);
        if (err)
            return err;
        pl->text = kept;
        pl->per_host = per_host;
    }
    *out = pl->text;
    *too_many = pl->too_many;
    return WH_OK;
}

long wh_tpu_worker_id(long host, unsigned n_tpu, unsigned ci, bool tpu7x)
{
    return tpu7x ? host * (long)n_tpu + (long)ci : host;
}

const char *wh_env_duplicate(const cJSON *env, int *first, int *second)
{
    if (!cJSON_IsArray(env))
        return NULL;
    for (int k = 0; k < WH_ENV__COUNT; k++) {
        const char *name = wh_envtab[k].name;
        *first = -1;
        int i = 0;
        for (const cJSON *e = env->child; e; e = e->next, i++) {
            const char *n = wh_json_str(e, "name");
            if (!n || strcmp(n, name))
                continue;
            if (*first >= 0) {
                *second = i;
                return name;
            }
            *first = i;
        }
    }
    return NULL;
}

int wh_identity_conflicts(const cJSON *env, const struct wh_identity_check *c,
                          struct wh_identity_problem out[2])
{
    if (c->hosts <= 1)
        return 0;
    int n = 0;
    struct wh_env_lookup lk;
    wh_env_lookup(env, "TPU_WORKER_ID", &lk);
    long id;
    bool number = lk.index >= 0 && *lk.value && wh_parse_long(lk.value, &id);
    bool own = number && c->host >= 0 && (id == c->host || id == c->worker_id);
    if (c->check_id && lk.index >= 0 && *lk.value && !own) {
        out[n].rule = WH_RULE_IDENTITY_WORKER_ID;
        if (c->host < 0)
            snprintf(out[n].text, sizeof(out[n].text),
                     "sets TPU_WORKER_ID \"%.*s\" (env[%d]), one value for all %ld hosts of "
                     "the slice; remove it: each pod gets its own from its index",
                     (int)wh_utf8_cut(lk.value, 32), lk.value, lk.index, c->hosts);
        else
            snprintf(out[n].text, sizeof(out[n].text),
                     "sets TPU_WORKER_ID \"%.*s\" (env[%d]), but the pod is host %ld of the %ld "
                     "hosts of its slice; remove it: the webhook (or GKE) gives each pod its own",
                     (int)wh_utf8_cut(lk.value, 32), lk.value, lk.index, c->host, c->hosts);
        n++;
    }
    wh_env_lookup(env, "TPU_WORKER_HOSTNAMES", &lk);
    if (lk.index >= 0 && !strcmp(lk.value, "localhost")) {
        out[n].rule = WH_RULE_IDENTITY_LOCALHOST;
        snprintf(out[n].text, sizeof(out[n].text),
                 "sets TPU_WORKER_HOSTNAMES \"localhost\" (env[%d]), a single-host value, but "
                 "its slice has %ld hosts; remove it: the webhook (or GKE) lists the slice's "
                 "peers",
                 lk.index, c->hosts);
        n++;
    }
    return n;
}

bool wh_hostnet_dns_conflict(const cJSON *spec, const char *field, long pods, const char *names,
                             char *why, size_t n)
{
    const char *policy = wh_json_str(spec, "dnsPolicy");
    if (pods <= 1 || !cJSON_IsTrue(wh_json_get(spec, "hostNetwork")) ||
        (policy && !strcmp(policy, "ClusterFirstWithHostNet")))
        return false;
    snprintf(why, n,
             "%s.hostNetwork is true but %s.dnsPolicy is %s%.*s%s; set %s.dnsPolicy: "
             "ClusterFirstWithHostNet, or the cluster-DNS names the %ld pods reach each other by "
             "(%s) do not resolve",
             field, field, policy ? "\"" : "", policy ? (int)wh_utf8_cut(policy, 40) : 20,
             policy ? policy : "unset (ClusterFirst)", policy ? "\"" : "", field, pods, names);
    return true;
}
