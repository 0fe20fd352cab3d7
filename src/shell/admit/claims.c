/* claims.c: legacy worker-id claims as Leases (see claims.h and
 * docs/legacy-indices.md). */
#include "wh/claims.h"

#include <pthread.h>    /* pthread_create, pthread_cond_init */
#include <stdatomic.h>  /* atomic_load */
#include <stdint.h>     /* uintptr_t, INT32_MAX */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* calloc, free */
#include <string.h>     /* strdup, strcmp, strnlen */
#include <sys/random.h> /* getrandom */
#include <time.h>       /* clock_gettime, gmtime_r, timegm */

#include <cjson/cJSON.h>
#include <openssl/evp.h> /* EVP_DigestInit_ex, EVP_sha256 */

#include "wh/clock.h"   /* wh_clock_ms, wh_nap */
#include "wh/json.h"    /* wh_json_whole */
#include "wh/log.h"     /* wh_log */
#include "wh/podspec.h" /* WH_ANN_CLAIM_NONCE */
#include "claims_impl.h"

#define LEASES_PATH "/apis/coordination.k8s.io/v1/namespaces/%s/leases"
/* Tells this claim's own Lease from any other (see take()), and names the
 * pod it was taken for (wh_claims_pod_seen). */
#define NONCE_ANN WH_ANN_CLAIM_NONCE
/* The RayCluster instance a claim was made for (wh_claim_key.cluster_uid). */
#define CLUSTER_UID_ANN "tpu-webhook/ray-cluster-uid"
/* Claims of deleted cluster instances one take() deletes at most; each
 * costs a GET and a DELETE, and only a pathological churn of instances
 * meets more than one per id. */
#define MAX_SUPERSEDE 3
#define BACKOFF_FIRST_MS 50L

void wh_claims_name(const char *ns, const char *cluster, const char *group, long replica,
                    long worker_id, char out[WH_CLAIMS_NAME_LEN])
{
    /* NUL-separated so that ("a-b", "c") and ("a", "b-c") differ. */
    char nums[64];
    int nl = snprintf(nums, sizeof(nums), "%ld%c%ld", replica, '\0', worker_id);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dl = 0;
    bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) &&
              EVP_DigestUpdate(md, ns, strlen(ns) + 1) &&
              EVP_DigestUpdate(md, cluster, strlen(cluster) + 1) &&
              EVP_DigestUpdate(md, group, strlen(group) + 1) &&
              EVP_DigestUpdate(md, nums, (size_t)nl + 1) && EVP_DigestFinal_ex(md, d, &dl);
    EVP_MD_CTX_free(md);
    int o = snprintf(out, WH_CLAIMS_NAME_LEN, "tpu-worker-id-");
    for (unsigned i = 0; i < 20; i++)
        o += snprintf(out + o, WH_CLAIMS_NAME_LEN - (size_t)o, "%02x", ok && i < dl ? d[i] : 0u);
}

/* RFC 3339 with microseconds, as Kubernetes writes MicroTime. */
static void micro_time(char out[40])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 40 - n, ".%06ldZ", ts.tv_nsec / 1000);
}

/* The n-digit number at s (digits only, no sign or space), or -1. */
static int fixed_digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

