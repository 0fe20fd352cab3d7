/* server_pool.c: admissions that may wait, decided off the serving threads
 * (see server_pool.h). */
#include "server_pool.h"

#include <pthread.h>   /* pthread_* */
#include <stdatomic.h> /* atomic_store */
#include <stdio.h>     /* snprintf */
#include <stdlib.h>    /* calloc, free */

#include <microhttpd.h>

#include "wh/log.h"    /* wh_log */
#include "wh/reqmem.h" /* wh_reqmem_bind */

struct job {
    struct MHD_Connection *c;
    struct request *rq;
};

struct wh_srv_pool {
    struct wh_server *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *ring; /* queue slots */
    unsigned cap, head, len, busy;
    bool stopping;
    pthread_t *threads;
    unsigned n_threads;
};

/* The outcome is the request's before the resume: the serving thread
 * reads it once MHD calls back for the resumed request. */
static void finish(struct job j, enum wh_err err)
{
    j.rq->job_err = err;
    atomic_store(&j.rq->decided, true);
    MHD_resume_connection(j.c);
}

static void *worker(void *arg)
{
    struct wh_srv_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->len && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->len)
            break; /* stopping, nothing left */
        struct job j = p->ring[p->head];
        p->head = (p->head + 1) % p->cap;
        p->len--;
        if (p->stopping) { /* queued, never started: refused */
            pthread_mutex_unlock(&p->mu);
            snprintf(j.rq->job_errbuf, sizeof(j.rq->job_errbuf), "the webhook is shutting down");
            finish(j, WH_ERR_UNAVAILABLE);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        p->busy++;
        pthread_mutex_unlock(&p->mu);
        struct wh_arena *before = wh_reqmem_bind(j.rq->arena);
        j.rq->job_errbuf[0] = '\0';
        enum wh_err err = p->s->pl.decide(p->s->pl.ctx, j.rq->rv, j.rq->route, &j.rq->res,
                                          j.rq->job_errbuf);
        wh_reqmem_bind(before);
        finish(j, err);
        pthread_mutex_lock(&p->mu);
        p->busy--;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

struct wh_srv_pool *wh_srv_pool_start(struct wh_server *s, unsigned workers, unsigned queue)
{
    struct wh_srv_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->s = s;
    p->cap = queue ? queue : 1;
    p->ring = calloc(p->cap, sizeof(*p->ring));
    p->threads = calloc(workers ? workers : 1, sizeof(*p->threads));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (!p->ring || !p->threads) {
        wh_srv_pool_free(p);
        return NULL;
    }
    for (unsigned i = 0; i < (workers ? workers : 1); i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p)) {
            wh_srv_pool_free(p);
            return NULL;
        }
        p->n_threads++;
    }
    return p;
}

bool wh_srv_pool_submit(struct wh_srv_pool *p, struct MHD_Connection *c, struct request *rq)
{
    pthread_mutex_lock(&p->mu);
    bool ok = !p->stopping && p->len < p->cap;
    if (ok) {
        atomic_store(&rq->decided, false);
        /* Suspended before a worker can see the job (they take it under
         * this lock), so its resume always follows this suspend. */
        MHD_suspend_connection(c);
        p->ring[(p->head + p->len) % p->cap] = (struct job){.c = c, .rq = rq};
        p->len++;
        pthread_cond_signal(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

unsigned wh_srv_pool_pending(struct wh_srv_pool *p)
{
    pthread_mutex_lock(&p->mu);
    unsigned n = p->len + p->busy;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void wh_srv_pool_stop(struct wh_srv_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    if (p->len) /* no worker started: nobody else resumes these */
        wh_log(WH_LOG_WARN, "admissions_refused", "reason", WH_F_STR,
               "the webhook stopped with admissions queued", (char *)NULL);
    while (p->len) {
        struct job j = p->ring[p->head];
        p->head = (p->head + 1) % p->cap;
        p->len--;
        snprintf(j.rq->job_errbuf, sizeof(j.rq->job_errbuf), "the webhook is shutting down");
        finish(j, WH_ERR_UNAVAILABLE);
    }
    p->n_threads = 0;
}

void wh_srv_pool_free(struct wh_srv_pool *p)
{
    if (!p)
        return;
    wh_srv_pool_stop(p);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->ring);
    free(p->threads);
    free(p);
}
