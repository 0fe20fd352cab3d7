/* harness.h: a fake API server under test control, for tests/kube and the
 * benchmarks (header-only so bench/ programs can include it too).
 *
 * kh_certs() makes a throwaway CA, a server certificate for 127.0.0.1 and a
 * client certificate with `openssl req`; kh_server_start() runs
 * fake_apiserver.py (next to this file) with /usr/bin/python3 on 127.0.0.1;
 * kh_control() drives its /_control/ plane. Failures print and return -1;
 * the caller decides (tests fail, benchmarks exit).
 */
#ifndef WH_KUBE_HARNESS_H
#define WH_KUBE_HARNESS_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#define KH_TOKEN "test-token-1"

struct kh_server {
    char dir[256];
    int port; /* kept across restarts */
    pid_t pid;
};

static inline long kh_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void kh_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* A file next to this header (the fake server, review templates). */
static inline void kh_file(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s", __FILE__);
    char *slash = strrchr(out, '/');
    if (slash)
        snprintf(slash + 1, n - (size_t)(slash + 1 - out), "%s", name);
    else
        snprintf(out, n, "%s", name);
}

static inline const char *kh_script(void)
{
    static char path[1024];
    if (!path[0])
        kh_file(path, sizeof(path), "fake_apiserver.py");
    return path;
}

static inline int kh_write(const char *dir, const char *name, const char *text)
{
    char p[512];
    int n = snprintf(p, sizeof(p), "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof(p)) {
        fprintf(stderr, "harness: path too long: %s/%s\n", dir, name);
        return -1;
    }
    FILE *f = fopen(p, "w");
    if (!f) {
        fprintf(stderr, "harness: cannot write %s\n", p);
        return -1;
    }
    fputs(text, f);
    return fclose(f) ? -1 : 0;
}

/* A temp dir with ca.crt/ca.key, server.crt/key (127.0.0.1, localhost),
 * client.crt/key. */
static inline int kh_certs(struct kh_server *s)
{
    snprintf(s->dir, sizeof(s->dir), "/tmp/whkube.XXXXXX");
    if (!mkdtemp(s->dir)) {
        perror("mkdtemp");
        return -1;
    }
    if (kh_write(s->dir, "san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"))
        return -1;
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "cd %s && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout ca.key -out ca.crt -subj /CN=wh-test-ca -days 1 2>/dev/null && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null && "
             "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
             "-out server.crt -days 1 -extfile san.ext 2>/dev/null && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout client.key -out client.csr -subj /CN=wh-client 2>/dev/null && "
             "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
             "-out client.crt -days 1 2>/dev/null",
             s->dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "harness: openssl failed in %s\n", s->dir);
        return -1;
    }
    return 0;
}

/* Start (or restart, on the same port) the fake server. extra: more
 * arguments, NULL-terminated. */
static inline int kh_server_start(struct kh_server *s, const char *const *extra)
{
    char port_file[512], state[512], cert[512], key[512], ca[512], port[16];
    snprintf(port_file, sizeof(port_file), "%s/port", s->dir);
    snprintf(state, sizeof(state), "%s/state.json", s->dir);
    snprintf(cert, sizeof(cert), "%s/server.crt", s->dir);
    snprintf(key, sizeof(key), "%s/server.key", s->dir);
    snprintf(ca, sizeof(ca), "%s/ca.crt", s->dir);
    snprintf(port, sizeof(port), "%d", s->port);
    unlink(port_file);
    const char *argv[64] =
        {"/usr/bin/python3", kh_script(), "--port",  port, "--port-file", port_file,
         "--cert",           cert,        "--key",   key,  "--client-ca", ca,
         "--token",          KH_TOKEN,    "--state", state};
    size_t n = 16;
    for (size_t i = 0; extra && extra[i] && n < 62; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* Never outlive the test (an abort would orphan the server), and
         * never hold the test's stdout open. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDOUT_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    s->pid = pid;
    for (long end = kh_now_ms() + 60000; kh_now_ms() < end;) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            int p = 0;
            int ok = fscanf(f, "%d", &p) == 1;
            fclose(f);
            if (ok && p > 0) {
                s->port = p;
                return 0;
            }
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            fprintf(stderr, "harness: fake API server exited early (status %d)\n", st);
            s->pid = 0;
            return -1;
        }
        kh_sleep_ms(20);
    }
    fprintf(stderr, "harness: fake API server did not start\n");
    return -1;
}

/* SIGTERM: the server saves its state and drops every connection. */
static inline void kh_server_stop(struct kh_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGTERM);
    int st;
    waitpid(s->pid, &st, 0);
    s->pid = 0;
}

static inline void kh_cleanup(struct kh_server *s)
{
    kh_server_stop(s);
    if (s->dir[0]) {
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "harness: could not remove %s\n", s->dir);
    }
}

static inline size_t kh_sink(char *p, size_t sz, size_t n, void *arg)
{
    char **out = arg;
    size_t old = *out ? strlen(*out) : 0;
    char *m = realloc(*out, old + sz * n + 1);
    if (!m)
        return 0;
    memcpy(m + old, p, sz * n);
    m[old + sz * n] = '\0';
    *out = m;
    return sz * n;
}

