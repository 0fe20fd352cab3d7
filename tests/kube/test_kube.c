/* test_kube.c: the Kubernetes client, the caches and the legacy-index
 * pipeline against tests/kube/fake_apiserver.py (TLS on 127.0.0.1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "../testutil.h"
#include "harness.h"
#include "wh/admit.h"
#include "wh/b64.h"
#include "wh/buildinfo.h"
#include "wh/cache.h"
#include "wh/claims.h"
#include "wh/kube.h"
#include "wh/kubeconfig.h"
#include "wh/log.h"

static struct kh_server srv;
static char *tmpl16, *tmpl1024, *tmpl_native;

static char *read_tmpl(const char *name)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", KUBE_TEST_DIR, name);
    char *t = kh_slurp(p);
    assert_non_null(t);
    return t;
}

static int setup(void **st)
{
    (void)st;
    wh_log_set_verbosity(
        getenv("WH_TEST_VERBOSE") ? 1 : -1); /* warnings are expected while the server is down */
    tmpl16 = read_tmpl("legacy-v6e-16.json");
    tmpl1024 = read_tmpl("legacy-v5p-1024.json");
    tmpl_native = read_tmpl("native-v6e-16.json");
    if (kh_certs(&srv))
        return -1;
    static const char *const args[] = {"--gen-nodes", "4", "--bookmark-interval", "0.5", NULL};
    return kh_server_start(&srv, args);
}

static int teardown(void **st)
{
    (void)st;
    kh_cleanup(&srv);
    free(tmpl16);
    free(tmpl1024);
    free(tmpl_native);
    return 0;
}

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", srv.dir, name);
}

/* GET /api/v1/nodes through a client built from cfg. */
static long probe(struct wh_kube_config *cfg, enum wh_err *err_out)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_kube *k = wh_kube_new(cfg, errbuf);
    assert_non_null(k);
    struct wh_buf body;
    wh_buf_init(&body, 1 << 20);
    long status = 0;
    *err_out = wh_kube_get(k, "/api/v1/nodes?labelSelector=cloud.google.com%2Fgke-tpu-accelerator",
                           &body, &status, NULL, errbuf);
    if (*err_out)
        assert_null(strstr(errbuf, KH_TOKEN)); /* never a secret in a message */
    wh_buf_free(&body);
    wh_kube_free(k);
    return status;
}

static long probe_file(const char *name, const char *user_yaml, const char *cluster_extra)
{
    char text[8192], p[512];
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
             "contexts:\n- name: other\n  context: {cluster: nope, user: nope}\n"
             "- name: test\n  context: {cluster: fake, user: tester}\n"
             "clusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:%d\n%s"
             "users:\n- name: tester\n  user:\n%s",
             srv.port, cluster_extra, user_yaml);
    assert_int_equal(kh_write(srv.dir, name, text), 0);
    path_in(p, sizeof(p), name);
    struct wh_kube_config cfg;
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_err err = wh_kubeconfig_load(p, &cfg, errbuf);
    if (err)
        fail_msg("%s: %s", name, errbuf);
    long status = probe(&cfg, &err);
    wh_kube_config_clear(&cfg);
    return err ? -(long)err : status;
}

static char *b64_file(const char *name)
{
    char cmd[600], p[512];
    path_in(p, sizeof(p), name);
    snprintf(cmd, sizeof(cmd), "base64 -w0 %s", p);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char *out = calloc(1, 16384);
    assert_non_null(out);
    size_t n = fread(out, 1, 16383, f);
    pclose(f);
    assert_true(n > 0);
    return out;
}

static void test_kubeconfig_variants(void **st)
{
    (void)st;
    char yaml[16384], extra[16384];
    /* Token + CA file relative to the kubeconfig. */
    assert_int_equal(probe_file("kc1", "    token: " KH_TOKEN "\n",
                                "    certificate-authority: ca.crt\n"),
                     200);
    /* CA data + tokenFile. */
    assert_int_equal(kh_write(srv.dir, "tokfile", KH_TOKEN "\n"), 0);
    char *ca = b64_file("ca.crt");
    snprintf(extra, sizeof(extra), "    certificate-authority-data: %s\n", ca);
    assert_int_equal(probe_file("kc2", "    tokenFile: tokfile\n", extra), 200);
    /* Client certificate + key as data, no token. */
    char *crt = b64_file("client.crt"), *key = b64_file("client.key");
    snprintf(yaml, sizeof(yaml), "    client-certificate-data: %s\n    client-key-data: %s\n", crt,
             key);
    assert_int_equal(probe_file("kc3", yaml, extra), 200);
    /* ... and as files. */
    assert_int_equal(probe_file("kc4",
                                "    client-certificate: client.crt\n"
                                "    client-key: client.key\n",
                                "    certificate-authority: ca.crt\n"),
                     200);
    /* insecure-skip-tls-verify without a CA. */
    assert_int_equal(probe_file("kc5", "    token: " KH_TOKEN "\n",
                                "    insecure-skip-tls-verify: true\n"),
                     200);
    /* ... quoted, or as YAML 1.1 spells true (kubectl's loader reads it so too). */
    assert_int_equal(probe_file("kc5q", "    token: " KH_TOKEN "\n",
                                "    insecure-skip-tls-verify: \"true\"\n"),
                     200);
    assert_int_equal(probe_file("kc5y", "    token: " KH_TOKEN "\n",
                                "    insecure-skip-tls-verify: yes\n"),
                     200);
    /* No CA and verification on: the self-signed server is refused. */
    assert_int_equal(probe_file("kc6", "    token: " KH_TOKEN "\n", ""), -(long)WH_ERR_TLS);
    /* A wrong token gets the server's 401. */
    assert_int_equal(probe_file("kc7", "    token: wrong\n", "    certificate-authority: ca.crt\n"),
                     401);
    free(ca);
    free(crt);
    free(key);
}

static void expect_load_error(const char *name, const char *text, const char *field)
{
    char p[512], errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(kh_write(srv.dir, name, text), 0);
    path_in(p, sizeof(p), name);
    struct wh_kube_config cfg;
    assert_int_not_equal(wh_kubeconfig_load(p, &cfg, errbuf), WH_OK);
    assert_null(cfg.server);
    if (!strstr(errbuf, p) || !strstr(errbuf, field))
        fail_msg("%s: error should name %s and %s: %s", name, p, field, errbuf);
}

static void test_kubeconfig_errors(void **st)
{
    (void)st;
    static const char head[] = "apiVersion: v1\ncurrent-context: test\n"
                               "contexts:\n- name: test\n  context: {cluster: fake, user: u}\n";
    char t[4096];
    expect_load_error("e1", "apiVersion: v1\nclusters: []\n", "current-context");
    snprintf(t, sizeof(t), "%sclusters:\n- name: other\n  cluster: {server: https://x}\n", head);
    expect_load_error("e2", t, "clusters");
    snprintf(t, sizeof(t),
             "%sclusters:\n- name: fake\n  cluster: {server: https://x, "
             "certificate-authority-data: '@@notbase64'}\nusers: []\n",
             head);
    expect_load_error("e3", t, "clusters[name=fake].cluster.certificate-authority-data");
    snprintf(t, sizeof(t),
             "%sclusters:\n- name: fake\n  cluster: {server: https://x}\n"
             "users:\n- name: u\n  user: {client-certificate: ca.crt}\n",
             head);
    expect_load_error("e4", t, "users[name=u].user");
    snprintf(t, sizeof(t),
             "%sclusters:\n- name: fake\n  cluster: {server: https://x}\n"
             "users:\n- name: u\n  user: {exec: {command: gcloud}}\n",
             head);
    expect_load_error("e5", t, "users[name=u].user.exec");
    snprintf(t, sizeof(t), "%sclusters:\n- name: fake\n  cluster: {server: 'ftp://x'}\n", head);
    expect_load_error("e6", t, "clusters[name=fake].cluster.server");
    snprintf(t, sizeof(t),
             "%sclusters:\n- name: fake\n  cluster: {server: https://x, "
             "certificate-authority: /nonexistent/ca.pem}\n",
             head);
    expect_load_error("e7", t, "certificate-authority");
    expect_load_error("e8", "current-context: [unclosed\n", "line");
    snprintf(t, sizeof(t),
             "%sclusters:\n- name: fake\n  cluster: {server: https://x}\n"
             "users:\n- name: u\n  user: {tokenFile: missing-token}\n",
             head);
    expect_load_error("e9", t, "tokenFile");
    /* Read through wh_yaml_load: values resolve as kubectl resolves them. */
    snprintf(t, sizeof(t),
             "%sclusters:\n- name: fake\n  cluster: {server: https://x}\n"
             "users:\n- name: u\n  user: {token: 12345}\n",
             head);
    /* ... and a credential's value is never in the message (issue 36). */
    expect_load_error("e10", t,
                      "users[name=u].user.token: must be a string, not a number (not shown");
    char p10[512], eb10[WH_ERRBUF_LEN] = "";
    struct wh_kube_config c10;
    path_in(p10, sizeof(p10), "e10");
    assert_int_not_equal(wh_kubeconfig_load(p10, &c10, eb10), WH_OK);
    assert_null(strstr(eb10, "12345"));
    snprintf(t, sizeof(t),
             "%sclusters:\n- name: fake\n  cluster: {server: https://x, "
             "insecure-skip-tls-verify: maybe}\n",
             head);
    expect_load_error("e11", t,
                      "clusters[name=fake].cluster.insecure-skip-tls-verify: \"maybe\" is not "
                      "true or false");
    expect_load_error("e12", "current-context: a\ncurrent-context: b\n", "line 2");
    expect_load_error("e13", "current-context: [a]\n",
                      "current-context: must be a string, not a list");

    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_kube_config cfg;
    assert_int_equal(wh_kubeconfig_load("/nonexistent/kubeconfig", &cfg, errbuf), WH_ERR_IO);
    assert_non_null(strstr(errbuf, "/nonexistent/kubeconfig"));
}

