/* credcache.c: the exec credential cache a client and its clones share
 * (credcache.h). */
#include "credcache.h"

#include <limits.h>  /* LLONG_MAX */
#include <pthread.h> /* pthread_mutex_t, pthread_cond_t, pthread_create */
#include <stdio.h>   /* snprintf */
#include <stdlib.h>  /* calloc, free */
#include <string.h>  /* memcpy, memset, strdup */
#include <time.h>    /* clock_gettime */

#include "wh/log.h" /* wh_log */

/* A credential is taken as expired this long before its
 * expirationTimestamp, so that it does not expire in flight. */
#define EXPIRY_SKEW_MS 1000LL
/* The background refresher renews a credential this long before it
 * expires at most (a fifth of its lifetime when that is shorter). */
#define REFRESH_LEAD_MS 60000LL
/* Its back-off after a failed run: doubles from the first to the last. */
#define REFRESH_RETRY_FIRST_MS 1000LL
#define REFRESH_RETRY_MAX_MS 30000LL

/* What the clones of one client share: the configuration and the exec
 * credential's cache. Every field below mu is read and written under it;
 * the plugin runs outside it (running says one is under way). */
struct wh_credcache {
    struct wh_kube_config cfg; /* read-only once made */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a run ended; the refresher has work or must stop */
    int refs;
    struct wh_exec_cred cur;
    bool have;            /* cur holds a credential */
    bool stale;           /* the API server answered 401 to cur */
    bool running;         /* a plugin run is under way */
    unsigned long gen;    /* bumped at each new credential */
    long long got_ms;     /* when cur came (wall clock) */
    long long retry_at;   /* background: no run before this (back-off), wall ms */
    long long backoff_ms; /* background: the next back-off */
    char last_err[WH_ERRBUF_LEN];
    bool background;  /* runs happen on the refresher thread only */
    atomic_bool stop; /* the refresher (and its plugin run) must end */
    pthread_t refresher;
};

struct wh_credcache *wh_credcache_new(struct wh_kube_config *cfg)
{
    struct wh_credcache *sh = calloc(1, sizeof(*sh));
    if (!sh)
        return NULL;
    sh->cfg = *cfg;
    memset(cfg, 0, sizeof(*cfg));
    sh->refs = 1;
    sh->backoff_ms = REFRESH_RETRY_FIRST_MS;
    atomic_init(&sh->stop, false);
    pthread_mutex_init(&sh->mu, NULL);
    pthread_cond_init(&sh->cv, NULL);
    return sh;
}

const struct wh_kube_config *wh_credcache_config(const struct wh_credcache *sh)
{
    return &sh->cfg;
}

void wh_credcache_ref(struct wh_credcache *sh)
{
    pthread_mutex_lock(&sh->mu);
    sh->refs++;
    pthread_mutex_unlock(&sh->mu);
}

void wh_credcache_unref(struct wh_credcache *sh)
{
    pthread_mutex_lock(&sh->mu);
    bool last = --sh->refs == 0;
    bool thread = last && sh->background;
    if (thread) {
        atomic_store(&sh->stop, true);
        pthread_cond_broadcast(&sh->cv);
    }
    pthread_mutex_unlock(&sh->mu);
    if (thread)
        pthread_join(sh->refresher, NULL);
    if (!last)
        return;
    wh_kube_config_clear(&sh->cfg);
    wh_exec_cred_clear(&sh->cur);
    pthread_cond_destroy(&sh->cv);
    pthread_mutex_destroy(&sh->mu);
    free(sh);
}

bool wh_credcache_background(struct wh_credcache *sh)
{
    pthread_mutex_lock(&sh->mu);
    bool b = sh->background;
    pthread_mutex_unlock(&sh->mu);
    return b;
}

static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Under sh->mu: the cached credential may be used now. A caller that
 * can run the plugin renews it EXPIRY_SKEW_MS early; with the refresher
 * (which renews earlier still) it is used to its last millisecond. */
static bool fresh(const struct wh_credcache *sh, long long now)
{
    long long skew = sh->background ? 0 : EXPIRY_SKEW_MS;
    return sh->have && !sh->stale && (!sh->cur.expires_ms || now < sh->cur.expires_ms - skew);
}