long long wh_claims_parse_time_us(const char *s)
{
    /* "YYYY-MM-DDTHH:MM:SS": value offsets, widths, ranges; the separators
     * are checked below. */
    static const struct {
        int at, width, min, max;
    } field[6] = {
        {0, 4, 1970, 9999}, {5, 2, 1, 12},  {8, 2, 1, 31},
        {11, 2, 0, 23},     {14, 2, 0, 59}, {17, 2, 0, 60},
    };
    int v[6];
    if (!s || strnlen(s, 19) < 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':')
        return -1;
    for (int i = 0; i < 6; i++) {
        v[i] = fixed_digits(s + field[i].at, field[i].width);
        if (v[i] < field[i].min || v[i] > field[i].max)
            return -1;
    }
    struct tm tm = {.tm_year = v[0] - 1900,
                    .tm_mon = v[1] - 1,
                    .tm_mday = v[2],
                    .tm_hour = v[3],
                    .tm_min = v[4],
                    .tm_sec = v[5]};
    long long us = (long long)timegm(&tm) * 1000000;
    const char *p = s + 19;
    if (*p == '.') {
        long long frac = 0, scale = 1000000;
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (scale > 1) {
                scale /= 10;
                frac += (*p - '0') * scale;
            }
        us += frac;
    }
    /* RFC 3339 requires a zone: Z, or an offset east (+) or west (-) of UTC. */
    if ((*p == 'Z' || *p == 'z') && !p[1])
        return us;
    if (*p != '+' && *p != '-')
        return -1;
    int oh = fixed_digits(p + 1, 2); /* stops at the first non-digit, NUL included */
    int om = oh >= 0 && p[3] == ':' ? fixed_digits(p + 4, 2) : -1;
    if (oh < 0 || oh > 23 || om < 0 || om > 59 || p[6])
        return -1;
    us -= (*p == '+' ? 1 : -1) * (long long)(oh * 3600 + om * 60) * 1000000;
    return us >= 0 ? us : -1;
}

/* "HTTP <status>: <Status.message>" of an error answer. */
void wh_claim_describe_answer(long status, const struct wh_buf *resp, char *out, size_t n)
{
    cJSON *j = cJSON_ParseWithLength(wh_buf_ptr(resp), wh_buf_len(resp));
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "message"));
    snprintf(out, n, "HTTP %ld%s%.300s", status, msg ? ": " : "", msg ? msg : "");
    cJSON_Delete(j);
}

/* The Lease of a claim as JSON text; free with cJSON_free (cJSON's heap may
 * be the request's arena, see reqmem.h). */
static char *lease_body(const struct wh_claims *c, const char *name, const struct wh_claim_key *k,
                        const char *nonce)
{
    char now[40], num[32];
    micro_time(now);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "coordination.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", "Lease");
    cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(meta, "name", name);
    cJSON_AddStringToObject(meta, "namespace", c->ns);
    cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
    cJSON_AddStringToObject(labels, "app.kubernetes.io/managed-by", "tpu-webhook");
    cJSON_AddStringToObject(labels, "app.kubernetes.io/component", "worker-id-claim");
    /* What the hashed name stands for, for people and for kubectl. */
    cJSON *ann = cJSON_AddObjectToObject(meta, "annotations");
    cJSON_AddStringToObject(ann, "tpu-webhook/pod-namespace", k->ns);
    cJSON_AddStringToObject(ann, "tpu-webhook/ray-cluster", k->cluster);
    cJSON_AddStringToObject(ann, "tpu-webhook/worker-group", k->group);
    snprintf(num, sizeof(num), "%ld", k->replica);
    cJSON_AddStringToObject(ann, "tpu-webhook/replica", num);
    snprintf(num, sizeof(num), "%ld", k->worker_id);
    cJSON_AddStringToObject(ann, "tpu-webhook/worker-id", num);
    if (k->cluster_uid && k->cluster_uid[0])
        cJSON_AddStringToObject(ann, CLUSTER_UID_ANN, k->cluster_uid);
    cJSON_AddStringToObject(ann, NONCE_ANN, nonce);
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddStringToObject(spec, "holderIdentity", c->holder);
    cJSON_AddNumberToObject(spec, "leaseDurationSeconds", (double)c->lifetime_s);
    cJSON_AddStringToObject(spec, "acquireTime", now);
    cJSON_AddStringToObject(spec, "renewTime", now);
    char *text = cJSON_PrintUnformatted(o); /* NULL on OOM, including a failed add above */
    cJSON_Delete(o);
    return text;
}

static void count_outcome(struct wh_claims *c, enum wh_claim_outcome oc, long long us,
                          uint64_t api_errors)
{
    double s = (double)us / 1e6;
    pthread_mutex_lock(&c->mu);
    if (oc == WH_CLAIM_TAKEN)
        c->st.taken++;
    else if (oc == WH_CLAIM_HELD)
        c->st.held++;
    else
        c->st.failed++;
    c->st.api_errors += api_errors;
    for (size_t i = 0; i < WH_MCLAIM_BUCKETS; i++)
        if (s <= wh_mclaim_bounds[i])
            c->st.dur_buckets[i]++;
    c->st.dur_count++;
    c->st.dur_sum_s += s;
    pthread_mutex_unlock(&c->mu);
}