static void test_in_cluster(void **st)
{
    (void)st;
    char errbuf[WH_ERRBUF_LEN] = "", port[16];
    struct wh_kube_config cfg;
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(wh_kubeconfig_in_cluster(&cfg, errbuf), WH_ERR_NOTFOUND);
    assert_non_null(strstr(errbuf, "KUBERNETES_SERVICE_HOST"));
    assert_int_equal(kh_write(srv.dir, "token", KH_TOKEN "\n"), 0);
    snprintf(port, sizeof(port), "%d", srv.port);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", port, 1);
    setenv("WH_SERVICEACCOUNT_DIR", srv.dir, 1);
    assert_int_equal(wh_kubeconfig_in_cluster(&cfg, errbuf), WH_OK);
    enum wh_err err;
    assert_int_equal(probe(&cfg, &err), 200);
    wh_kube_config_clear(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    unsetenv("WH_SERVICEACCOUNT_DIR");
}

/* ---- caches ---------------------------------------------------------------- */

static const struct wh_cache_opts fast = {.trust_ms = 1500,
                                          .watch_timeout_s = 5,
                                          .max_backoff_ms = 400,
                                          .page_size = 7};

/* fast, but trusting the cache for 10 minutes while the API server is
 * away: a watch that comes back resumes rather than relists, however long
 * the fake server takes to restart on a loaded machine (a relist drops
 * vanished pods without a pod_changed call, see cache.h). */
static const struct wh_cache_opts trusting = {.trust_ms = 600000,
                                              .watch_timeout_s = 5,
                                              .max_backoff_ms = 400,
                                              .page_size = 7};

static struct wh_cache *start_cache_opts(const char *kubeconfig, const struct wh_cache_hooks *hooks,
                                         const struct wh_cache_opts *opts)
{
    char p[512], errbuf[WH_ERRBUF_LEN] = "";
    path_in(p, sizeof(p), kubeconfig);
    struct wh_kube_config cfg;
    assert_int_equal(wh_kubeconfig_load(p, &cfg, errbuf), WH_OK);
    struct wh_kube *k = wh_kube_new(&cfg, errbuf);
    assert_non_null(k);
    wh_kube_config_clear(&cfg);
    struct wh_cache *c = wh_cache_new(k, hooks, opts, errbuf);
    assert_non_null(c);
    return c;
}

static struct wh_cache *start_cache(const char *kubeconfig, const struct wh_cache_hooks *hooks)
{
    return start_cache_opts(kubeconfig, hooks, &fast);
}

static int count_fn(void *arg, const struct wh_pod_rec *pod)
{
    (void)pod;
    (*(size_t *)arg)++;
    return 0;
}

static size_t group_size(struct wh_cache *c, const char *ns, const char *cluster, const char *group)
{
    char errbuf[WH_ERRBUF_LEN];
    size_t n = 0;
    int stopped;
    assert_int_equal(wh_cache_each_group_pod(c, ns, cluster, group, count_fn, &n, &stopped, errbuf),
                     WH_OK);
    return n;
}

static bool wait_group(struct wh_cache *c, const char *ns, const char *cluster, const char *group,
                       size_t want, long ms)
{
    for (long end = kh_now_ms() + ms; kh_now_ms() < end; kh_sleep_ms(20))
        if (group_size(c, ns, cluster, group) == want)
            return true;
    return group_size(c, ns, cluster, group) == want;
}

static bool wait_synced(struct wh_cache *c, long ms)
{
    const char *why;
    for (long end = kh_now_ms() + ms; kh_now_ms() < end; kh_sleep_ms(20))
        if (wh_cache_ready(c, &why))
            return true;
    return false;
}

/* count pods of cluster/group "tpu", hosts 0..n-1 of replica 0, names with a prefix */
static void put_pods_as(const char *cluster, const char *prefix, int from, int to, bool del,
                        bool silent)
{
    char *body = malloc(1 << 20), *o = body;
    assert_non_null(body);
    o += sprintf(o, "[");
    for (int i = from; i < to; i++)
        o += sprintf(o,
                     "%s{\"metadata\":{\"name\":\"%s-%d\",\"namespace\":\"ns\",\"labels\":{"
                     "\"ray.io/cluster\":\"%s\",\"ray.io/group\":\"tpu\",\"ray.io/node-type\":"
                     "\"worker\",\"app.kubernetes.io/created-by\":\"kuberay-operator\","
                     "\"replicaIndex\":\"tpu-0\"}},\"spec\":{\"containers\":[{\"name\":\"w\","
                     "\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}},\"env\":[{\"name\":"
                     "\"TPU_WORKER_ID\",\"value\":\"%d\"}]}]}}",
                     i > from ? "," : "", prefix, i, cluster, i);
    sprintf(o, "]");
    const char *what = del ? (silent ? "pods/delete?silent=1" : "pods/delete")
                           : (silent ? "pods?silent=1" : "pods");
    assert_int_equal(kh_control(&srv, what, body, NULL), 0);
    free(body);
}

static void put_pods(const char *cluster, const char *prefix, int from, int to, bool del)
{
    put_pods_as(cluster, prefix, from, to, del, false);
}

static void put_pods_silent(const char *cluster, const char *prefix, int from, int to, bool del)
{
    put_pods_as(cluster, prefix, from, to, del, true);
}

/* What the pod watch's hooks reported (cache.h), and whether each pod
 * change was already applied to the cache when its hook ran. */
struct hook_log {
    struct wh_cache *_Atomic c; /* set once wh_cache_new() returned */
    atomic_long upserts, deletes, misapplied, healthy, down, current;
};

static int find_name(void *arg, const struct wh_pod_rec *pod)
{
    return !strcmp(pod->name, arg);
}

static void hook_pod_changed(void *arg, const struct wh_pod_rec *pod, const cJSON *obj, bool deleted)
{
    struct hook_log *h = arg;
    (void)obj;
    atomic_fetch_add(deleted ? &h->deletes : &h->upserts, 1);
    struct wh_cache *c = atomic_load(&h->c);
    char errbuf[WH_ERRBUF_LEN];
    int found = 0;
    if (c && (wh_cache_each_group_pod(c, pod->ns, pod->cluster, pod->group, find_name,
                                      (void *)pod->name, &found, errbuf) ||
              found == deleted))
        atomic_fetch_add(&h->misapplied, 1);
}

static void hook_pods_health(void *arg, long since_ms)
{
    struct hook_log *h = arg;
    atomic_fetch_add(since_ms >= 0 ? &h->healthy : &h->down, 1);
}

static void hook_pods_current(void *arg, long at_ms)
{
    struct hook_log *h = arg;
    (void)at_ms;
    atomic_fetch_add(&h->current, 1);
}

static void test_cache_restart_and_gone(void **st)
{
    (void)st;
    static struct hook_log hl;
    const struct wh_cache_hooks hooks = {.arg = &hl,
                                         .pod_changed = hook_pod_changed,
                                         .pods_health = hook_pods_health,
                                         .pods_current = hook_pods_current};
    assert_int_equal(kh_kubeconfig(&srv, "kc-cache", NULL), 0);
    put_pods("restart", "p", 0, 20, false);
    /* Pods the selector excludes never reach the cache. */
    assert_int_equal(kh_control(&srv, "pods",
                                "[{\"metadata\":{\"name\":\"head\",\"namespace\":\"ns\",\"labels\":"
                                "{\"ray.io/cluster\":\"restart\",\"ray.io/group\":\"tpu\","
                                "\"ray.io/node-type\":\"head\"}},\"spec\":{\"containers\":[]}}]",
                                NULL),
                     0);
    /* trusting: the watch must resume after the restart below (the pod
     * deletions after it reach the hooks only through the watch); with
     * fast's 1.5 s a restart slowed by load made it relist, and the
     * deletions count below came up short. */
    struct wh_cache *c = start_cache_opts("kc-cache", &hooks, &trusting);
    atomic_store(&hl.c, c);
    assert_true(wait_synced(c, 30000));
    assert_true(wait_group(c, "ns", "restart", "tpu", 20, 30000));
    struct wh_cache_stats cs;
    wh_cache_stats(c, &cs);
    assert_int_equal(cs.nodes, 4);
    assert_null(wh_cache_pods_unavailable(c));

    /* Watch events flow. */
    put_pods("restart", "p", 20, 30, false);
    put_pods("restart", "p", 0, 5, true);
    assert_true(wait_group(c, "ns", "restart", "tpu", 25, 30000));

    /* Stop the server mid-watch, change nothing meanwhile, restart it: the
     * watch resumes; then changes after the restart arrive. */
    kh_server_stop(&srv);
    kh_sleep_ms(300);
    static const char *const args[] = {"--bookmark-interval", "0.5", NULL};
    assert_int_equal(kh_server_start(&srv, args), 0);
    put_pods("restart", "p", 30, 40, false);
    put_pods("restart", "p", 5, 10, true);
    assert_true(wait_group(c, "ns", "restart", "tpu", 30, 30000));
    wh_cache_stats(c, &cs);
    assert_true(cs.reconnects >= 1);
    assert_int_equal(cs.nodes, 4);

    /* 410 Gone, twice: changes the watch never reports (lost history),
     * then (a) resuming from the old version is refused, (b) an open watch
     * gets a 410 ERROR event. Only a relist can converge. */
    for (int round = 0; round < 2; round++) {
        unsigned long relists = cs.relists;
        long gone = kh_stat(&srv, "gone");
        char q[32];
        snprintf(q, sizeof(q), "q%d", round);
        put_pods_silent("restart", q, 0, 8, false);
        put_pods_silent("restart", "p", 10 + round * 5, 15 + round * 5, true);
        assert_int_equal(kh_control(&srv, "expire", round ? "{\"in_stream\":true}" : NULL, NULL), 0);
        assert_true(wait_group(c, "ns", "restart", "tpu", 33 + round * 3, 30000));
        wh_cache_stats(c, &cs);
        assert_true(cs.relists > relists);
        assert_true(kh_stat(&srv, "gone") > gone);
    }
    /* Nothing leaks across relists: interned strings stay few. */
    assert_true(cs.interned < 16);
    wh_cache_free(c);
    /* The hooks saw the pods (the head pod is not one) and the deletions,
     * each after the cache had applied it; the watch went down with the
     * server and came back; syncs and events made the cache current. */
    assert_true(atomic_load(&hl.upserts) >= 40);
    assert_true(atomic_load(&hl.deletes) >= 10);
    assert_int_equal(atomic_load(&hl.misapplied), 0);
    assert_true(atomic_load(&hl.down) >= 1);
    assert_true(atomic_load(&hl.healthy) >= 2);
    assert_true(atomic_load(&hl.current) >= 3);
}

/* A server that answers every watch with an ERROR event (not 410) must be
 * retried with backoff, not in a tight loop; the cache converges once it
 * heals. */
static void test_watch_error_backs_off(void **st)
{
    (void)st;
    assert_int_equal(kh_kubeconfig(&srv, "kc-sick", NULL), 0);
    struct wh_cache *c = start_cache("kc-sick", NULL);
    assert_true(wait_synced(c, 30000));
    assert_int_equal(kh_control(&srv, "watch_error", "{\"code\":500}", NULL), 0);
    assert_int_equal(kh_control(&srv, "close_watches", NULL, NULL), 0);
    long before = kh_stat(&srv, "watches");
    kh_sleep_ms(2000);
    long during = kh_stat(&srv, "watches") - before;
    /* Heal first, so that a failure here does not sink the next tests. */
    assert_int_equal(kh_control(&srv, "watch_error", "{\"code\":0}", NULL), 0);
    /* Two watchers with backoff capped at 400 ms open about 12 watches in
     * 2 s; a tight loop opens hundreds. Roomy bound for a loaded machine. */
    if (during > 60)
        fail_msg("%ld watches in 2 s against a failing server: no backoff", during);
    put_pods("sick", "p", 0, 3, false);
    assert_true(wait_group(c, "ns", "sick", "tpu", 3, 30000));
    wh_cache_free(c);
}

static bool file_has_all(const char *path, const char *a, const char *b)
{
    char *t = kh_slurp(path);
    bool ok = t && strstr(t, a) && strstr(t, b);
    free(t);
    return ok;
}

/* Send the log (fd 2) to a file until log_restore(); returns the saved fd. */
static int log_to(const char *path)
{
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    wh_log_set_verbosity(0);
    return saved;
}

static void log_restore(int saved)
{
    wh_log_set_verbosity(getenv("WH_TEST_VERBOSE") ? 1 : -1);
    dup2(saved, 2);
    close(saved);
}

/* 401 and 403 get a log line that says what to fix (credentials, RBAC),
 * and never the token. */
static void test_auth_failures_logged(void **st)
{
    (void)st;
    assert_int_equal(kh_control(&srv, "tokens", "[\"" KH_TOKEN "\",\"forbidden-1\"]", NULL), 0);
    assert_int_equal(kh_control(&srv, "forbidden", "[\"forbidden-1\"]", NULL), 0);
    assert_int_equal(kh_kubeconfig(&srv, "kc-401", "    token: wrong-token-xyz\n"), 0);
    assert_int_equal(kh_kubeconfig(&srv, "kc-403", "    token: forbidden-1\n"), 0);
    char logp[512];
    path_in(logp, sizeof(logp), "auth.log");
    int saved = log_to(logp);
    struct wh_cache *c401 = start_cache("kc-401", NULL), *c403 = start_cache("kc-403", NULL);
    bool seen = false;
    for (long end = kh_now_ms() + 30000; !seen && kh_now_ms() < end; kh_sleep_ms(50))
        seen = file_has_all(logp, "\"status\":401", "\"status\":403");
    wh_cache_free(c401);
    wh_cache_free(c403);
    log_restore(saved);
    assert_int_equal(kh_control(&srv, "forbidden", "[]", NULL), 0);
    assert_int_equal(kh_control(&srv, "tokens", "[\"" KH_TOKEN "\"]", NULL), 0);
    assert_true(seen);
    assert_true(file_has_all(logp, "check the bearer token", "RBAC: the webhook's service account"));
    char *text = kh_slurp(logp);
    assert_non_null(text);
    assert_null(strstr(text, "wrong-token-xyz"));
    assert_null(strstr(text, "forbidden-1"));
    free(text);
}

/* A watch answered with a proxy's error page (not a Status) is logged with
 * its HTTP status, not as a torn stream of a 200. */
static void test_watch_error_page_logged(void **st)
{
    (void)st;
    assert_int_equal(kh_kubeconfig(&srv, "kc-proxy", NULL), 0);
    struct wh_cache *c = start_cache("kc-proxy", NULL);
    assert_true(wait_synced(c, 30000));
    char logp[512];
    path_in(logp, sizeof(logp), "proxy.log");
    int saved = log_to(logp);
    assert_int_equal(kh_control(&srv, "watch_error", "{\"code\":502,\"html\":true}", NULL), 0);
    assert_int_equal(kh_control(&srv, "close_watches", NULL, NULL), 0);
    bool seen = false;
    for (long end = kh_now_ms() + 30000; !seen && kh_now_ms() < end; kh_sleep_ms(50))
        seen = file_has_all(logp, "\"status\":502", "without a Kubernetes Status");
    assert_int_equal(kh_control(&srv, "watch_error", "{\"code\":0}", NULL), 0);
    wh_cache_free(c);
    log_restore(saved);
    assert_true(seen);
    char *text = kh_slurp(logp);
    assert_non_null(text);
    assert_null(strstr(text, "\"status\":200"));
    free(text);
}

static void test_token_rotation(void **st)
{
    (void)st;
    assert_int_equal(kh_write(srv.dir, "rot-token", "rotate-1\n"), 0);
    assert_int_equal(kh_kubeconfig(&srv, "kc-rot", "    tokenFile: rot-token\n"), 0);
    assert_int_equal(kh_control(&srv, "tokens", "[\"" KH_TOKEN "\",\"rotate-1\"]", NULL), 0);
    struct wh_cache *c = start_cache("kc-rot", NULL);
    assert_true(wait_synced(c, 30000));
    put_pods("rot", "r", 0, 3, false);
    assert_true(wait_group(c, "ns", "rot", "tpu", 3, 30000));

    /* The old token stops working; the watch is cut. */
    assert_int_equal(kh_control(&srv, "tokens", "[\"" KH_TOKEN "\",\"rotate-2\"]", NULL), 0);
    long unauthorized = kh_stat(&srv, "unauthorized");
    assert_int_equal(kh_control(&srv, "close_watches", NULL, NULL), 0);
    put_pods("rot", "r", 3, 6, false);
    for (long end = kh_now_ms() + 30000;
         kh_stat(&srv, "unauthorized") <= unauthorized && kh_now_ms() < end;)
        kh_sleep_ms(50);
    assert_true(kh_stat(&srv, "unauthorized") > unauthorized);
    assert_int_equal(group_size(c, "ns", "rot", "tpu"), 3);
    /* The kubelet rotates the file: picked up on the next reconnect. */
    assert_int_equal(kh_write(srv.dir, "rot-token", "rotate-2\n"), 0);
    assert_true(wait_group(c, "ns", "rot", "tpu", 6, 30000));
    wh_cache_free(c);
    assert_int_equal(kh_control(&srv, "tokens", "[\"" KH_TOKEN "\"]", NULL), 0);
}

/* ---- admissions ------------------------------------------------------------ */

static struct wh_admit *start_admit_opts(const char *kubeconfig, bool standalone,
                                         const struct wh_cache_opts *cache, long claim_budget_ms)
{
    char p[512], errbuf[WH_ERRBUF_LEN] = "";
    path_in(p, sizeof(p), kubeconfig);
    struct wh_admit_opts o = {.standalone = standalone,
                              .kubeconfig_path = p,
                              .cache = cache,
                              .claim_budget_ms = claim_budget_ms};
    struct wh_admit *ad = wh_admit_new(&o, errbuf);
    if (!ad)
        fail_msg("wh_admit_new: %s", errbuf);
    return ad;
}

static struct wh_admit *start_admit(const char *kubeconfig, bool standalone)
{
    return start_admit_opts(kubeconfig, standalone, &fast, 0);
}

static bool wait_ready(struct wh_admit *ad, long ms)
{
    char why[512] = "";
    for (long end = kh_now_ms() + ms; kh_now_ms() < end; kh_sleep_ms(20))
        if (wh_admit_ready(ad, why, sizeof(why)))
            return true;
    fprintf(stderr, "not ready: %s\n", why);
    return false;
}

#define RACERS 64
#define HOSTS 16

struct racer {
    struct wh_admit *ad;
    pthread_barrier_t *start;
    const char *body;
    const char *cluster;
    int idx;
    bool create; /* also create the pod in the fake API server */
    long replica, host;
    bool ok;
    char err[WH_ERRBUF_LEN];
};

static void *race(void *arg)
{
    struct racer *r = arg;
    pthread_barrier_wait(r->start);
    struct wh_engine_result res;
    enum wh_err err = wh_admit_review(r->ad, r->body, strlen(r->body), WH_ROUTE_MUTATE, &res,
                                      r->err);
    if (err)
        return NULL;
    if (!res.allowed || !res.assigned) {
        snprintf(r->err, sizeof(r->err), "not assigned: %s", res.message ? res.message : "");
        wh_engine_result_free(&res);
        return NULL;
    }
    r->replica = res.replica;
    r->host = res.host;
    r->ok = res.n_hosts == HOSTS;
    if (!r->ok)
        snprintf(r->err, sizeof(r->err), "n_hosts %ld", res.n_hosts);
    if (r->create) {
        char name[128];
        snprintf(name, sizeof(name), "%s-w-%d", r->cluster, r->idx);
        char *pod = kh_created_pod(r->body, name, res.replica, res.host, res.n_tpu_containers);
        if (r->ok && (!pod || kh_control(&srv, "pods", pod, NULL)))
            r->ok = false;
        free(pod);
    }
    wh_engine_result_free(&res);
    return NULL;
}

/* n concurrent admissions of body into one 16-host group, spread over the
 * n_ads webhook replicas ads: n / 16 full replicas from first_replica on. */
static void race_body(struct wh_admit **ads, int n_ads, const char *body, int n,
                      const char *cluster, bool create, int expect_replicas, int first_replica)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    struct racer rs[RACERS];
    pthread_t th[RACERS];
    assert_true(n <= RACERS);
    for (int i = 0; i < n; i++) {
        rs[i] = (struct racer){.ad = ads[i % n_ads],
                               .start = &start,
                               .body = body,
                               .cluster = cluster,
                               .idx = i + first_replica * HOSTS,
                               .create = create};
        assert_int_equal(pthread_create(&th[i], NULL, race, &rs[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    int seen[64][HOSTS];
    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < n; i++) {
        if (!rs[i].ok)
            fail_msg("%s admission %d failed: %s", cluster, i, rs[i].err);
        long r = rs[i].replica - first_replica;
        assert_true(r >= 0 && r < expect_replicas);
        assert_true(rs[i].host >= 0 && rs[i].host < HOSTS);
        seen[r][rs[i].host]++;
    }
    for (int r = 0; r < expect_replicas; r++)
        for (int h = 0; h < HOSTS; h++)
            if (seen[r][h] != 1)
                fail_msg("%s: replica %d host %d assigned %d times", cluster, r + first_replica, h,
                         seen[r][h]);
}

/* 64 concurrent admissions into one 16-host group: 4 full replicas. */
static void race_round(struct wh_admit *ad, const char *cluster, bool create, int expect_replicas,
                       int first_replica)
{
    char *body = kh_review(tmpl16, cluster, "tpu");
    assert_non_null(body);
    race_body(&ad, 1, body, RACERS, cluster, create, expect_replicas, first_replica);
    free(body);
}

static void test_concurrent_legacy_kubernetes(void **st)
{
    (void)st;
    assert_int_equal(kh_kubeconfig(&srv, "kc-admit", NULL), 0);
    /* The verdict is the ids, not the latency: 64 racers' claims and the
     * cache's watch go through one TLS fake API server, which a loaded
     * machine (ASan, 20+ busy loops) slows past the 3 s claim budget and
     * the fast cache's 1.5 s trust. Both are made patient here: what a
     * claim that runs out of time does is not this test's question. */
    struct wh_admit *ad = start_admit_opts("kc-admit", false, &trusting, 25000);
    assert_true(wait_ready(ad, 30000));
    for (int round = 0; round < 12; round++) {
        char cluster[64];
        snprintf(cluster, sizeof(cluster), "race-%d", round);
        /* Even rounds also create the pods, so the watch confirms
         * reservations while other admissions run. */
        race_round(ad, cluster, round % 2 == 0, RACERS / HOSTS, 0);
        if (round % 2 == 0) {
            /* Later admissions see cache + ledger together: replica 4 on. */
            race_round(ad, cluster, false, RACERS / HOSTS, RACERS / HOSTS);
        }
    }
    struct wh_mgauges as;
    wh_admit_stats(ad, &as);
    assert_true(as.synced);
    wh_admit_free(ad);
}

static void test_concurrent_legacy_standalone(void **st)
{
    (void)st;
    struct wh_admit *ad = start_admit("unused", true);
    assert_true(wait_ready(ad, 10));
    for (int round = 0; round < 40; round++) {
        char cluster[64];
        snprintf(cluster, sizeof(cluster), "alone-%d", round);
        race_round(ad, cluster, false, RACERS / HOSTS, 0);
    }
    wh_admit_free(ad);
}

static long admit_host(struct wh_admit *ad, const char *tmpl, const char *cluster, long *replica)
{
    char errbuf[WH_ERRBUF_LEN];
    char *body = kh_review(tmpl, cluster, "tpu");
    struct wh_engine_result res;
    assert_int_equal(wh_admit_review(ad, body, strlen(body), WH_ROUTE_ANY, &res, errbuf), WH_OK);
    assert_true(res.allowed && res.assigned);
    long host = res.host;
    *replica = res.replica;
    wh_engine_result_free(&res);
    free(body);
    return host;
}

/* Standalone: the ledger never forgets, except that a RayCluster created
 * again under the same namespace/name starts with fresh ids. */
static void test_standalone_recreated_cluster(void **st)
{
    (void)st;
    char *rc = read_tmpl("raycluster-v6e-16.json");
    struct wh_admit *ad = start_admit("unused", true);
    long r;
    for (long i = 0; i < 5; i++)
        assert_int_equal(admit_host(ad, tmpl16, "again", &r), i);
    struct wh_mgauges as;
    wh_admit_stats(ad, &as);
    assert_int_equal(as.reservations, 5);
    char errbuf[WH_ERRBUF_LEN];
    /* Another cluster's creation changes nothing. */
    char *other = kh_review(rc, "other", "tpu");
    struct wh_engine_result res;
    assert_int_equal(wh_admit_review(ad, other, strlen(other), WH_ROUTE_VALIDATE, &res, errbuf),
                     WH_OK);
    assert_true(res.allowed);
    wh_engine_result_free(&res);
    assert_int_equal(admit_host(ad, tmpl16, "again", &r), 5);
    /* Re-created: ids start over. */
    char *again = kh_review(rc, "again", "tpu");
    assert_int_equal(wh_admit_review(ad, again, strlen(again), WH_ROUTE_VALIDATE, &res, errbuf),
                     WH_OK);
    assert_true(res.allowed);
    wh_engine_result_free(&res);
    wh_admit_stats(ad, &as);
    assert_int_equal(as.reservations, 0);
    /* A dry run reserves nothing: the next real admission gets the same id. */
    char *dry = kh_review(tmpl16, "again", "tpu");
    char *flag = strstr(dry, "\"dryRun\": false");
    assert_non_null(flag);
    memcpy(flag, "\"dryRun\": true ", 15);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(wh_admit_review(ad, dry, strlen(dry), WH_ROUTE_ANY, &res, errbuf), WH_OK);
        assert_true(res.allowed);
        assert_false(res.assigned);
        wh_engine_result_free(&res);
    }
    wh_admit_stats(ad, &as);
    assert_int_equal(as.reservations, 0);
    free(dry);
    assert_int_equal(admit_host(ad, tmpl16, "again", &r), 0);
    assert_int_equal(r, 0);
    free(other);
    free(again);
    free(rc);
    wh_admit_free(ad);
}

static bool wait_reservations(struct wh_admit *ad, size_t want, long ms)
{
    struct wh_mgauges as;
    for (long end = kh_now_ms() + ms; kh_now_ms() < end; kh_sleep_ms(20)) {
        wh_admit_stats(ad, &as);
        if (as.reservations == want)
            return true;
    }
    return false;
}

/* Kubernetes mode: a reservation whose pod never appears (a later admission
 * plugin rejected it) is released after the TTL; one whose pod appears is
 * confirmed and the pod itself holds the id from then on. */
static void test_reservation_lifecycle(void **st)
{
    (void)st;
    char p[512], errbuf[WH_ERRBUF_LEN];
    assert_int_equal(kh_kubeconfig(&srv, "kc-admit", NULL), 0);
    path_in(p, sizeof(p), "kc-admit");
    /* The ledger alone: worker-id claims (tested by test_replicas.py) would
     * hold ids for their own lifetime. */
    struct wh_admit_opts o = {.kubeconfig_path = p,
                              .reservation_ttl_ms = 600,
                              .cache = &fast,
                              .claims_off = true};
    struct wh_admit *ad = wh_admit_new(&o, errbuf);
    assert_non_null(ad);
    assert_true(wait_ready(ad, 30000));
    long r;
    assert_int_equal(admit_host(ad, tmpl16, "ttl", &r), 0);
    assert_int_equal(admit_host(ad, tmpl16, "ttl", &r), 1); /* seen at once */
    assert_true(wait_reservations(ad, 0, 30000));           /* never created: released */
    assert_int_equal(admit_host(ad, tmpl16, "ttl", &r), 0);
    /* This time the pod is created: confirmed, and the id stays taken. */
    char *body = kh_review(tmpl16, "ttl", "tpu");
    char *pod = kh_created_pod(body, "ttl-w-0", 0, 0, 1);
    assert_int_equal(kh_control(&srv, "pods", pod, NULL), 0);
    assert_true(wait_reservations(ad, 0, 30000));
    kh_sleep_ms(1000); /* past the TTL */
    assert_int_equal(admit_host(ad, tmpl16, "ttl", &r), 1);
    /* Deleting the pod frees its id (through the cache). */
    assert_int_equal(kh_control(&srv, "pods/delete", pod, NULL), 0);
    assert_true(wait_reservations(ad, 0, 30000));
    assert_int_equal(admit_host(ad, tmpl16, "ttl", &r), 0);
    free(pod);
    free(body);
    wh_admit_free(ad);
}

/* A watch that stays open but goes silent (a half-dead connection) holds
 * back the pod a reservation waits for: the reservation must outlive the
 * TTL, or the pod's id is handed out a second time. */
static void test_silent_watch_keeps_reservations(void **st)
{
    (void)st;
    char p[512], errbuf[WH_ERRBUF_LEN];
    assert_int_equal(kh_kubeconfig(&srv, "kc-admit", NULL), 0);
    path_in(p, sizeof(p), "kc-admit");
    /* The ledger alone: worker-id claims (tested by test_replicas.py) would
     * hold ids for their own lifetime. */
    struct wh_admit_opts o = {.kubeconfig_path = p,
                              .reservation_ttl_ms = 600,
                              .cache = &fast,
                              .claims_off = true};
    struct wh_admit *ad = wh_admit_new(&o, errbuf);
    assert_non_null(ad);
    assert_true(wait_ready(ad, 30000));
    long r;
    assert_int_equal(admit_host(ad, tmpl16, "silent", &r), 0);
    assert_int_equal(kh_control(&srv, "stall", "{\"on\":true}", NULL), 0);
    char *body = kh_review(tmpl16, "silent", "tpu");
    char *pod = kh_created_pod(body, "silent-w-0", 0, 0, 1);
    assert_int_equal(kh_control(&srv, "pods", pod, NULL), 0); /* its event is held back */
    kh_sleep_ms(2000);                                        /* > 3 TTLs of silence */
    long host = admit_host(ad, tmpl16, "silent", &r);
    assert_int_equal(kh_control(&srv, "stall", "{\"on\":false}", NULL), 0);
    assert_int_equal(host, 1);
    /* Heard again: the pod confirms host 0, host 1 (never created) expires. */
    assert_true(wait_reservations(ad, 0, 30000));
    assert_int_equal(admit_host(ad, tmpl16, "silent", &r), 1);
    free(pod);
    free(body);
    /* Shutting down never hangs on a watch blocked in libcurl. */
    assert_int_equal(kh_control(&srv, "stall", "{\"on\":true}", NULL), 0);
    kh_sleep_ms(300);
    long t0 = kh_now_ms();
    wh_admit_free(ad);
    long took = kh_now_ms() - t0;
    assert_int_equal(kh_control(&srv, "stall", "{\"on\":false}", NULL), 0);
    if (took > 10000)
        fail_msg("wh_admit_free took %ld ms with silent watches open", took);
}

static void test_1024_hosts_back_to_back(void **st)
{
    (void)st;
    assert_int_equal(kh_kubeconfig(&srv, "kc-admit", NULL), 0);
    struct wh_admit *ad = start_admit("kc-admit", false);
    assert_true(wait_ready(ad, 30000));
    char *body = kh_review(tmpl1024, "big", "tpu");
    static char seen[1024];
    memset(seen, 0, sizeof(seen));
    char errbuf[WH_ERRBUF_LEN];
    char batch[1 << 16];
    size_t nb = 0;
    char *out = batch;
    for (int i = 0; i < 1024; i++) {
        struct wh_engine_result res;
        assert_int_equal(wh_admit_review(ad, body, strlen(body), WH_ROUTE_MUTATE, &res, errbuf),
                         WH_OK);
        if (!res.allowed || !res.assigned)
            fail_msg("admission %d: %s", i, res.message ? res.message : "not assigned");
        assert_int_equal(res.replica, 0);
        assert_int_equal(res.n_hosts, 1024);
        assert_true(res.host >= 0 && res.host < 1024);
        assert_int_equal(seen[res.host]++, 0);
        /* Create the pods as we go, in batches, like the API server would. */
        char name[64];
        snprintf(name, sizeof(name), "big-w-%d", i);
        char *pod = kh_created_pod(body, name, res.replica, res.host, res.n_tpu_containers);
        assert_non_null(pod);
        pod[strlen(pod) - 1] = '\0'; /* drop ']' */
        out += sprintf(out, "%s%s", nb ? "," : "[", pod + 1);
        free(pod);
        if (++nb == 32 || i == 1023) {
            sprintf(out, "]");
            assert_int_equal(kh_control(&srv, "pods", batch, NULL), 0);
            nb = 0;
            out = batch;
        }
        wh_engine_result_free(&res);
    }
    for (int h = 0; h < 1024; h++)
        assert_int_equal(seen[h], 1);
    free(body);
    wh_admit_free(ad);
}

/* A port nothing listens on. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void expect_review(struct wh_admit *ad, const char *tmpl, bool allowed, const char *needle)
{
    char errbuf[WH_ERRBUF_LEN];
    char *body = kh_review(tmpl, "lonely", "tpu");
    struct wh_engine_result res;
    assert_int_equal(wh_admit_review(ad, body, strlen(body), WH_ROUTE_MUTATE, &res, errbuf), WH_OK);
    if (res.allowed != allowed)
        fail_msg("expected allowed=%d: %s", allowed, res.message ? res.message : "");
    if (needle && (!res.message || !strstr(res.message, needle)))
        fail_msg("message should say \"%s\": %s", needle, res.message ? res.message : "(none)");
    /* Every denial here is for want of trusted cluster state (the metrics'
     * reason="cluster_state_unavailable"). */
    assert_int_equal(res.state_unavailable, !allowed);
    wh_engine_result_free(&res);
    free(body);
}

/* Lease times: RFC 3339 as Kubernetes writes Time and MicroTime, offsets
 * honoured; anything else is -1 (a sweep then dates the Lease by its
 * creation, test_claims_unreadable_times). */
static void test_claims_parse_time(void **st)
{
    (void)st;
    assert_int_equal(wh_claims_parse_time_us("2026-12-01T10:34:47.123456Z"),
                     1796121287LL * 1000000 + 123456);
    assert_int_equal(wh_claims_parse_time_us("2026-12-01T10:34:47Z"), 1796121287LL * 1000000);
    assert_int_equal(wh_claims_parse_time_us("1970-01-01T00:00:00.5Z"), 500000);
    /* Digits past microseconds are dropped, not rounded. */
    assert_int_equal(wh_claims_parse_time_us("1970-01-01T00:00:01.123456789Z"), 1123456);
    assert_int_equal(wh_claims_parse_time_us("2024-02-29T23:59:60Z"), 1709251200LL * 1000000);
    /* RFC 3339 offsets (issue 23: they were read as UTC). */
    assert_int_equal(wh_claims_parse_time_us("2026-12-01T12:34:47+02:00"), 1796121287LL * 1000000);
    assert_int_equal(wh_claims_parse_time_us("2026-12-01T05:04:47.5-05:30"),
                     1796121287LL * 1000000 + 500000);
    assert_int_equal(wh_claims_parse_time_us("2026-12-01T10:34:47+00:00"), 1796121287LL * 1000000);
    assert_int_equal(wh_claims_parse_time_us("2026-12-01T10:34:47z"), 1796121287LL * 1000000);
    assert_int_equal(wh_claims_parse_time_us("1970-01-01T01:00:00+01:00"), 0);
    static const char *const bad[] = {
        "0001-01-01T00:00:00Z",      /* Go's zero time, as an unset time is written */
        "1970-01-01T00:30:00+01:00", /* before 1970 once the offset is applied */
        "2026-12-01T10:34:47",       /* no zone */
        "2026-12-01T10:34:47+02",
        "2026-12-01T10:34:47+0200",
        "2026-12-01T10:34:47+24:00",
        "2026-12-01T10:34:47+02:60",
        "2026-12-01T10:34:47+02:00x",
        "2026-12-01T10:34:47Zx",
        "2026-12-01T10:34:47 Z",
        "",
        "yesterday",
        "2026-12-01",
        "2026-12-01T10:34",
        "2026-12-01 10:34:47Z",
        "2026/12/01T10:34:47Z",
        "2026-1-01T10:34:47Z",
        "2026-12-01T1:34:47.0Z",
        "+026-12-01T10:34:47Z",
        "2026-12- 1T10:34:47Z",
        "2026-13-01T10:34:47Z",
        "2026-00-01T10:34:47Z",
        "2026-12-32T10:34:47Z",
        "2026-12-00T10:34:47Z",
        "2026-12-01T24:00:00Z",
        "2026-12-01T10:60:47Z",
        "2026-12-01T10:34:61Z",
        "1969-12-31T23:59:59Z",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(wh_claims_parse_time_us(bad[i]), -1);
    assert_int_equal(wh_claims_parse_time_us(NULL), -1);
}

/* A client of the fake API server through the kubeconfig at path. */
static struct wh_kube *kube_from(const char *path)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_kube_config cfg;
    assert_int_equal(wh_kubeconfig_load(path, &cfg, errbuf), WH_OK);
    struct wh_kube *k = wh_kube_new(&cfg, errbuf);
    wh_kube_config_clear(&cfg);
    if (!k)
        fail_msg("wh_kube_new: %s", errbuf);
    return k;
}

/* A pipeline with claims (in namespace claims_ns) through the kubeconfig
 * at path, its caches synced. */
static struct wh_admit *claiming_admit(const char *path, const char *claims_ns)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_admit_opts o = {.kubeconfig_path = path, .cache = &fast, .claims_namespace = claims_ns};
    struct wh_admit *ad = wh_admit_new(&o, errbuf);
    if (!ad)
        fail_msg("wh_admit_new: %s", errbuf);
    assert_true(wait_ready(ad, 30000));
    return ad;
}