static char *memdup0(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

/* Under sh->mu: copy the cached credential into use. */
static enum wh_err copy_cred(const struct wh_credcache *sh, struct wh_cred_use *use, char *errbuf)
{
    const struct wh_exec_cred *c = &sh->cur;
    use->gen = sh->gen;
    use->c.expires_ms = c->expires_ms;
    if ((c->token && !(use->c.token = strdup(c->token))) ||
        (c->cert_pem && !(use->c.cert_pem = memdup0(c->cert_pem, c->cert_len))) ||
        (c->key_pem && !(use->c.key_pem = memdup0(c->key_pem, c->key_len)))) {
        wh_exec_cred_clear(&use->c);
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    }
    use->c.cert_len = c->cert_len;
    use->c.key_len = c->key_len;
    return WH_OK;
}

/* Under sh->mu: a run ended with err (fresh holds its credential). */
static void install(struct wh_credcache *sh, enum wh_err err, struct wh_exec_cred *fresh_cred,
                    const char *errbuf)
{
    sh->running = false;
    long long now = wall_ms();
    if (!err) {
        wh_exec_cred_clear(&sh->cur);
        sh->cur = *fresh_cred;
        memset(fresh_cred, 0, sizeof(*fresh_cred));
        sh->have = true;
        sh->stale = false;
        sh->gen++;
        sh->got_ms = now;
        sh->last_err[0] = '\0';
        sh->retry_at = 0;
        sh->backoff_ms = REFRESH_RETRY_FIRST_MS;
    } else {
        snprintf(sh->last_err, sizeof(sh->last_err), "%s", errbuf);
        sh->retry_at = now + sh->backoff_ms;
        sh->backoff_ms = sh->backoff_ms * 2 > REFRESH_RETRY_MAX_MS ? REFRESH_RETRY_MAX_MS
                                                                   : sh->backoff_ms * 2;
    }
    pthread_cond_broadcast(&sh->cv);
}

/* The exec credential for one request. In the CLI (and tests), the caller
 * runs the plugin when the cache holds nothing fresh, one run at a time
 * (the others wait for it). With a background refresher (serve), no caller
 * runs it or waits for it: a stale cache is an error at once and a wake-up
 * for the refresher. */
enum wh_err wh_credcache_get(struct wh_credcache *sh, struct wh_cred_use *use, char *errbuf)
{
    pthread_mutex_lock(&sh->mu);
    for (;;) {
        if (fresh(sh, wall_ms())) {
            enum wh_err err = copy_cred(sh, use, errbuf);
            pthread_mutex_unlock(&sh->mu);
            return err;
        }
        if (sh->background) {
            pthread_cond_broadcast(&sh->cv);
            enum wh_err err =
                wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                        "the exec credential of kubeconfig %s is %s; it is being renewed in the "
                        "background%s%s",
                        sh->cfg.source,
                        sh->have ? (sh->stale ? "refused (401)" : "expired")
                                 : "not "
                                   "obtained yet",
                        sh->last_err[0] ? "; last attempt: " : "", sh->last_err);
            pthread_mutex_unlock(&sh->mu);
            return err;
        }
        if (!sh->running)
            break;
        pthread_cond_wait(&sh->cv, &sh->mu);
    }
    sh->running = true;
    pthread_mutex_unlock(&sh->mu);
    struct wh_exec_cred c;
    enum wh_err err = wh_exec_run(&sh->cfg, NULL, &c, errbuf);
    pthread_mutex_lock(&sh->mu);
    install(sh, err, &c, errbuf);
    if (!err)
        err = copy_cred(sh, use, errbuf);
    pthread_mutex_unlock(&sh->mu);
    return err;
}

/* The API server refused the credential of generation gen: the next
 * request gets a new one (a 401 to an older one says nothing). */
void wh_credcache_refused(struct wh_credcache *sh, unsigned long gen)
{
    pthread_mutex_lock(&sh->mu);
    if (sh->have && sh->gen == gen && !sh->stale) {
        sh->stale = true;
        pthread_cond_broadcast(&sh->cv);
    }
    pthread_mutex_unlock(&sh->mu);
}

/* Under sh->mu: when the refresher runs the plugin next (wall ms);
 * LLONG_MAX for never (a credential without expiry, until a 401). */
static long long refresh_due(const struct wh_credcache *sh)
{
    long long due = 0;
    if (sh->have && !sh->stale) {
        if (!sh->cur.expires_ms)
            return LLONG_MAX;
        long long life = sh->cur.expires_ms - sh->got_ms;
        long long lead = life / 5 < REFRESH_LEAD_MS ? life / 5 : REFRESH_LEAD_MS;
        due = sh->cur.expires_ms - EXPIRY_SKEW_MS - (lead > 0 ? lead : 0);
    }
    return due > sh->retry_at ? due : sh->retry_at;
}

static void *refresher_main(void *arg)
{
    struct wh_credcache *sh = arg;
    pthread_mutex_lock(&sh->mu);
    while (!atomic_load(&sh->stop)) {
        long long due = refresh_due(sh), now = wall_ms();
        if (due > now) {
            if (due == LLONG_MAX) {
                pthread_cond_wait(&sh->cv, &sh->mu);
            } else {
                struct timespec ts = {(time_t)(due / 1000), (long)(due % 1000) * 1000000L};
                pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
            }
            continue;
        }
        sh->running = true;
        pthread_mutex_unlock(&sh->mu);
        struct wh_exec_cred c;
        char eb[WH_ERRBUF_LEN] = "";
        enum wh_err err = wh_exec_run(&sh->cfg, &sh->stop, &c, eb);
        if (err && !atomic_load(&sh->stop))
            wh_log(WH_LOG_ERROR, "exec_credential", "error", WH_F_STR, eb, (char *)NULL);
        else if (!err)
            wh_log(WH_LOG_INFO, "exec_credential", "source", WH_F_STR, sh->cfg.source, "expires_ms",
                   WH_F_INT, c.expires_ms, (char *)NULL);
        pthread_mutex_lock(&sh->mu);
        install(sh, err, &c, eb);
    }
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

enum wh_err wh_credcache_start(struct wh_credcache *sh, char *errbuf)
{
    if (!sh->cfg.exec)
        return WH_OK;
    pthread_mutex_lock(&sh->mu);
    bool started = sh->background;
    pthread_mutex_unlock(&sh->mu);
    if (started)
        return WH_OK;
    struct wh_cred_use use = {0};
    enum wh_err err = wh_credcache_get(sh, &use, errbuf); /* the first, before any thread needs it */
    wh_exec_cred_clear(&use.c);
    if (err)
        return err;
    pthread_mutex_lock(&sh->mu);
    sh->background = true;
    int rc = pthread_create(&sh->refresher, NULL, refresher_main, sh);
    if (rc)
        sh->background = false;
    pthread_mutex_unlock(&sh->mu);
    return rc ? wh_fail(errbuf, WH_ERR_INTERNAL, "cannot start the exec credential refresher")
              : WH_OK;
}