/* What wh_claims_release() needs of a Lease the API server answered with. */
static void fill_ticket(const cJSON *lease, const char *name, struct wh_claim_ticket *t)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(lease, "metadata");
    const char *uid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "uid"));
    const char *rv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
    snprintf(t->name, sizeof(t->name), "%s", name);
    /* An unusable value stays empty: release then refuses to guess. */
    snprintf(t->uid, sizeof(t->uid), "%s", uid && strlen(uid) < sizeof(t->uid) ? uid : "");
    snprintf(t->rv, sizeof(t->rv), "%s", rv && strlen(rv) < sizeof(t->rv) ? rv : "");
}

/* fill_ticket() from the Lease a created answer carries. */
static void ticket_of_answer(const struct wh_buf *resp, const char *name, struct wh_claim_ticket *t)
{
    cJSON *j = cJSON_ParseWithLength(wh_buf_ptr(resp), wh_buf_len(resp));
    fill_ticket(j, name, t);
    cJSON_Delete(j);
}

/* Whose Lease answered a 409: this claim's own (an attempt whose answer
 * was lost created it: the nonce tells), one of a deleted instance of the
 * RayCluster (it records another cluster uid), or a live claim (HELD). */
enum found { FOUND_HELD, FOUND_MINE, FOUND_STALE, FOUND_UNKNOWN };

/* A claim of a deleted instance of the RayCluster, as read back. */
struct stale_claim {
    struct wh_claim_ticket lease; /* what its deletion needs */
    char cluster_uid[128];        /* the instance it was made for */
};

static const char *annotation(const cJSON *lease, const char *key)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(lease, "metadata");
    return cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, "annotations"), key));
}

/* GET the Lease name and tell (enum found). MINE fills ticket, STALE fills
 * stale (what its deletion needs). */
static enum found read_claim(struct wh_claims *c, const char *name, const struct wh_claim_key *k,
                             const char *nonce, long left, struct wh_claim_ticket *ticket,
                             struct stale_claim *stale)
{
    char path[700], errbuf[WH_ERRBUF_LEN] = "";
    snprintf(path, sizeof(path), "%s/%s", c->path, name);
    struct wh_buf resp;
    wh_buf_init(&resp, RESP_MAX);
    struct wh_kube_answer ans = {0};
    enum wh_err err = wh_kube_request(c->kube, "GET", path, NULL, 0,
                                      left < ATTEMPT_MAX_MS ? left : ATTEMPT_MAX_MS, &resp, &ans,
                                      errbuf);
    if (err || (ans.status != 200 && ans.status != 404)) {
        wh_buf_free(&resp);
        return FOUND_UNKNOWN; /* ask again while the budget lasts */
    }
    /* 404: gone since the 409 (swept, or superseded by another replica):
     * HELD, and the pod is decided again. */
    cJSON *j = ans.status == 200 ? cJSON_ParseWithLength(wh_buf_ptr(&resp), wh_buf_len(&resp))
                                 : NULL;
    wh_buf_free(&resp);
    const char *seen = annotation(j, NONCE_ANN);
    const char *uid = annotation(j, CLUSTER_UID_ANN);
    enum found f = FOUND_HELD;
    if (seen && !strcmp(seen, nonce)) {
        f = FOUND_MINE;
        fill_ticket(j, name, ticket);
    } else if (uid && uid[0] && k->cluster_uid && k->cluster_uid[0] && strcmp(uid, k->cluster_uid)) {
        f = FOUND_STALE;
        fill_ticket(j, name, &stale->lease);
        snprintf(stale->cluster_uid, sizeof(stale->cluster_uid), "%s", uid);
    }
    cJSON_Delete(j);
    return f;
}

void wh_claims_nonce(char out[WH_CLAIMS_NONCE_LEN])
{
    unsigned long long rnd[2] = {0, 0};
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        rnd[0] = (unsigned long long)wh_clock_us() ^ ((unsigned long long)(uintptr_t)&rnd << 16);
    snprintf(out, WH_CLAIMS_NONCE_LEN, "%016llx%016llx", rnd[0], rnd[1]);
}