struct take_arg {
    struct wh_claims *c;
    enum wh_claim_outcome oc;
};

static void *take_one(void *p)
{
    struct take_arg *a = p;
    char why[WH_ERRBUF_LEN];
    struct wh_claim_ticket ticket;
    struct wh_claim_key k = {.ns = "ns-a",
                             .cluster = "life",
                             .group = "tpu",
                             .replica = 0,
                             .worker_id = 11};
    a->oc = wh_claims_take(a->c, &k, &ticket, why, sizeof(why));
    return NULL;
}

static long long wall_us_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A claim made after a 429 + Retry-After wait must count its lifetime from
 * the attempt that created it: stamped at the first attempt, the Lease was
 * born (nearly) expired, a sweeper deleted it before its pod reached the
 * other replicas, and another replica handed out the same id
 * (kube.replicas.errors under load). */
static void test_claim_lifetime_from_creating_attempt(void **st)
{
    (void)st;
    char p[512], errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(kh_kubeconfig(&srv, "kc-claims", NULL), 0);
    path_in(p, sizeof(p), "kc-claims");
    struct wh_kube *k = kube_from(p);
    struct wh_kube *reader = kube_from(p); /* reads the Lease back */
    /* A lifetime under twice the budget is refused (and k freed). */
    struct wh_claims_opts shortlived = {.ns = "claims-life", .holder = "h-1", .lifetime_s = 5};
    assert_null(wh_claims_new(k, &shortlived, errbuf));
    assert_non_null(strstr(errbuf, "lifetime of 5s is too short: it must be at least 6s"));
    k = kube_from(p);
    struct wh_claims_opts co = {.ns = "claims-life", .holder = "h-1", .lifetime_s = 60};
    struct wh_claims *c = wh_claims_new(k, &co, errbuf);
    assert_non_null(c);
    assert_int_equal(kh_control(&srv, "faults",
                                "{\"error_rate\":1.0,\"errors\":[\"429\"],\"only\":\"leases\"}",
                                NULL),
                     0);
    struct take_arg a = {.c = c, .oc = WH_CLAIM_FAILED};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, take_one, &a), 0);
    kh_sleep_ms(1500); /* two attempts answered 429, Retry-After: 1 */
    long long cleared_us = wall_us_now();
    assert_int_equal(kh_control(&srv, "faults", "{\"error_rate\":0}", NULL), 0);
    pthread_join(t, NULL);
    assert_int_equal(a.oc, WH_CLAIM_TAKEN);

    char name[WH_CLAIMS_NAME_LEN], path[700];
    wh_claims_name("ns-a", "life", "tpu", 0, 11, name);
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/claims-life/leases/%s",
             name);
    struct wh_buf body;
    wh_buf_init(&body, 1 << 20);
    long status = 0;
    assert_int_equal(wh_kube_get(reader, path, &body, &status, NULL, errbuf), WH_OK);
    assert_int_equal(status, 200);
    cJSON *j = cJSON_ParseWithLength(wh_buf_ptr(&body), wh_buf_len(&body));
    const char *renew = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "spec"), "renewTime"));
    assert_non_null(renew);
    struct tm tm = {0};
    int us = 0;
    assert_int_equal(sscanf(renew, "%4d-%2d-%2dT%2d:%2d:%2d.%6d", &tm.tm_year, &tm.tm_mon,
                            &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us),
                     7);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    long long renew_us = (long long)timegm(&tm) * 1000000 + us;
    /* The creating attempt started after the faults were cleared. */
    assert_true(renew_us >= cleared_us - 100000);
    cJSON_Delete(j);
    wh_buf_free(&body);
    wh_claims_free(c);
    wh_kube_free(reader);
}

