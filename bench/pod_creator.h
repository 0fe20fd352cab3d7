/* pod_creator.h: a thread that creates admitted pods in the fake API server
 * (tests/kube/harness.h) in batches of up to 64, as the API server stores
 * admitted pods, so that watches show them while admissions run. Shared by
 * the legacy-admission benchmarks (header-only: each program has one
 * creator).
 *
 * Use: pc_fake_start(&srv, template); pc_start(&srv); pc_enqueue(pod) for each admitted pod (JSON text of
 * a one-pod array, e.g. kh_created_pod(); the creator frees it); pc_stop().
 */
#ifndef WH_BENCH_POD_CREATOR_H
#define WH_BENCH_POD_CREATOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/kube/harness.h"

#define PC_QUEUE_MAX 8192

static pthread_mutex_t pc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pc_cv = PTHREAD_COND_INITIALIZER;
static char *pc_queue[PC_QUEUE_MAX];
static size_t pc_head, pc_tail;
static bool pc_done;
static pthread_t pc_thread;
static const struct kh_server *pc_srv;

/* Takes pod; dropped (freed) when the queue is full. */
static inline void pc_enqueue(char *pod)
{
    pthread_mutex_lock(&pc_mu);
    if (pc_tail < PC_QUEUE_MAX) {
        pc_queue[pc_tail++] = pod;
        pod = NULL;
        pthread_cond_signal(&pc_cv);
    }
    pthread_mutex_unlock(&pc_mu);
    if (pod) {
        fprintf(stderr, "bench: pod queue full\n");
        free(pod);
    }
}

static inline void *pc_main(void *arg)
{
    (void)arg;
    static char batch[1 << 20];
    for (;;) {
        pthread_mutex_lock(&pc_mu);
        while (pc_head == pc_tail && !pc_done)
            pthread_cond_wait(&pc_cv, &pc_mu);
        if (pc_head == pc_tail && pc_done) {
            pthread_mutex_unlock(&pc_mu);
            return NULL;
        }
        char *o = batch;
        size_t n = 0;
        while (pc_head < pc_tail && n < 64) {
            char *pod = pc_queue[pc_head++];
            pod[strlen(pod) - 1] = '\0'; /* "[{...}]" -> "{...}" joined into one array */
            o += sprintf(o, "%s%s", n ? "," : "[", pod + 1);
            free(pod);
            n++;
        }
        pthread_mutex_unlock(&pc_mu);
        sprintf(o, "]");
        if (kh_control(pc_srv, "pods", batch, NULL))
            fprintf(stderr, "bench: creating pods failed\n");
    }
}

static inline void pc_start(const struct kh_server *srv)
{
    pc_srv = srv;
    pthread_create(&pc_thread, NULL, pc_main, NULL);
}

/* Creates what is queued, then joins the thread. */
static inline void pc_stop(void)
{
    pthread_mutex_lock(&pc_mu);
    pc_done = true;
    pthread_cond_signal(&pc_cv);
    pthread_mutex_unlock(&pc_mu);
    pthread_join(pc_thread, NULL);
}

/* Certificates, the fake API server, a kubeconfig "kc" in srv->dir, and the
 * review template tmpl (a file next to harness.h), read into a malloc'd
 * text. NULL (after cleaning up, with a message) when any of it fails. */
static inline char *pc_fake_start(struct kh_server *srv, const char *tmpl)
{
    char p[1024];
    kh_file(p, sizeof(p), tmpl);
    char *review = kh_slurp(p);
    if (!review || kh_certs(srv) || kh_server_start(srv, NULL) || kh_kubeconfig(srv, "kc", NULL)) {
        fprintf(stderr, "bench: cannot start the fake API server\n");
        kh_cleanup(srv);
        free(review);
        return NULL;
    }
    return review;
}

static inline int pc_cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static inline long pc_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif /* WH_BENCH_POD_CREATOR_H */