/* One POST of the claim's Lease, given left ms of the budget; *err is the
 * request's. False when the body could not be built (nothing was sent). */
static bool post_claim(struct wh_claims *c, const char *name, const struct wh_claim_key *k,
                       const char *nonce, long left, struct wh_buf *resp,
                       struct wh_kube_answer *ans, char *errbuf, enum wh_err *err)
{
    /* Built per attempt: the claim's lifetime counts from the attempt that
     * may create it, not from the first one. A body stamped before a
     * Retry-After wait made a Lease that was already (nearly) expired when
     * created, so a sweeper deleted it while its pod was still on its way to
     * the other replicas, and the id was handed out twice. */
    char *body = lease_body(c, name, k, nonce);
    if (!body)
        return false;
    *err = wh_kube_request(c->kube, "POST", c->path, body, strlen(body),
                           left < ATTEMPT_MAX_MS ? left : ATTEMPT_MAX_MS, resp, ans, errbuf);
    cJSON_free(body);
    return true;
}

static void log_claim_failed(const char *name, const struct wh_claim_key *k, const char *why)
{
    wh_log(WH_LOG_WARN, "claim_failed", "lease", WH_F_STR, name, "namespace", WH_F_STR, k->ns,
           "cluster", WH_F_STR, k->cluster, "group", WH_F_STR, k->group, "replica", WH_F_INT,
           (long long)k->replica, "worker_id", WH_F_INT, (long long)k->worker_id, "error", WH_F_STR,
           why, (char *)NULL);
}

/* Delete the claim of a deleted instance of k's RayCluster (stale, as read
 * by read_claim), with its uid and resourceVersion as preconditions: a
 * claim made again meanwhile (by a replica admitting the new instance) is
 * left alone. *api_error when the API server did not answer. */
static void supersede(struct wh_claims *c, const struct wh_claim_key *k,
                      const struct stale_claim *stale, long left, bool *api_error)
{
    const struct wh_claim_ticket *t = &stale->lease;
    bool deleted = false;
    *api_error = false;
    if (!wh_claim_str_ok(t->uid) || !wh_claim_str_ok(t->rv))
        return;
    *api_error = !wh_claim_delete(c, t->name, t->uid, t->rv,
                                  left < ATTEMPT_MAX_MS ? left : ATTEMPT_MAX_MS, &deleted, NULL);
    if (!deleted)
        return;
    pthread_mutex_lock(&c->mu);
    c->st.superseded_recreated++;
    pthread_mutex_unlock(&c->mu);
    wh_log(WH_LOG_INFO, "stale_claim_deleted", "lease", WH_F_STR, t->name, "namespace", WH_F_STR,
           k->ns, "cluster", WH_F_STR, k->cluster, "group", WH_F_STR, k->group, "replica", WH_F_INT,
           (long long)k->replica, "worker_id", WH_F_INT, (long long)k->worker_id,
           "claim_cluster_uid", WH_F_STR, stale->cluster_uid, "cluster_uid", WH_F_STR,
           k->cluster_uid, (char *)NULL);
}

/* k with its owner uid dropped unless the API server confirms it (owners.h):
 * an unconfirmed uid is not recorded and supersedes nothing, the pod is
 * claimed like one without an owner. */
static const struct wh_claim_key *checked_key(struct wh_claims *c, const struct wh_claim_key *k,
                                              struct wh_claim_key *copy)
{
    if (!k->cluster_uid || !k->cluster_uid[0] || !wh_claim_str_ok(k->ns) ||
        !wh_claim_str_ok(k->cluster) || !wh_claim_str_ok(k->cluster_uid))
        return k;
    *copy = *k;
    if (!wh_owners_confirm(c->owners, c->kube, k->ns, k->cluster, k->cluster_uid,
                           c->budget_ms / 2 < ATTEMPT_MAX_MS ? c->budget_ms / 2 : ATTEMPT_MAX_MS))
        copy->cluster_uid = "";
    return copy;
}