/* text: instant t (us since the epoch) as RFC 3339 with a UTC offset of
 * off_min minutes, as some clients write renewTime. */
static void rfc3339_at(long long t_us, int off_min, char *out, size_t n)
{
    time_t local = (time_t)(t_us / 1000000) + off_min * 60;
    struct tm tm;
    gmtime_r(&local, &tm);
    int a = off_min < 0 ? -off_min : off_min;
    snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.000000%c%02d:%02d", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, off_min < 0 ? '-' : '+',
             a / 60, a % 60);
}

/* A claim Lease as another client left it in namespace claims-times,
 * created at created (the API server's stamp; here through the fake's
 * control plane, which keeps it). */
static void put_claim_lease(const char *name, const char *renew, const char *created,
                            long duration_s)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "[{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
             "\"name\":\"%s\",\"namespace\":\"claims-times\",\"creationTimestamp\":\"%s\","
             "\"labels\":{\"app.kubernetes.io/managed-by\":\"tpu-webhook\","
             "\"app.kubernetes.io/component\":\"worker-id-claim\"}},\"spec\":{"
             "\"holderIdentity\":\"other-replica\",\"leaseDurationSeconds\":%ld%s%s%s}}]",
             name, created, duration_s, renew ? ",\"renewTime\":\"" : "", renew ? renew : "",
             renew ? "\"" : "");
    assert_int_equal(kh_control(&srv, "leases", body, NULL), 0);
}