/* POST body (JSON text) to /_control/<what>; *out (may be NULL) gets the
 * answer (cJSON_Delete). */
static inline int kh_control(const struct kh_server *s, const char *what, const char *body,
                             cJSON **out)
{
    char url[256], ca[512];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/_control/%s", s->port, what);
    snprintf(ca, sizeof(ca), "%s/ca.crt", s->dir);
    CURL *h = curl_easy_init();
    if (!h)
        return -1;
    char *resp = NULL;
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "null");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, kh_sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    if (rc != CURLE_OK || code != 200) {
        fprintf(stderr, "harness: control %s failed: %s (HTTP %ld)\n", what, curl_easy_strerror(rc),
                code);
        free(resp);
        return -1;
    }
    if (out)
        *out = cJSON_Parse(resp ? resp : "null");
    free(resp);
    return 0;
}

/* An integer counter from /_control/stats, or -1. */
static inline long kh_stat(const struct kh_server *s, const char *name)
{
    cJSON *st = NULL;
    if (kh_control(s, "stats", NULL, &st))
        return -1;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(st, name);
    long r = cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
    cJSON_Delete(st);
    return r;
}

/* A kubeconfig with a token and the CA file (the common case). */
static inline int kh_kubeconfig(const struct kh_server *s, const char *name, const char *user_yaml)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
             "contexts:\n- name: test\n  context: {cluster: fake, user: tester}\n"
             "clusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:%d/\n"
             "    certificate-authority: ca.crt\n"
             "users:\n- name: tester\n  user:\n%s",
             s->port, user_yaml ? user_yaml : "    token: " KH_TOKEN "\n");
    return kh_write(s->dir, name, text);
}

/* Read a review template and replace @CLUSTER@ / @GROUP@. malloc'd. */
static inline char *kh_review(const char *tmpl, const char *cluster, const char *group)
{
    size_t n = strlen(tmpl) + 64 * (strlen(cluster) + strlen(group) + 1);
    char *out = malloc(n), *o = out;
    if (!out)
        return NULL;
    for (const char *p = tmpl; *p;) {
        if (!strncmp(p, "@CLUSTER@", 9)) {
            o += sprintf(o, "%s", cluster);
            p += 9;
        } else if (!strncmp(p, "@GROUP@", 7)) {
            o += sprintf(o, "%s", group);
            p += 7;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

/* kh_review() of a pod that carries the ownerReference KubeRay sets
 * (docs/kuberay-pods.md): its RayCluster, with uid. malloc'd; NULL on
 * failure. */
static inline char *kh_owned_review(const char *tmpl, const char *cluster, const char *group,
                                    const char *uid)
{
    char *body = kh_review(tmpl, cluster, group);
    cJSON *j = body ? cJSON_Parse(body) : NULL;
    free(body);
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "request"), "object"),
        "metadata");
    cJSON *refs = meta ? cJSON_AddArrayToObject(meta, "ownerReferences") : NULL;
    cJSON *ref = cJSON_CreateObject();
    cJSON_AddItemToArray(refs, ref); /* takes ref when refs is not NULL */
    cJSON_AddStringToObject(ref, "apiVersion", "ray.io/v1");
    cJSON_AddStringToObject(ref, "kind", "RayCluster");
    cJSON_AddStringToObject(ref, "name", cluster);
    cJSON_AddStringToObject(ref, "uid", uid);
    cJSON_AddTrueToObject(ref, "controller");
    cJSON_AddTrueToObject(ref, "blockOwnerDeletion");
    char *text = refs ? cJSON_PrintUnformatted(j) : NULL;
    if (!refs)
        cJSON_Delete(ref);
    cJSON_Delete(j);
    body = text ? strdup(text) : NULL;
    cJSON_free(text);
    return body;
}

static inline char *kh_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    if (p)
        p[n] = '\0';
    fclose(f);
    return p;
}

/* The pod an admitted legacy review becomes: request.object with a name,
 * the replicaIndex label and TPU_WORKER_ID as the patch would set them.
 * Returns JSON text (free()). */
static inline char *kh_created_pod(const char *review, const char *name, long replica, long host,
                                   unsigned n_tpu)
{
    cJSON *rv = cJSON_Parse(review);
    cJSON *pod = cJSON_DetachItemViaPointer(
        cJSON_GetObjectItemCaseSensitive(rv, "request"),
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rv, "request"), "object"));
    cJSON_Delete(rv);
    if (!pod)
        return NULL;
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    cJSON_AddStringToObject(meta, "name", name);
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    const char *group = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(labels, "ray.io/group"));
    char v[256];
    snprintf(v, sizeof(v), "%s-%ld", group ? group : "", replica);
    cJSON_AddStringToObject(labels, "replicaIndex", v);
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                                       cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers"),
                                   0);
    cJSON *env = cJSON_GetObjectItemCaseSensitive(c0, "env");
    if (!env)
        env = cJSON_AddArrayToObject(c0, "env");
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", "TPU_WORKER_ID");
    snprintf(v, sizeof(v), "%ld", host * (long)(n_tpu ? n_tpu : 1));
    cJSON_AddStringToObject(e, "value", v);
    cJSON_AddItemToArray(env, e);
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToArray(arr, pod);
    char *text = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    return text;
}

#endif /* WH_KUBE_HARNESS_H */