/* On a 409 for Lease name: when it is this replica's own claim whose pod
 * is going, the claims' thread may not have given it back yet (a sweep
 * ahead of it), and this pod (its replacement, often) would go to a new
 * replica. Give it back here, within the budget (left ms); true when it is
 * gone, so that the caller claims again. */
static bool gave_back_own(struct wh_claims *c, const char *name, long left, uint64_t *api_errors)
{
    struct held going;
    if (!wh_claims_held_due(c, name, &going))
        return false;
    if (wh_claims_give_back(c, &going, left < ATTEMPT_MAX_MS ? left : ATTEMPT_MAX_MS, NULL))
        return true;
    ++*api_errors;
    return false;
}

/* The 409 branch of take(): whose Lease is it, and may it be superseded?
 * FOUND_STALE: superseded (or our own, its pod going, given back), claim
 * again; FOUND_UNKNOWN: ask again after a wait; else the outcome. */
static enum found after_conflict(struct wh_claims *c, const char *name,
                                 const struct wh_claim_key *k, const char *nonce, bool lost,
                                 long deadline, int *supersedes, struct wh_claim_ticket *ticket,
                                 uint64_t *api_errors, char *why, size_t why_len)
{
    long left = deadline - wh_clock_ms();
    if (left > 0 && gave_back_own(c, name, left, api_errors))
        return FOUND_STALE;
    bool ask = lost || (k->cluster_uid && k->cluster_uid[0]);
    struct stale_claim stale = {0};
    enum found f = ask && left > 0 ? read_claim(c, name, k, nonce, left, ticket, &stale)
                                   : FOUND_HELD;
    if (f == FOUND_UNKNOWN) {
        ++*api_errors;
        snprintf(why, why_len, "could not read back claim %s after a conflict", name);
        /* Only a lost attempt needs the answer (the Lease may be ours);
         * otherwise the read was the best-effort staleness check, and the
         * claim is held as a 409 always meant, without asking an API
         * server that is failing again and again. */
        return lost ? f : FOUND_HELD;
    }
    if (f != FOUND_STALE)
        return f;
    if (*supersedes >= MAX_SUPERSEDE)
        return FOUND_HELD;
    ++*supersedes;
    if (deadline - wh_clock_ms() <= 0)
        return FOUND_HELD; /* no time left: a timeout of 0 means curl's default */
    bool api_error;
    /* Deleted or not (another replica may have done it, or made the new
     * claim), the next POST tells. */
    supersede(c, k, &stale, deadline - wh_clock_ms(), &api_error);
    if (api_error)
        ++*api_errors;
    return FOUND_STALE;
}

/* k's nonce, or (none usable) a fresh one: a claim no pod names, which
 * simply expires. */
static void key_nonce(const struct wh_claim_key *k, char out[WH_CLAIMS_NONCE_LEN])
{
    if (k->nonce && wh_claim_str_ok(k->nonce) && strlen(k->nonce) < WH_CLAIMS_NONCE_LEN)
        snprintf(out, WH_CLAIMS_NONCE_LEN, "%s", k->nonce);
    else
        wh_claims_nonce(out);
}