static long lease_named(struct wh_kube *k, const char *name)
{
    char path[300], errbuf[WH_ERRBUF_LEN];
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/claims-times/leases/%s",
             name);
    struct wh_buf body;
    wh_buf_init(&body, 1 << 20);
    long status = 0;
    if (wh_kube_get(k, path, &body, &status, NULL, errbuf))
        status = -1;
    wh_buf_free(&body);
    return status;
}

/* Claims whose times cannot be read (missing, Go's zero time, before 1970)
 * expire by the default lifetime (60 s) counted from their creation, or at
 * once when that cannot be read either: before, a sweep never deleted them and
 * their ids stayed taken for good. An offset in renewTime is honoured: read
 * as UTC, a Lease written at +02:00 looked two hours younger. */
static void test_claims_unreadable_times(void **st)
{
    (void)st;
    char p[512], errbuf[WH_ERRBUF_LEN] = "", t2[64], t3[64];
    assert_int_equal(kh_kubeconfig(&srv, "kc-times", NULL), 0);
    path_in(p, sizeof(p), "kc-times");
    struct wh_kube *w = kube_from(p);
    long long now = wall_us_now();
    char old[64], fresh[64];
    rfc3339_at(now - 120LL * 1000000, 0, old, sizeof(old)); /* over the default 60 s ago */
    rfc3339_at(now, 0, fresh, sizeof(fresh));
    put_claim_lease("no-times", NULL, old, 3600);
    put_claim_lease("zero-time", "0001-01-01T00:00:00.000000Z", old, 3600);
    put_claim_lease("before-1970", "1969-12-31T23:59:59.000000Z", old, 3600);
    put_claim_lease("unreadable-created-now", "0001-01-01T00:00:00.000000Z", fresh, 3600);
    put_claim_lease("no-times-unreadable-creation", NULL, "yesterday", 3600);
    /* 90 min ago, 2 h lifetime: alive; written at -02:00 it reads 3.5 h ago in UTC. */
    rfc3339_at(now - 90LL * 60 * 1000000, -120, t2, sizeof(t2));
    put_claim_lease("west-alive", t2, old, 7200);
    /* 3 h ago, 2 h lifetime: expired; written at +02:00 it reads 1 h ago in UTC. */
    rfc3339_at(now - 180LL * 60 * 1000000, 120, t3, sizeof(t3));
    put_claim_lease("east-expired", t3, old, 7200);
    struct wh_claims_opts co = {.ns = "claims-times", .holder = "sweeper", .lifetime_s = 6};
    struct wh_claims *c = wh_claims_new(kube_from(p), &co, errbuf);
    assert_non_null(c);
    /* Sweeps every 1.5 s; another holder's claims one sweep period late. */
    static const char *const gone[] = {"no-times", "zero-time", "before-1970", "east-expired",
                                       "no-times-unreadable-creation"};
    long long end = wall_us_now() + 20LL * 1000000;
    bool all_gone = false;
    while (!all_gone && wall_us_now() < end) {
        kh_sleep_ms(250);
        all_gone = true;
        for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
            all_gone &= lease_named(w, gone[i]) == 404;
    }
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        if (lease_named(w, gone[i]) != 404)
            fail_msg("claim %s with unreadable or expired times was not swept", gone[i]);
    kh_sleep_ms(3500); /* two more sweeps */
    assert_int_equal(lease_named(w, "unreadable-created-now"), 200);
    assert_int_equal(lease_named(w, "west-alive"), 200);
    wh_claims_free(c);
    wh_kube_free(w);
}

struct admit_arg {
    struct wh_admit *ad;
    const char *body;
    struct wh_engine_result res;
    enum wh_err err;
    char errbuf[WH_ERRBUF_LEN];
};

static void *admit_one(void *p)
{
    struct admit_arg *a = p;
    a->err = wh_admit_review(a->ad, a->body, strlen(a->body), WH_ROUTE_MUTATE, &a->res, a->errbuf);
    return NULL;
}

/* GET the claim Lease of (default, cluster, tpu, 0, worker_id) in claims
 * namespace ns: the HTTP status (-1: no answer); *lease (may be NULL) gets
 * the Lease when 200, else NULL (cJSON_Delete). */
static long get_lease(struct wh_kube *k, const char *ns, const char *cluster, long worker_id,
                      cJSON **lease)
{
    char name[WH_CLAIMS_NAME_LEN], path[700], errbuf[WH_ERRBUF_LEN];
    wh_claims_name("default", cluster, "tpu", 0, worker_id, name);
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ns, name);
    struct wh_buf body;
    wh_buf_init(&body, 1 << 20);
    long status = 0;
    if (wh_kube_get(k, path, &body, &status, NULL, errbuf))
        status = -1;
    if (lease)
        *lease = status == 200 ? cJSON_ParseWithLength(wh_buf_ptr(&body), wh_buf_len(&body)) : NULL;
    wh_buf_free(&body);
    return status;
}

static long lease_status(struct wh_kube *k, const char *ns, const char *cluster, long worker_id)
{
    return get_lease(k, ns, cluster, worker_id, NULL);
}

/* The worker id (of replica 0 of cluster/tpu in namespace default) whose
 * claim last waited at the fake API server's gate, or -1. */
static long held_worker_id(const char *cluster)
{
    cJSON *st = NULL;
    if (kh_control(&srv, "stats", NULL, &st))
        return -1;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(st, "held_names");
    const char *last = cJSON_GetStringValue(cJSON_GetArrayItem(names, cJSON_GetArraySize(names) - 1));
    long found = -1;
    for (long w = 0; last && w < HOSTS && found < 0; w++) {
        char name[WH_CLAIMS_NAME_LEN];
        wh_claims_name("default", cluster, "tpu", 0, w, name);
        if (!strcmp(name, last))
            found = w;
    }
    cJSON_Delete(st);
    return found;
}

/* A claim created after another replica's claim of the same id was made,
 * answered, expired and swept (a slow claim, or clocks apart): the Lease is
 * ours, but a pod holds the id. The claim of the id decided is held at the
 * fake API server's gate while a pod with that id appears in the cache (as
 * if another replica had admitted it and its claim were gone by now); then
 * the gate opens and the claim is created. Without the check after the
 * claim, the pod was answered with that id: two hosts of one slice with one
 * id. */
static void test_claim_after_pod_appeared(void **st)
{
    (void)st;
    char p[512];
    assert_int_equal(kh_kubeconfig(&srv, "kc-super", NULL), 0);
    path_in(p, sizeof(p), "kc-super");
    struct wh_admit *ad = claiming_admit(p, "claims-super");
    struct wh_kube *reader = kube_from(p);
    struct wh_mgauges as;
    wh_admit_stats(ad, &as);
    size_t cached = as.pods_cached;
    long held = kh_stat(&srv, "held");
    assert_true(held >= 0);

    assert_int_equal(kh_control(&srv, "hold", "{\"method\":\"POST\",\"only\":\"leases\"}", NULL), 0);
    struct admit_arg a = {.ad = ad, .body = kh_review(tmpl16, "superseded", "tpu")};
    assert_non_null(a.body);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, admit_one, &a), 0);
    long end = kh_now_ms() + 10000;
    while (kh_stat(&srv, "held") == held && kh_now_ms() < end)
        kh_sleep_ms(10);
    assert_true(kh_stat(&srv, "held") > held); /* an id decided, its claim at the gate */
    long w = held_worker_id("superseded");
    assert_true(w >= 0);
    char *pod = kh_created_pod(a.body, "superseded-elsewhere", 0, w, 1);
    assert_non_null(pod);
    assert_int_equal(kh_control(&srv, "pods", pod, NULL), 0);
    free(pod);
    for (; kh_now_ms() < end; kh_sleep_ms(10)) {
        wh_admit_stats(ad, &as);
        if (as.pods_cached > cached)
            break;
    }
    assert_true(as.pods_cached > cached); /* the cache shows the pod holding id 0 */
    assert_int_equal(kh_control(&srv, "hold", "{}", NULL), 0);
    pthread_join(t, NULL);

    assert_int_equal(a.err, WH_OK);
    if (!a.res.allowed)
        fail_msg("denied: %s", a.res.message ? a.res.message : "");
    assert_int_equal(a.res.replica, 0);
    if (a.res.host == w)
        fail_msg("answered TPU_WORKER_ID %ld, which pod superseded-elsewhere holds", w);
    assert_true(a.res.host >= 0 && a.res.host < HOSTS);
    /* The Lease of the superseded id was given back at once; the new one stands. */
    assert_int_equal(lease_status(reader, "claims-super", "superseded", w), 404);
    assert_int_equal(lease_status(reader, "claims-super", "superseded", a.res.host), 200);
    wh_engine_result_free(&a.res);
    free((char *)a.body);
    wh_kube_free(reader);
    wh_admit_free(ad);
}

/* The tpu-webhook/ray-cluster-uid annotation of the claim of (default,
 * cluster, tpu, 0, worker_id) in namespace ns, into out ("" when none). */
static void claim_cluster_uid(struct wh_kube *k, const char *ns, const char *cluster,
                              long worker_id, char *out, size_t n)
{
    cJSON *j = NULL;
    assert_int_equal(get_lease(k, ns, cluster, worker_id, &j), 200);
    const char *uid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "metadata"),
                                         "annotations"),
        "tpu-webhook/ray-cluster-uid"));
    snprintf(out, n, "%s", uid ? uid : "");
    cJSON_Delete(j);
}

/* A RayCluster deleted and created again under its name within the claim
 * lifetime: the claims of the first instance (uid-a) still stand when the
 * second instance's pods (uid-b) arrive, through two webhook replicas at
 * once. The claims belong to a cluster that is gone, so they are
 * superseded, each exactly once (the preconditions let one DELETE win):
 * the 16 pods get replica 0, ids 0..15, at once, after the API server
 * confirmed that the RayCluster now has their uid (a forged uid supersedes
 * nothing). Before, every id of replica 0 was held by a dead claim and the
 * pods went to replica 1 (a slice that waits for replica 0 to fill). A pod
 * without an ownerReference cannot tell instances apart and meets the
 * claims as before. */
static void test_recreated_cluster_claims(void **st)
{
    (void)st;
    char p[512], errbuf[WH_ERRBUF_LEN] = "", why[WH_ERRBUF_LEN];
    assert_int_equal(kh_kubeconfig(&srv, "kc-recreate", NULL), 0);
    path_in(p, sizeof(p), "kc-recreate");
    struct wh_kube *k = kube_from(p);
    struct wh_kube *reader = kube_from(p); /* reads the claims back */
    /* Instance A's pods were admitted by another replica; then A was deleted. */
    assert_int_equal(kh_control(&srv, "rayclusters",
                                "[{\"metadata\":{\"name\":\"recreated\",\"namespace\":"
                                "\"default\",\"uid\":\"uid-a\"}},{\"metadata\":{\"name\":"
                                "\"ownerless\",\"namespace\":\"default\",\"uid\":\"uid-a\"}}]",
                                NULL),
                     0);
    struct wh_claims_opts co = {.ns = "claims-recreate", .holder = "old-replica"};
    struct wh_claims *old = wh_claims_new(k, &co, errbuf);
    assert_non_null(old);
    const char *clusters[] = {"recreated", "ownerless"};
    for (int i = 0; i < 2; i++)
        for (long w = 0; w < HOSTS; w++) {
            struct wh_claim_key key = {.ns = "default",
                                       .cluster = clusters[i],
                                       .group = "tpu",
                                       .replica = 0,
                                       .worker_id = w,
                                       .cluster_uid = "uid-a"};
            struct wh_claim_ticket t;
            assert_int_equal(wh_claims_take(old, &key, &t, why, sizeof(why)), WH_CLAIM_TAKEN);
        }
    wh_claims_free(old);

    struct wh_admit_opts o = {.kubeconfig_path = p,
                              .cache = &fast,
                              .claims_namespace = "claims-recreate"};
    struct wh_admit *ads[2];
    for (int i = 0; i < 2; i++) {
        ads[i] = wh_admit_new(&o, errbuf);
        if (!ads[i])
            fail_msg("wh_admit_new: %s", errbuf);
        assert_true(wait_ready(ads[i], 30000));
    }
    struct wh_admit *ad = ads[0];
    /* Instance B replaces A under the same name: the API server now says
     * uid-b (superseding asks it). */
    assert_int_equal(kh_control(&srv, "rayclusters",
                                "[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
                                "\"metadata\":{\"name\":\"recreated\",\"namespace\":"
                                "\"default\",\"uid\":\"uid-b\"}}]",
                                NULL),
                     0);
    char *body = kh_owned_review(tmpl16, "recreated", "tpu", "uid-b");
    assert_non_null(body);
    race_body(ads, 2, body, HOSTS, "recreated", false, 1, 0);
    free(body);
    struct wh_mgauges as, as1;
    wh_admit_stats(ads[0], &as);
    wh_admit_stats(ads[1], &as1);
    assert_int_equal(as.claim.superseded_recreated + as1.claim.superseded_recreated, HOSTS);
    assert_int_equal(as.claim.failed + as1.claim.failed, 0);
    wh_admit_free(ads[1]);
    char uid[128];
    claim_cluster_uid(reader, "claims-recreate", "recreated", 5, uid, sizeof(uid));
    assert_string_equal(uid, "uid-b");

    /* A pod naming an owner uid the cluster does not have (written by its
     * author, not by KubeRay) supersedes nothing: it gets a free id of
     * another replica, and the live claims stand. */
    body = kh_owned_review(tmpl16, "recreated", "tpu", "uid-forged");
    struct wh_engine_result fres;
    assert_int_equal(wh_admit_review(ad, body, strlen(body), WH_ROUTE_MUTATE, &fres, errbuf), WH_OK);
    free(body);
    assert_true(fres.allowed);
    assert_int_equal(fres.replica, 1);
    wh_engine_result_free(&fres);
    wh_admit_stats(ad, &as);
    assert_int_equal(as.claim.superseded_recreated + as1.claim.superseded_recreated, HOSTS);
    for (long w = 0; w < HOSTS; w++) {
        claim_cluster_uid(reader, "claims-recreate", "recreated", w, uid, sizeof(uid));
        assert_string_equal(uid, "uid-b");
    }

    /* No ownerReference: the claims hold every id of replica 0, as before. */
    body = kh_review(tmpl16, "ownerless", "tpu");
    struct wh_engine_result res;
    assert_int_equal(wh_admit_review(ad, body, strlen(body), WH_ROUTE_MUTATE, &res, errbuf), WH_OK);
    assert_true(res.allowed);
    assert_int_equal(res.replica, 1);
    wh_engine_result_free(&res);
    free(body);
    uint64_t before = as.claim.superseded_recreated;
    wh_admit_stats(ad, &as);
    assert_int_equal(as.claim.superseded_recreated, before); /* none superseded */
    claim_cluster_uid(reader, "claims-recreate", "ownerless", 5, uid, sizeof(uid));
    assert_string_equal(uid, "uid-a");
    wh_admit_free(ad);
    wh_kube_free(reader);
}

/* A 409 whose Lease cannot be read back (the GET fails) while no attempt
 * of ours was lost: the read was only the staleness check, so the claim is
 * held at once, as before owner uids, not retried until the budget is gone
 * and the pod denied. */