enum wh_claim_outcome wh_claims_take(struct wh_claims *c, const struct wh_claim_key *k,
                                     struct wh_claim_ticket *ticket, char *why, size_t why_len)
{
    memset(ticket, 0, sizeof(*ticket));
    long long t0 = wh_clock_us();
    long deadline = wh_clock_ms() + c->budget_ms;
    struct wh_claim_key copy;
    k = checked_key(c, k, &copy);
    char name[WH_CLAIMS_NAME_LEN];
    wh_claims_name(k->ns, k->cluster, k->group, k->replica, k->worker_id, name);
    char nonce[WH_CLAIMS_NONCE_LEN];
    key_nonce(k, nonce);
    bool lost = false; /* an attempt may have created the Lease unseen */
    int supersedes = 0;
    struct wh_buf resp;
    wh_buf_init(&resp, RESP_MAX);
    enum wh_claim_outcome oc = WH_CLAIM_FAILED;
    uint64_t api_errors = 0;
    long backoff = BACKOFF_FIRST_MS;
    snprintf(why, why_len, "no time left to ask the Kubernetes API server");
    for (;;) {
        long left = deadline - wh_clock_ms();
        if (left <= 0)
            break;
        char errbuf[WH_ERRBUF_LEN] = "";
        struct wh_kube_answer ans = {0};
        wh_buf_reset(&resp);
        enum wh_err err = WH_OK;
        if (!post_claim(c, name, k, nonce, left, &resp, &ans, errbuf, &err)) {
            snprintf(why, why_len, "out of memory building the claim");
            break;
        }
        long wait = backoff;
        if (!err && (ans.status == 201 || ans.status == 200)) {
            ticket_of_answer(&resp, name, ticket);
            oc = WH_CLAIM_TAKEN;
            break;
        }
        if (!err && ans.status == 409) {
            /* AlreadyExists: another claim, the Lease of an attempt of
             * ours whose answer was lost, or a claim of a deleted
             * instance of the RayCluster. */
            enum found f = after_conflict(c, name, k, nonce, lost, deadline, &supersedes, ticket,
                                          &api_errors, why, why_len);
            if (f == FOUND_STALE)
                continue; /* claim again at once */
            if (f != FOUND_UNKNOWN) {
                oc = f == FOUND_MINE ? WH_CLAIM_TAKEN : WH_CLAIM_HELD;
                break;
            }
            wait = BACKOFF_FIRST_MS;
        } else if (err) {
            api_errors++;
            lost = true; /* sent, maybe carried out, answer lost */
            snprintf(why, why_len, "%s", errbuf);
        } else {
            api_errors++;
            wh_claim_describe_answer(ans.status, &resp, why, why_len);
            lost = lost || ans.status >= 500; /* "etcdserver: request timed out" may have written */
            if (ans.status != 429 && ans.status < 500)
                break; /* 401, 403, 404, 422: asking again will not help */
            if (ans.retry_after_s > 0)
                wait = ans.retry_after_s * 1000;
        }
        if (wh_clock_ms() + wait >= deadline)
            break;
        if (!wh_nap(&c->nap, wait)) {
            snprintf(why, why_len, "the webhook is shutting down");
            break;
        }
        backoff *= 2;
    }
    wh_buf_free(&resp);
    if (oc == WH_CLAIM_TAKEN)
        wh_claims_held_add(c, ticket, nonce);
    count_outcome(c, oc, wh_clock_us() - t0, api_errors);
    if (oc == WH_CLAIM_FAILED)
        log_claim_failed(name, k, why);
    return oc;
}

/* Delete one claim; preconditions make sure that it is the object that was
 * seen (not a newer claim of the same name). Returns true when the API
 * server answered (deleted, or someone else did it first). */
bool wh_claim_delete(struct wh_claims *c, const char *name, const char *uid, const char *rv,
                     long timeout_ms, bool *deleted, long *retry_after_ms)
{
    char path[700], body[400], errbuf[WH_ERRBUF_LEN] = "";
    snprintf(path, sizeof(path), "%s/%s", c->path, name);
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"preconditions\":"
             "{\"uid\":\"%.100s\",\"resourceVersion\":\"%.100s\"}}",
             uid, rv);
    struct wh_buf resp;
    wh_buf_init(&resp, RESP_MAX);
    struct wh_kube_answer ans = {0};
    enum wh_err err = wh_kube_request(c->kube, "DELETE", path, body, strlen(body), timeout_ms,
                                      &resp, &ans, errbuf);
    wh_buf_free(&resp);
    *deleted = !err && (ans.status == 200 || ans.status == 202);
    if (retry_after_ms)
        *retry_after_ms = !err && ans.retry_after_s > 0 ? ans.retry_after_s * 1000 : 0;
    return !err && (*deleted || ans.status == 404 || ans.status == 409);
}