static void test_claim_unreadable_after_conflict(void **st)
{
    (void)st;
    char p[512], errbuf[WH_ERRBUF_LEN] = "", why[WH_ERRBUF_LEN];
    assert_int_equal(kh_kubeconfig(&srv, "kc-unreadable", NULL), 0);
    path_in(p, sizeof(p), "kc-unreadable");
    struct wh_claims_opts co = {.ns = "claims-unreadable", .holder = "replica-a"};
    struct wh_claims *a = wh_claims_new(kube_from(p), &co, errbuf);
    assert_non_null(a);
    co.holder = "replica-b";
    struct wh_claims *b = wh_claims_new(kube_from(p), &co, errbuf);
    assert_non_null(b);
    struct wh_claim_key key = {.ns = "default",
                               .cluster = "unreadable",
                               .group = "tpu",
                               .replica = 0,
                               .worker_id = 3,
                               .cluster_uid = "uid-a"};
    struct wh_claim_ticket t;
    assert_int_equal(wh_claims_take(a, &key, &t, why, sizeof(why)), WH_CLAIM_TAKEN);
    assert_int_equal(kh_control(&srv, "faults",
                                "{\"error_rate\":1.0,\"errors\":[\"500\"],\"only\":\"leases\","
                                "\"method\":\"GET\"}",
                                NULL),
                     0);
    key.cluster_uid = "uid-b"; /* another instance: the 409 is read back */
    long long t0 = wall_us_now();
    enum wh_claim_outcome oc = wh_claims_take(b, &key, &t, why, sizeof(why));
    long long took_ms = (wall_us_now() - t0) / 1000;
    assert_int_equal(kh_control(&srv, "faults", "{\"error_rate\":0}", NULL), 0);
    if (oc != WH_CLAIM_HELD)
        fail_msg("outcome %d after %lld ms (%s), want held", (int)oc, took_ms, why);
    wh_claims_free(a);
    wh_claims_free(b);
}

/* The one percent-encoder of the kube room (reflector.c's continue tokens
 * and resourceVersions, cmd_doctor.c's namespace and label selector). */
static void test_escape(void **state)
{
    (void)state;
    char out[64];
    wh_kube_escape(out, sizeof(out), "ray.io/cluster=a b,c~_-");
    assert_string_equal(out, "ray.io%2Fcluster%3Da%20b%2Cc~_-");
    wh_kube_escape(out, sizeof(out), "");
    assert_string_equal(out, "");
    char small[8]; /* cut before an escape that does not fit */
    wh_kube_escape(small, sizeof(small), "ab/cd");
    assert_string_equal(small, "ab%2F");
}

static void test_no_api_server(void **st)
{
    (void)st;
    struct kh_server fake = srv;
    fake.port = dead_port();
    assert_int_equal(kh_kubeconfig(&fake, "kc-dead", NULL), 0);
    struct wh_admit *ad = start_admit("kc-dead", false);
    char why[256];
    assert_false(wh_admit_ready(ad, why, sizeof(why)));
    assert_non_null(strstr(why, "not synced"));
    /* Legacy: a clear denial, never a guess. Native: works without the API. */
    expect_review(ad, tmpl16, false, "KubeRay will retry");
    expect_review(ad, tmpl16, false, "not synced");
    expect_review(ad, tmpl_native, true, NULL);
    wh_admit_free(ad);
}

/* Start-up never waits for the API server: with every pod list held at the
 * fake's gate, the admission side is built and answers (not synced) while the
 * list is still unanswered, and syncs once the gate opens. Judged on state,
 * not on a clock: a start-up that waited for the list could only return after
 * the gate's own 30 s fallback had let it through, synced. */
static void test_start_while_api_server_holds(void **st)
{
    (void)st;
    assert_int_equal(kh_kubeconfig(&srv, "kc-held", NULL), 0);
    long held = kh_stat(&srv, "held");
    assert_int_equal(kh_control(&srv, "hold", "{\"method\":\"GET\",\"only\":\"pods\"}", NULL), 0);
    struct wh_admit *ad = start_admit("kc-held", false);
    char why[256];
    assert_false(wh_admit_ready(ad, why, sizeof(why)));
    assert_non_null(strstr(why, "not synced"));
    for (long end = kh_now_ms() + 30000; kh_stat(&srv, "held") <= held && kh_now_ms() < end;)
        kh_sleep_ms(20);
    assert_true(kh_stat(&srv, "held") > held); /* the list arrived and waits at the gate */
    assert_false(wh_admit_ready(ad, why, sizeof(why)));
    expect_review(ad, tmpl16, false, "not synced");
    assert_int_equal(kh_control(&srv, "hold", "{}", NULL), 0);
    assert_true(wait_ready(ad, 30000));
    expect_review(ad, tmpl16, true, NULL);
    wh_admit_free(ad);
}

static void test_api_server_lost_after_sync(void **st)
{
    (void)st;
    assert_int_equal(kh_kubeconfig(&srv, "kc-admit", NULL), 0);
    struct wh_admit *ad = start_admit("kc-admit", false);
    assert_true(wait_ready(ad, 30000));
    expect_review(ad, tmpl16, true, NULL);
    struct wh_mgauges as;
    wh_admit_stats(ad, &as);
    assert_true(as.pods_synced && as.nodes_synced && as.pods_trusted);
    assert_int_equal(as.pods_down_ms, 0);
    assert_int_equal(as.nodes_down_ms, 0);
    assert_int_equal(as.legacy_reviews, 1);
    kh_server_stop(&srv);
    kh_sleep_ms(fast.trust_ms + 2500); /* roomy: the loss is noticed at once */
    expect_review(ad, tmpl16, false, "trusted");
    expect_review(ad, tmpl_native, true, NULL);
    /* What the stale-cache alerts read: the watches' down time, the pod
     * cache no longer trusted, the caches still counted as synced. */
    wh_admit_stats(ad, &as);
    assert_true(as.pods_synced && as.nodes_synced);
    assert_false(as.pods_trusted);
    assert_true(as.pods_down_ms > fast.trust_ms);
    assert_true(as.nodes_down_ms > 0);
    assert_int_equal(as.legacy_reviews, 2);
    static const char *const args[] = {"--bookmark-interval", "0.5", NULL};
    assert_int_equal(kh_server_start(&srv, args), 0);
    bool back = false;
    for (long end = kh_now_ms() + 30000; !back && kh_now_ms() < end; kh_sleep_ms(50)) {
        char errbuf[WH_ERRBUF_LEN];
        char *body = kh_review(tmpl16, "lonely", "tpu");
        struct wh_engine_result res;
        assert_int_equal(wh_admit_review(ad, body, strlen(body), WH_ROUTE_MUTATE, &res, errbuf),
                         WH_OK);
        back = res.allowed;
        wh_engine_result_free(&res);
        free(body);
    }
    assert_true(back);
    wh_admit_stats(ad, &as);
    assert_true(as.pods_trusted);
    assert_int_equal(as.pods_down_ms, 0);
    wh_admit_free(ad);
}

/* Every request to the API server (lists, watches, Lease claims) says who
 * sends it: User-Agent tpu-webhook/<version> (commit <commit>), the fake
 * API server counting each User-Agent it saw. Runs after the other tests,
 * so their requests are counted too. */
static void test_user_agent_on_every_call(void **st)
{
    (void)st;
    assert_int_equal(kh_kubeconfig(&srv, "kc-ua", NULL), 0);
    struct wh_admit *ad = start_admit("kc-ua", false);
    assert_true(wait_ready(ad, 30000));
    expect_review(ad, tmpl16, true, NULL); /* a legacy pod: a claim, a Lease create */
    wh_admit_free(ad);
    char want[256];
    snprintf(want, sizeof(want), "tpu-webhook/%s (commit %s)", wh_build_version(),
             wh_build_commit());
    cJSON *stats = NULL;
    assert_int_equal(kh_control(&srv, "stats", NULL, &stats), 0);
    const cJSON *agents = cJSON_GetObjectItemCaseSensitive(stats, "user_agents");
    assert_true(cJSON_IsObject(agents));
    const cJSON *a;
    int n = 0;
    cJSON_ArrayForEach(a, agents)
    {
        if (strcmp(a->string, want))
            fail_msg("an API request with User-Agent \"%s\", not \"%s\"", a->string, want);
        n++;
    }
    assert_int_equal(n, 1);
    assert_true(cJSON_GetObjectItemCaseSensitive(agents, want)->valuedouble >= 3);
    assert_true(kh_stat(&srv, "lease_creates") >= 1);
    cJSON_Delete(stats);
}

/* The claim nonce a legacy answer's patch sets on the pod (annotation
 * tpu-webhook/claim-nonce), into out; false when the patch sets none. */
static bool patch_nonce(const struct wh_engine_result *res, char out[WH_CLAIMS_NONCE_LEN])
{
    cJSON *body = cJSON_Parse(res->body);
    const char *b64 = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(body, "response"),
                                         "patch"));
    struct wh_buf dec;
    wh_buf_init(&dec, 1 << 24);
    bool found = false;
    if (b64 && !wh_b64_decode(&dec, b64, strlen(b64))) {
        cJSON *ops = cJSON_ParseWithLength(wh_buf_ptr(&dec), wh_buf_len(&dec));
        const cJSON *op;
        cJSON_ArrayForEach(op, ops)
        {
            const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "path"));
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(op, "value");
            const char *nonce = NULL;
            if (path && !strcmp(path, "/metadata/annotations/tpu-webhook~1claim-nonce"))
                nonce = cJSON_GetStringValue(v);
            else if (path && !strcmp(path, "/metadata/annotations"))
                nonce = cJSON_GetStringValue(
                    cJSON_GetObjectItemCaseSensitive(v, "tpu-webhook/claim-nonce"));
            if (nonce && strlen(nonce) < WH_CLAIMS_NONCE_LEN) {
                snprintf(out, WH_CLAIMS_NONCE_LEN, "%s", nonce);
                found = true;
            }
        }
        cJSON_Delete(ops);
    }
    wh_buf_free(&dec);
    cJSON_Delete(body);
    return found;
}

/* Until the claim Lease of (default, cluster, tpu, 0, worker_id) in ns
 * answers want (or 15 s pass); its last status. */
static long wait_lease_status(struct wh_kube *k, const char *ns, const char *cluster,
                              long worker_id, long want)
{
    long got = -1;
    for (long end = kh_now_ms() + 15000; kh_now_ms() < end; kh_sleep_ms(20))
        if ((got = lease_status(k, ns, cluster, worker_id)) == want)
            break;
    return got;
}

/* Until ad's claims_released reaches want (or 15 s pass); its last value.
 * The claims' thread counts a release after the DELETE's answer returns,
 * which can be after the Lease is gone. */
static uint64_t wait_released(struct wh_admit *ad, uint64_t want)
{
    struct wh_mgauges as;
    for (long end = kh_now_ms() + 15000;; kh_sleep_ms(20)) {
        wh_admit_stats(ad, &as);
        if (as.claim.released >= want || kh_now_ms() >= end)
            return as.claim.released;
    }
}

/* The pod of host (replica 0) as the API server stores it: carrying the
 * claim nonce when not NULL, with a deletionTimestamp when deleting; a
 * one-element array for /_control/pods. */
static char *stored_pod(const char *review, const char *name, long host, unsigned n_tpu,
                        const char *nonce, bool deleting)
{
    char *text = kh_created_pod(review, name, 0, host, n_tpu);
    assert_non_null(text);
    cJSON *arr = cJSON_Parse(text);
    free(text);
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, 0), "metadata");
    if (nonce) {
        cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
        if (!ann)
            ann = cJSON_AddObjectToObject(meta, "annotations");
        cJSON_AddStringToObject(ann, "tpu-webhook/claim-nonce", nonce);
    }
    if (deleting) {
        cJSON_AddStringToObject(meta, "deletionTimestamp", "2026-12-01T10:34:47Z");
        cJSON_AddNumberToObject(meta, "deletionGracePeriodSeconds", 30);
    }
    text = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    return text;
}

/* Until this replica's cache holds n pods (or 15 s pass). */
static void wait_cached(struct wh_admit *ad, size_t n)
{
    struct wh_mgauges as;
    for (long end = kh_now_ms() + 15000; kh_now_ms() < end; kh_sleep_ms(10)) {
        wh_admit_stats(ad, &as);
        if (as.pods_cached == n)
            return;
    }
    fail_msg("the cache holds %zu pods, want %zu", as.pods_cached, n);
}

/* A claim is given back when the pod carrying its nonce goes, and only
 * then: each legacy answer's patch names its claim's nonce (the Lease's
 * annotation); a slice's pods deleted (KubeRay scaling down: the UPDATE
 * that sets deletionTimestamp, or the DELETE alone) give their claims back
 * as soon as the watch shows it, so replacements made at once get the same
 * slice's free ids (before: replica 1, two slices short until the claims
 * expired). Pods that are not the claim's pod give nothing back, though
 * they carry its ids: an older namesake without a nonce, and a pod whose
 * author copied a live pod's nonce. A dry run's patch names no claim. */
static void test_claim_released_when_pod_goes(void **st)
{
    (void)st;
    char p[512], errbuf[WH_ERRBUF_LEN] = "";
    const char *ns = "claims-release";
    assert_int_equal(kh_kubeconfig(&srv, "kc-release", NULL), 0);
    path_in(p, sizeof(p), "kc-release");
    struct wh_admit *ad = claiming_admit(p, ns);
    struct wh_kube *reader = kube_from(p);
    struct wh_mgauges as;
    wh_admit_stats(ad, &as);
    size_t cached = as.pods_cached;
    char *body = kh_review(tmpl16, "released", "tpu");
    assert_non_null(body);
    char *pods[HOSTS] = {0}, name[64], nonces[HOSTS][WH_CLAIMS_NONCE_LEN];
    unsigned n_tpu = 1;
    for (int i = 0; i < HOSTS; i++) {
        struct wh_engine_result res;
        assert_int_equal(wh_admit_review(ad, body, strlen(body), WH_ROUTE_MUTATE, &res, errbuf),
                         WH_OK);
        if (!res.allowed || res.replica != 0 || pods[res.host])
            fail_msg("pod %d: allowed %d replica %ld host %ld: %s", i, res.allowed, res.replica,
                     res.host, res.message ? res.message : "");
        n_tpu = res.n_tpu_containers;
        char *nonce = nonces[res.host];
        if (!patch_nonce(&res, nonce))
            fail_msg("pod %d: the patch names no claim nonce", i);
        /* The nonce of the claim the answer stands on. */
        cJSON *lease = NULL;
        assert_int_equal(get_lease(reader, ns, "released", res.worker_id, &lease), 200);
        const char *recorded = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(lease, "metadata"),
                                             "annotations"),
            "tpu-webhook/claim-nonce"));
        assert_non_null(recorded);
        assert_string_equal(recorded, nonce);
        cJSON_Delete(lease);
        snprintf(name, sizeof(name), "released-w-%ld", res.host);
        pods[res.host] = stored_pod(body, name, res.host, n_tpu, nonce, false);
        assert_int_equal(kh_control(&srv, "pods", pods[res.host], NULL), 0);
        wh_engine_result_free(&res);
    }
    wait_cached(ad, cached + HOSTS);

    /* Not the claim's pod: an older pod with host 3's ids and no nonce,
     * and a pod carrying host 3's nonce copied from the live one, each
     * terminating, then gone. */
    const char *others[2] = {"released-older-3", "released-forged-3"};
    for (int i = 0; i < 2; i++) {
        char *other = stored_pod(body, others[i], 3, n_tpu, i ? nonces[3] : NULL, true);
        assert_int_equal(kh_control(&srv, "pods", other, NULL), 0);
        wait_cached(ad, cached + HOSTS + 1);
        assert_int_equal(kh_control(&srv, "pods/delete", other, NULL), 0);
        wait_cached(ad, cached + HOSTS);
        free(other);
    }

    /* Host 5: the UPDATE that marks it for deletion gives its claim back. */
    char *going = stored_pod(body, "released-w-5", 5, n_tpu, nonces[5], true);
    assert_int_equal(kh_control(&srv, "pods", going, NULL), 0);
    assert_int_equal(wait_lease_status(reader, ns, "released", 5 * (long)n_tpu, 404), 404);
    /* Host 9: a DELETE with no update before it. */
    assert_int_equal(kh_control(&srv, "pods/delete", pods[9], NULL), 0);
    assert_int_equal(wait_lease_status(reader, ns, "released", 9 * (long)n_tpu, 404), 404);
    for (long h = 0; h < HOSTS; h++)
        if (h != 5 && h != 9 && lease_status(reader, ns, "released", h * (long)n_tpu) != 200)
            fail_msg("the claim of host %ld, whose pod lives, is gone", h);

    /* A dry run: no claim, no nonce. */
    char *dry = strdup(body);
    char *flag = strstr(dry, "\"dryRun\": false");
    assert_non_null(flag);
    memcpy(flag, "\"dryRun\": true ", 15);
    struct wh_engine_result res;
    char unused[WH_CLAIMS_NONCE_LEN];
    assert_int_equal(wh_admit_review(ad, dry, strlen(dry), WH_ROUTE_MUTATE, &res, errbuf), WH_OK);
    assert_true(res.allowed);
    assert_false(patch_nonce(&res, unused));
    wh_engine_result_free(&res);
    free(dry);

    /* The replacements: replica 0, hosts 5 and 9. */
    bool got[HOSTS] = {0};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(wh_admit_review(ad, body, strlen(body), WH_ROUTE_MUTATE, &res, errbuf),
                         WH_OK);
        if (!res.allowed || res.replica != 0 || (res.host != 5 && res.host != 9) || got[res.host])
            fail_msg("replacement %d: allowed %d replica %ld host %ld: %s", i, res.allowed,
                     res.replica, res.host, res.message ? res.message : "");
        got[res.host] = true;
        if (!patch_nonce(&res, nonces[res.host]))
            fail_msg("replacement %d: the patch names no claim nonce", i);
        wh_engine_result_free(&res);
    }
    assert_int_equal(wait_released(ad, 2), 2);

    /* Copied nonces of the replacements' claims, as a relist can show them
     * (the copy first): host 5's claim, its pod not seen yet, is not given
     * back by a copy going; host 9's claim, bound to a copy that a relist
     * showed first, is ambiguous once its own pod shows up, and is not
     * given back when the copy goes. Each copy: the UPDATE, then the
     * DELETE, so that its hook ran before the cache count moves. */
    char *copy5 = stored_pod(body, "released-copy-5", 5, n_tpu, nonces[5], true);
    assert_int_equal(kh_control(&srv, "pods", copy5, NULL), 0);
    wait_cached(ad, cached + HOSTS);
    assert_int_equal(kh_control(&srv, "pods/delete", copy5, NULL), 0);
    wait_cached(ad, cached + HOSTS - 1);
    char *copy9 = stored_pod(body, "released-copy-9", 9, n_tpu, nonces[9], false);
    char *own9 = stored_pod(body, "released-w-9b", 9, n_tpu, nonces[9], false);
    assert_int_equal(kh_control(&srv, "pods", copy9, NULL), 0);
    wait_cached(ad, cached + HOSTS);
    assert_int_equal(kh_control(&srv, "pods", own9, NULL), 0);
    wait_cached(ad, cached + HOSTS + 1);
    free(copy9);
    copy9 = stored_pod(body, "released-copy-9", 9, n_tpu, nonces[9], true);
    assert_int_equal(kh_control(&srv, "pods", copy9, NULL), 0);
    assert_int_equal(kh_control(&srv, "pods/delete", copy9, NULL), 0);
    wait_cached(ad, cached + HOSTS);

    /* Host 12 goes while the claims' thread is inside a sweep's LIST (held
     * at the gate): its replacement's claim meets the Lease (409), which
     * this replica holds for give-back, so the admission gives it back
     * itself and claims again: host 12 of replica 0, not a new replica. */
    long held = kh_stat(&srv, "held");
    assert_int_equal(kh_control(&srv, "hold", "{\"method\":\"GET\",\"only\":\"leases\"}", NULL), 0);
    for (long end = kh_now_ms() + 15000; kh_stat(&srv, "held") == held && kh_now_ms() < end;)
        kh_sleep_ms(10);
    assert_true(kh_stat(&srv, "held") > held); /* the sweep's LIST at the gate */
    char *last = stored_pod(body, "released-w-12", 12, n_tpu, nonces[12], true);
    assert_int_equal(kh_control(&srv, "pods", last, NULL), 0);
    assert_int_equal(kh_control(&srv, "pods/delete", last, NULL), 0);
    wait_cached(ad, cached + HOSTS - 1); /* the UPDATE's hook ran before */
    enum wh_err rerr = wh_admit_review(ad, body, strlen(body), WH_ROUTE_MUTATE, &res, errbuf);
    assert_int_equal(kh_control(&srv, "hold", "{}", NULL), 0);
    assert_int_equal(rerr, WH_OK);
    if (!res.allowed || res.replica != 0 || res.host != 12)
        fail_msg("host 12's replacement: allowed %d replica %ld host %ld: %s", res.allowed,
                 res.replica, res.host, res.message ? res.message : "");
    wh_engine_result_free(&res);
    /* The copies' going was due before that LIST began (a due give-back
     * goes first): a wrong one would have counted by now. */
    assert_int_equal(wait_released(ad, 3), 3);
    assert_int_equal(lease_status(reader, ns, "released", 5 * (long)n_tpu), 200);
    assert_int_equal(lease_status(reader, ns, "released", 9 * (long)n_tpu), 200);
    free(copy5);
    free(copy9);
    free(own9);
    free(last);
    free(going);
    for (int i = 0; i < HOSTS; i++)
        free(pods[i]);
    free(body);
    wh_kube_free(reader);
    wh_admit_free(ad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeconfig_variants),
        cmocka_unit_test(test_kubeconfig_errors),
        cmocka_unit_test(test_in_cluster),
        cmocka_unit_test(test_cache_restart_and_gone),
        cmocka_unit_test(test_watch_error_backs_off),
        cmocka_unit_test(test_watch_error_page_logged),
        cmocka_unit_test(test_auth_failures_logged),
        cmocka_unit_test(test_token_rotation),
        cmocka_unit_test(test_concurrent_legacy_kubernetes),
        cmocka_unit_test(test_concurrent_legacy_standalone),
        cmocka_unit_test(test_standalone_recreated_cluster),
        cmocka_unit_test(test_reservation_lifecycle),
        cmocka_unit_test(test_silent_watch_keeps_reservations),
        cmocka_unit_test(test_1024_hosts_back_to_back),
        cmocka_unit_test(test_claims_parse_time),
        cmocka_unit_test(test_claims_unreadable_times),
        cmocka_unit_test(test_claim_lifetime_from_creating_attempt),
        cmocka_unit_test(test_claim_after_pod_appeared),
        cmocka_unit_test(test_recreated_cluster_claims),
        cmocka_unit_test(test_claim_unreadable_after_conflict),
        cmocka_unit_test(test_claim_released_when_pod_goes),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_no_api_server),
        cmocka_unit_test(test_start_while_api_server_holds),
        cmocka_unit_test(test_api_server_lost_after_sync),
        cmocka_unit_test(test_user_agent_on_every_call),
    };
    /* While working on one test: KUBE_TEST_FILTER=test_name (a glob). */
    const char *only = getenv("KUBE_TEST_FILTER");
    if (only && only[0])
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, setup, teardown);
}