bool wh_claims_release(struct wh_claims *c, const struct wh_claim_ticket *t, char *why,
                       size_t why_len)
{
    pthread_mutex_lock(&c->mu);
    c->st.superseded_pod++;
    wh_claims_held_drop(c, t->name, t->nonce);
    pthread_mutex_unlock(&c->mu);
    if (!wh_claim_str_ok(t->name) || !wh_claim_str_ok(t->uid) || !wh_claim_str_ok(t->rv)) {
        snprintf(why, why_len,
                 "the API server's answer to claim %s carried no usable uid and "
                 "resourceVersion",
                 t->name);
        return false;
    }
    bool deleted = false;
    bool answered = wh_claim_delete(c, t->name, t->uid, t->rv, ATTEMPT_MAX_MS, &deleted, NULL);
    if (!deleted)
        snprintf(why, why_len, "%s",
                 answered ? "the Lease had changed or was gone"
                          : "the API server did not answer the DELETE");
    return deleted;
}

bool wh_claim_str_ok(const char *s)
{
    /* Names, uids and versions go into a path and a JSON text unescaped. */
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '.'))
            return false;
    return true;
}

static long long wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The LIST of the claims (the caller frees it with cJSON_Delete), or NULL
 * with reason set. */
static cJSON *list_claims(struct wh_claims *c, char reason[WH_ERRBUF_LEN])
{
    char path[700], errbuf[WH_ERRBUF_LEN] = "";
    snprintf(path, sizeof(path), "%s?labelSelector=%s", c->path, CLAIM_SELECTOR);
    struct wh_buf resp;
    wh_buf_init(&resp, RESP_MAX);
    struct wh_kube_answer ans = {0};
    enum wh_err err = wh_kube_request(c->kube, "GET", path, NULL, 0, LIST_TIMEOUT_MS, &resp, &ans,
                                      errbuf);
    cJSON *list = NULL;
    if (err)
        snprintf(reason, WH_ERRBUF_LEN, "%s", errbuf);
    else if (ans.status != 200)
        wh_claim_describe_answer(ans.status, &resp, reason, WH_ERRBUF_LEN);
    else if (!(list = cJSON_ParseWithLength(wh_buf_ptr(&resp), wh_buf_len(&resp))))
        snprintf(reason, WH_ERRBUF_LEN, "LIST leases: the answer is not JSON");
    wh_buf_free(&resp);
    return list;
}

/* Whether a listed claim is due for deletion at now (wall-clock us). */
static bool claim_expired(const struct wh_claims *c, const cJSON *item, long long now)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(item, "spec");
    const cJSON *dur = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
    const char *renew = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "renewTime"));
    if (!renew)
        renew = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "acquireTime"));
    long long at = wh_claims_parse_time_us(renew);
    /* A claim without a readable time or duration was not written by
     * us as we write them; it still expires, by the default lifetime:
     * counted from its creation (the API server's clock), or at once when
     * even that cannot be read (nothing says it guards a live pod). */
    long d; /* leaseDurationSeconds is an int32 */
    if (at < 0 || !wh_json_whole(dur, 1, INT32_MAX, &d))
        d = WH_CLAIMS_DEFAULT_LIFETIME_S;
    if (at < 0)
        at = wh_claims_parse_time_us(cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "metadata"),
                                             "creationTimestamp")));
    if (at < 0)
        return true;
    /* Each replica deletes its own claims; another's only one sweep
     * period later (its holder crashed, or is partitioned away), so
     * that sweepers rarely race for the same object. */
    const char *holder = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity"));
    long long grace = holder && !strcmp(holder, c->holder) ? 0 : (long long)c->sweep_ms * 1000;
    return now >= at + (long long)d * 1000000 + grace;
}

void wh_claims_sweep(struct wh_claims *c)
{
    char reason[WH_ERRBUF_LEN] = "";
    cJSON *list = list_claims(c, reason);
    size_t objects = 0;
    uint64_t swept = 0, api_errors = reason[0] ? 1 : 0;
    long long now = wall_us();
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "items"))
    {
        if (atomic_load(&c->nap.stop))
            break;
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(item, "metadata");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));
        const char *uid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "uid"));
        const char *rv = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
        objects++;
        if (!claim_expired(c, item, now) || !wh_claim_str_ok(name) || !wh_claim_str_ok(uid) ||
            !wh_claim_str_ok(rv))
            continue;
        bool deleted = false;
        if (!wh_claim_delete(c, name, uid, rv, c->budget_ms, &deleted, NULL))
            api_errors++;
        if (deleted) {
            swept++;
            objects--;
        }
    }
    cJSON_Delete(list);
    pthread_mutex_lock(&c->mu);
    c->st.api_errors += api_errors;
    c->st.swept += swept;
    if (reason[0])
        c->st.sweeps_failed++;
    else
        c->st.objects = objects;
    pthread_mutex_unlock(&c->mu);
    if (reason[0])
        wh_log(WH_LOG_WARN, "claim_sweep_failed", "namespace", WH_F_STR, c->ns, "error", WH_F_STR,
               reason, (char *)NULL);
    else if (swept)
        wh_log(WH_LOG_INFO, "claims_expired_deleted", "namespace", WH_F_STR, c->ns, "deleted",
               WH_F_INT, (long long)swept, "remaining", WH_F_INT, (long long)objects, (char *)NULL);
}

struct wh_claims *wh_claims_new(struct wh_kube *kube, const struct wh_claims_opts *opts,
                                char *errbuf)
{
    if (!opts->ns || !wh_claim_str_ok(opts->ns) || !opts->holder || !opts->holder[0]) {
        wh_kube_free(kube);
        wh_fail(errbuf, WH_ERR_INVALID,
                "worker-id claims need the webhook's namespace (a Kubernetes name, got \"%s\") "
                "and a holder identity",
                opts->ns ? opts->ns : "");
        return NULL;
    }
    long budget_ms = opts->budget_ms > 0 ? opts->budget_ms : WH_CLAIMS_DEFAULT_BUDGET_MS;
    long lifetime_s = opts->lifetime_s > 0 ? opts->lifetime_s : WH_CLAIMS_DEFAULT_LIFETIME_S;
    long min_s = (2 * budget_ms + 999) / 1000;
    if (min_s < WH_CLAIMS_MIN_LIFETIME_S)
        min_s = WH_CLAIMS_MIN_LIFETIME_S;
    if (lifetime_s < min_s) {
        wh_kube_free(kube);
        wh_fail(errbuf, WH_ERR_INVALID,
                "a worker-id claim lifetime of %lds is too short: it must be at least %lds, "
                "twice the %ldms a replica may spend making one claim",
                lifetime_s, min_s, budget_ms);
        return NULL;
    }
    struct wh_claims *c = calloc(1, sizeof(*c));
    if (c) {
        c->ns = strdup(opts->ns);
        c->holder = strdup(opts->holder);
        c->owners = wh_owners_new();
    }
    if (!c || !c->ns || !c->holder || !c->owners) {
        if (c) {
            free(c->ns);
            free(c->holder);
            wh_owners_free(c->owners);
        }
        free(c);
        wh_kube_free(kube);
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->kube = kube;
    snprintf(c->path, sizeof(c->path), LEASES_PATH, c->ns);
    c->lifetime_s = lifetime_s;
    long sweep = c->lifetime_s * 1000 / 4;
    c->sweep_ms = opts->sweep_ms > 0 ? opts->sweep_ms : sweep < 5000 ? sweep : 5000;
    c->budget_ms = budget_ms;
    wh_nap_init(&c->nap);
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&c->thread, NULL, wh_claims_thread, c)) {
        wh_fail(errbuf, WH_ERR_INTERNAL, "cannot start the claim sweeper thread");
        wh_claims_free(c);
        return NULL;
    }
    c->started = true;
    return c;
}

void wh_claims_free(struct wh_claims *c)
{
    if (!c)
        return;
    wh_nap_stop(&c->nap);
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    c->kick = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (c->started)
        pthread_join(c->thread, NULL);
    for (size_t b = 0; b < HELD_BUCKETS; b++)
        while (c->held[b]) {
            struct held *h = c->held[b];
            c->held[b] = h->next;
            free(h);
        }
    wh_nap_destroy(&c->nap);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    wh_kube_free(c->kube);
    wh_owners_free(c->owners);
    free(c->ns);
    free(c->holder);
    free(c);
}

void wh_claims_stats(struct wh_claims *c, struct wh_mclaims *st)
{
    pthread_mutex_lock(&c->mu);
    *st = c->st;
    pthread_mutex_unlock(&c->mu);
}
