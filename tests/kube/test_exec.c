/* test_exec.c: how the Kubernetes client reads kubeconfigs (issue 36,
 * item 2): exec credential plugins (exec_plugin.sh counts its runs) against
 * tests/kube/fake_apiserver.py, files that must not block (FIFOs), plain
 * http://, and no credential in any message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sys/stat.h>

#include "../testutil.h"
#include "harness.h"
#include "wh/kube.h"
#include "wh/kubeconfig.h"
#include "wh/log.h"

static struct kh_server srv;
static char plugin_dir[512];

static int setup(void **st)
{
    (void)st;
    wh_log_set_verbosity(getenv("WH_TEST_VERBOSE") ? 1 : -1);
    alarm(240); /* a read that blocks (a FIFO) fails the run instead of hanging it */
    if (kh_certs(&srv))
        return -1;
    snprintf(plugin_dir, sizeof(plugin_dir), "%s/plugin", srv.dir);
    if (mkdir(plugin_dir, 0700))
        return -1;
    return kh_server_start(&srv, NULL);
}

static int teardown(void **st)
{
    (void)st;
    kh_cleanup(&srv);
    return 0;
}

/* Each case starts the plugin afresh: no runs, token KH_TOKEN, mode ok,
 * no expiry; the fake accepts KH_TOKEN only. */
static int reset(void **st)
{
    (void)st;
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "rm -f %s/* && cp %s/client.crt %s/client.key %s/", plugin_dir,
             srv.dir, srv.dir, plugin_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(kh_write(plugin_dir, "token", KH_TOKEN), 0);
    assert_int_equal(kh_control(&srv, "tokens", "[\"" KH_TOKEN "\"]", NULL), 0);
    return 0;
}

static void plugin_set(const char *file, const char *text)
{
    assert_int_equal(kh_write(plugin_dir, file, text), 0);
}

static int runs(void)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/runs", plugin_dir);
    FILE *f = fopen(p, "r");
    if (!f)
        return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static char *plugin_file(const char *name)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", plugin_dir, name);
    char *t = kh_slurp(p);
    assert_non_null(t);
    return t;
}

/* A kubeconfig named name in the server's directory: the fake over https
 * with its CA, cluster_extra under the cluster, user_yaml as the user. */
static void write_kc(const char *name, const char *cluster_extra, const char *user_yaml)
{
    char text[8192];
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
             "contexts:\n- name: test\n  context: {cluster: fake, user: tester}\n"
             "clusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:%d\n"
             "    certificate-authority: ca.crt\n%s"
             "users:\n- name: tester\n  user:\n%s",
             srv.port, cluster_extra ? cluster_extra : "", user_yaml);
    assert_int_equal(kh_write(srv.dir, name, text), 0);
}

/* The exec user of the plugin script answering with api. */
static void write_exec_kc(const char *name, const char *api, const char *more, const char *cluster)
{
    char script[1024], user[4096];
    kh_file(script, sizeof(script), "exec_plugin.sh");
    snprintf(user, sizeof(user),
             "    exec:\n      apiVersion: client.authentication.k8s.io/%s\n"
             "      command: %s\n      args: [client.authentication.k8s.io/%s]\n"
             "      env:\n      - {name: PLUGIN_DIR, value: %s}\n%s",
             api, script, api, plugin_dir, more ? more : "      interactiveMode: Never\n");
    write_kc(name, cluster, user);
}

static struct wh_kube *client(const char *name, long timeout_ms)
{
    char p[600], errbuf[WH_ERRBUF_LEN] = "";
    snprintf(p, sizeof(p), "%s/%s", srv.dir, name);
    struct wh_kube_config cfg;
    if (wh_kubeconfig_load(p, &cfg, errbuf))
        fail_msg("%s: %s", name, errbuf);
    cfg.exec_timeout_ms = timeout_ms;
    struct wh_kube *k = wh_kube_new(&cfg, errbuf);
    assert_non_null(k);
    return k;
}

/* GET /api/v1/nodes: the status, or -err; errbuf gets the message. */
static long get(struct wh_kube *k, char *errbuf)
{
    struct wh_buf body;
    wh_buf_init(&body, 1 << 20);
    long status = 0;
    enum wh_err err = wh_kube_get(k, "/api/v1/nodes", &body, &status, NULL, errbuf);
    wh_buf_free(&body);
    return err ? -(long)err : status;
}

/* With a background refresher, a request right after a renewal may find
 * the credential expiring before the refresher (late on a loaded machine)
 * has renewed it: GET until 200, within a bound far above the expected. */
static long get_soon(struct wh_kube *k, char *errbuf)
{
    long got = get(k, errbuf);
    for (long end = kh_now_ms() + 10000; got != 200 && kh_now_ms() < end; kh_sleep_ms(50))
        got = get(k, errbuf);
    if (got != 200)
        print_message("no 200 within 10 s: %ld: %s\n", got, errbuf);
    return got;
}

static void test_exec_v1_cached_until_expiry(void **st)
{
    (void)st;
    plugin_set("ttl", "3600");
    write_exec_kc("kc-v1", "v1", NULL, NULL);
    struct wh_kube *k = client("kc-v1", 0);
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(get(k, errbuf), 200);
    assert_int_equal(get(k, errbuf), 200);
    assert_int_equal(runs(), 1); /* cached */
    char *in = plugin_file("stdin");
    assert_non_null(strstr(in, "/dev/null")); /* interactiveMode Never: no stdin */
    free(in);
    wh_kube_free(k);
    /* A credential that is already expired: each request runs it again
     * (no clock in the test: the expiry is in the past). */
    plugin_set("ttl", "-60");
    k = client("kc-v1", 0);
    assert_int_equal(get(k, errbuf), 200);
    assert_int_equal(runs(), 2);
    assert_int_equal(get(k, errbuf), 200);
    assert_int_equal(runs(), 3);
    wh_kube_free(k);
}

static void test_exec_v1beta1_cluster_info(void **st)
{
    (void)st;
    /* v1beta1 needs no interactiveMode; the plugin gets the cluster. */
    write_exec_kc("kc-beta", "v1beta1", "      provideClusterInfo: true\n",
                  "    extensions:\n    - name: client.authentication.k8s.io/exec\n"
                  "      extension: {audience: tpu-test}\n");
    struct wh_kube *k = client("kc-beta", 0);
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(get(k, errbuf), 200);
    assert_int_equal(get(k, errbuf), 200);
    assert_int_equal(runs(), 1); /* no expirationTimestamp: kept until a 401 */
    char *text = plugin_file("info");
    cJSON *info = cJSON_Parse(text);
    free(text);
    assert_non_null(info);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(info, "apiVersion")),
                        "client.authentication.k8s.io/v1beta1");
    const cJSON *spec = cJSON_GetObjectItem(info, "spec");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(spec, "interactive")));
    const cJSON *cl = cJSON_GetObjectItem(spec, "cluster");
    char want[64];
    snprintf(want, sizeof(want), "https://127.0.0.1:%d", srv.port);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cl, "server")), want);
    assert_true(
        strlen(cJSON_GetStringValue(cJSON_GetObjectItem(cl, "certificate-authority-data"))) > 100);
    assert_string_equal(cJSON_GetStringValue(
                            cJSON_GetObjectItem(cJSON_GetObjectItem(cl, "config"), "audience")),
                        "tpu-test");
    cJSON_Delete(info);
    wh_kube_free(k);
}

static void test_exec_rerun_after_401(void **st)
{
    (void)st;
    write_exec_kc("kc-401", "v1", NULL, NULL);
    struct wh_kube *k = client("kc-401", 0);
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(get(k, errbuf), 200);
    assert_int_equal(runs(), 1);
    /* The server stops taking the cached token (revoked): one 401, the
     * plugin runs again and the request is made once more. */
    assert_int_equal(kh_control(&srv, "tokens", "[\"token-B\"]", NULL), 0);
    plugin_set("token", "token-B");
    long unauthorized = kh_stat(&srv, "unauthorized");
    assert_int_equal(get(k, errbuf), 200);
    assert_int_equal(runs(), 2);
    assert_int_equal(kh_stat(&srv, "unauthorized"), unauthorized + 1);
    /* A plugin whose new credential is refused too: the 401 is the
     * answer, after one more run, not a loop. */
    assert_int_equal(kh_control(&srv, "tokens", "[\"token-C\"]", NULL), 0);
    assert_int_equal(get(k, errbuf), 401);
    assert_int_equal(runs(), 3);
    wh_kube_free(k);
}

struct getter {
    struct wh_kube *k;
    int ok;
};

static void *get_many(void *arg)
{
    struct getter *g = arg;
    char errbuf[WH_ERRBUF_LEN];
    for (int i = 0; i < 10; i++)
        g->ok += get(g->k, errbuf) == 200;
    return NULL;
}

/* Four clones (serve's clients share the credential) from four threads:
 * the cache is shared under its lock, and the plugin runs once. */
static void test_exec_shared_by_threads(void **st)
{
    (void)st;
    write_exec_kc("kc-threads", "v1", NULL, NULL);
    struct wh_kube *k = client("kc-threads", 0);
    char errbuf[WH_ERRBUF_LEN] = "";
    struct getter g[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        g[i] = (struct getter){.k = i ? wh_kube_clone(k, errbuf) : k};
        assert_non_null(g[i].k);
        assert_int_equal(pthread_create(&t[i], NULL, get_many, &g[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(g[i].ok, 10);
    }
    assert_int_equal(runs(), 1);
    for (int i = 3; i >= 0; i--)
        wh_kube_free(g[i].k);
}

/* serve's way: the refresher thread renews ahead of expiry and after a
 * 401; a request never runs the plugin nor waits for it. */
static void test_exec_background_refresh(void **st)
{
    (void)st;
    plugin_set("ttl", "3");
    write_exec_kc("kc-bg", "v1", NULL, NULL);
    struct wh_kube *k = client("kc-bg", 0);
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(wh_kube_refresh_in_background(k, errbuf), WH_OK);
    assert_int_equal(runs(), 1);
    assert_int_equal(get_soon(k, errbuf), 200);
    /* Renewed before it expires, with no request asking. */
    for (long end = kh_now_ms() + 10000; runs() < 3 && kh_now_ms() < end;)
        kh_sleep_ms(50);
    assert_true(runs() >= 3);
    assert_int_equal(get_soon(k, errbuf), 200);
    /* A 401: the request answers it at once; the refresher runs again. */
    /* A credential without expiry: the runs stop (within a renewal). */
    plugin_set("ttl", "");
    int before = -1;
    for (long end = kh_now_ms() + 15000; before != runs() && kh_now_ms() < end;) {
        before = runs();
        kh_sleep_ms(2500);
    }
    assert_int_equal(runs(), before);
    assert_int_equal(kh_control(&srv, "tokens", "[\"token-B\"]", NULL), 0);
    plugin_set("token", "token-B");
    assert_int_equal(get(k, errbuf), 401);
    assert_int_equal(get_soon(k, errbuf), 200);
    assert_int_equal(runs(), before + 1);
    wh_kube_free(k); /* stops and joins the refresher */
}

static void test_exec_client_certificate(void **st)
{
    (void)st;
    plugin_set("mode", "cert");
    write_exec_kc("kc-cert", "v1", NULL, NULL);
    struct wh_kube *k = client("kc-cert", 0);
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(kh_control(&srv, "tokens", "[]", NULL), 0); /* no token would do */
    assert_int_equal(get(k, errbuf), 200);
    assert_int_equal(runs(), 1);
    wh_kube_free(k);
}

static void test_exec_hang_killed_at_timeout(void **st)
{
    (void)st;
    plugin_set("mode", "hang");
    write_exec_kc("kc-hang", "v1", NULL, NULL);
    struct wh_kube *k = client("kc-hang", 500);
    char errbuf[WH_ERRBUF_LEN] = "";
    long t0 = kh_now_ms();
    assert_int_equal(get(k, errbuf), -(long)WH_ERR_UNAVAILABLE);
    long took = kh_now_ms() - t0;
    print_message("hung plugin answered after %ld ms: %s\n", took, errbuf);
    assert_non_null(strstr(errbuf, "no answer within 500 ms; killed"));
    wh_kube_free(k);
}

/* A plugin that closes stdout and stderr and keeps running: killed at
 * the same timeout (ctest's TIMEOUT catches a hang). */
static void test_exec_closed_pipes_killed_at_timeout(void **st)
{
    (void)st;
    plugin_set("mode", "close");
    write_exec_kc("kc-close", "v1", NULL, NULL);
    struct wh_kube *k = client("kc-close", 500);
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(get(k, errbuf), -(long)WH_ERR_UNAVAILABLE);
    assert_non_null(strstr(errbuf, "no answer within 500 ms; killed"));
    assert_int_equal(runs(), 1);
    wh_kube_free(k);
}

static void test_exec_failure_without_secrets(void **st)
{
    (void)st;
    plugin_set("mode", "fail");
    write_exec_kc("kc-fail", "v1", NULL, NULL);
    struct wh_kube *k = client("kc-fail", 0);
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(get(k, errbuf), -(long)WH_ERR_UNAVAILABLE);
    assert_non_null(strstr(errbuf, "exited with status 3"));
    assert_non_null(strstr(errbuf, "login required")); /* its stderr, for people */
    assert_null(strstr(errbuf, "SECRET-STDOUT"));      /* never its stdout */
    assert_non_null(strstr(errbuf, "kc-fail"));
    wh_kube_free(k);
}

static void test_exec_config_errors(void **st)
{
    (void)st;
    char p[600], errbuf[WH_ERRBUF_LEN] = "";
    struct wh_kube_config cfg;
    snprintf(p, sizeof(p), "%s/kc-bad", srv.dir);
    /* v1 without interactiveMode */
    write_exec_kc("kc-bad", "v1", "      provideClusterInfo: false\n", NULL);
    assert_int_equal(wh_kubeconfig_load(p, &cfg, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "interactiveMode: missing"));
    /* v1alpha1 */
    write_exec_kc("kc-bad", "v1alpha1", NULL, NULL);
    assert_int_equal(wh_kubeconfig_load(p, &cfg, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "v1alpha1"));
    /* Always with no terminal: a clear error, and no run. */
    write_exec_kc("kc-always", "v1", "      interactiveMode: Always\n", NULL);
    struct wh_kube *k = client("kc-always", 0);
    assert_int_equal(get(k, errbuf), -(long)WH_ERR_UNAVAILABLE);
    assert_non_null(strstr(errbuf, "interactiveMode is Always"));
    assert_int_equal(runs(), 0);
    wh_kube_free(k);
    /* A plugin that is not installed: the kubeconfig's installHint. */
    write_kc("kc-missing", NULL,
             "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: no-such-auth-plugin-xyz\n      interactiveMode: Never\n"
             "      installHint: install it with the package manager\n");
    k = client("kc-missing", 0);
    assert_int_equal(get(k, errbuf), -(long)WH_ERR_UNAVAILABLE);
    assert_non_null(strstr(errbuf, "no-such-auth-plugin-xyz"));
    assert_non_null(strstr(errbuf, "install it with the package manager"));
    wh_kube_free(k);
}

/* A FIFO where a kubeconfig, a token file or the in-cluster token should
 * be: refused at once with a message (alarm() in setup catches a block). */
static void test_fifo_refused_at_once(void **st)
{
    (void)st;
    char fifo[600], errbuf[WH_ERRBUF_LEN] = "";
    snprintf(fifo, sizeof(fifo), "%s/fifo", srv.dir);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    struct wh_kube_config cfg;
    assert_int_not_equal(wh_kubeconfig_load(fifo, &cfg, errbuf), WH_OK);
    assert_non_null(strstr(errbuf, "not a regular file"));
    write_kc("kc-fifo-token", NULL, "    tokenFile: fifo\n");
    char p[600];
    snprintf(p, sizeof(p), "%s/kc-fifo-token", srv.dir);
    assert_int_not_equal(wh_kubeconfig_load(p, &cfg, errbuf), WH_OK);
    assert_non_null(strstr(errbuf, "tokenFile"));
    assert_non_null(strstr(errbuf, "not a regular file"));
    /* In-cluster: the token is a symbolic link (as the kubelet mounts it),
     * followed; to a FIFO, refused. */
    char sa[600], cmd[4096];
    snprintf(sa, sizeof(sa), "%s/sa", srv.dir);
    snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s/ca.crt %s/ && ln -sf %s %s/token", sa, srv.dir,
             sa, fifo, sa);
    assert_int_equal(system(cmd), 0);
    setenv("WH_SERVICEACCOUNT_DIR", sa, 1);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "1", 1);
    assert_int_not_equal(wh_kubeconfig_in_cluster(&cfg, errbuf), WH_OK);
    assert_non_null(strstr(errbuf, "not a regular file"));
    snprintf(cmd, sizeof(cmd), "printf tok > %s/real && ln -sf %s/real %s/token", sa, sa, sa);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(wh_kubeconfig_in_cluster(&cfg, errbuf), WH_OK);
    wh_kube_config_clear(&cfg);
    unsetenv("WH_SERVICEACCOUNT_DIR");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_plain_http(void **st)
{
    (void)st;
    char p[600], errbuf[WH_ERRBUF_LEN] = "";
    snprintf(p, sizeof(p), "%s/kc-http", srv.dir);
    struct wh_kube_config cfg;
    static const char fmt[] = "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                              "contexts:\n- name: t\n  context: {cluster: c, user: u}\n"
                              "clusters:\n- name: c\n  cluster:\n    server: %s\n"
                              "users:\n- name: u\n  user:\n%s";
    char text[1024];
    /* A token to another host over http://: refused, the token unsaid. */
    snprintf(text, sizeof(text), fmt, "http://10.1.2.3:8080", "    token: sekrit-http-token\n");
    assert_int_equal(kh_write(srv.dir, "kc-http", text), 0);
    assert_int_equal(wh_kubeconfig_load(p, &cfg, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "plain http://"));
    assert_null(strstr(errbuf, "sekrit"));
    /* To the loopback: loaded, with a warning for the caller to print. */
    snprintf(text, sizeof(text), fmt, "http://127.0.0.1:8001", "    token: sekrit-http-token\n");
    assert_int_equal(kh_write(srv.dir, "kc-http", text), 0);
    assert_int_equal(wh_kubeconfig_load(p, &cfg, errbuf), WH_OK);
    assert_non_null(cfg.warning);
    assert_non_null(strstr(cfg.warning, "plain http://"));
    wh_kube_config_clear(&cfg);
    /* No credential (kubectl proxy): nothing to say. */
    snprintf(text, sizeof(text), fmt, "http://10.1.2.3:8001", "    {}\n");
    assert_int_equal(kh_write(srv.dir, "kc-http", text), 0);
    assert_int_equal(wh_kubeconfig_load(p, &cfg, errbuf), WH_OK);
    assert_null(cfg.warning);
    wh_kube_config_clear(&cfg);
}

static void test_numeric_token_not_echoed(void **st)
{
    (void)st;
    char p[600], errbuf[WH_ERRBUF_LEN] = "";
    write_kc("kc-num", NULL, "    token: 9876543210123\n");
    snprintf(p, sizeof(p), "%s/kc-num", srv.dir);
    struct wh_kube_config cfg;
    assert_int_equal(wh_kubeconfig_load(p, &cfg, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "token"));
    assert_non_null(strstr(errbuf, "quote"));
    assert_null(strstr(errbuf, "9876543210123"));
    assert_null(strstr(errbuf, "9.876543210123"));
}

/* $KUBECONFIG's files merged as kubectl merges them (loader.go's rules):
 * current-context from the first file that sets it; each context, cluster
 * and user whole from the first file holding its name; relative paths
 * against the file that holds them; missing files, empty entries and
 * repeats skipped. */
static char *merge_dir(const char *sub)
{
    char *d = malloc(600);
    assert_non_null(d);
    snprintf(d, 600, "%s/%s", srv.dir, sub);
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s", d, d);
    assert_int_equal(system(cmd), 0);
    return d;
}

static enum wh_err load_list(const char *list, struct wh_kube_config *cfg, char *errbuf)
{
    enum wh_err err = wh_kubeconfig_load_list(list, cfg, errbuf);
    /* The resolver reads $KUBECONFIG the same way. */
    struct wh_kube_config again;
    char eb[WH_ERRBUF_LEN] = "";
    setenv("KUBECONFIG", list, 1);
    assert_int_equal(wh_kubeconfig_resolve(NULL, false, &again, eb), err);
    unsetenv("KUBECONFIG");
    if (err)
        assert_string_equal(eb, errbuf);
    else
        assert_string_equal(again.source, cfg->source);
    wh_kube_config_clear(&again);
    return err;
}

static void test_kubeconfig_merge(void **st)
{
    (void)st;
    char *a = merge_dir("merge-a"), *b = merge_dir("merge-b"), *c = merge_dir("merge-c");
    char text[4096], cmd[2048], list[4096], errbuf[WH_ERRBUF_LEN] = "";
    /* a: the current context and the cluster, its CA beside it only. */
    snprintf(text, sizeof(text),
             "current-context: ctx\n"
             "contexts:\n- name: ctx\n  context: {cluster: fake, user: tester}\n"
             "clusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:%d\n"
             "    certificate-authority: ca.crt\n",
             srv.port);
    assert_int_equal(kh_write(a, "config", text), 0);
    snprintf(cmd, sizeof(cmd), "cp %s/ca.crt %s/", srv.dir, a);
    assert_int_equal(system(cmd), 0);
    /* b: another current-context, the same context and cluster names
     * pointing elsewhere (a's win), and the user, its token file beside
     * it only. */
    assert_int_equal(kh_write(b, "config",
                              "current-context: other\n"
                              "contexts:\n- name: ctx\n  context: {cluster: nope, user: nope}\n"
                              "- name: other\n  context: {cluster: fake, user: tester}\n"
                              "clusters:\n- name: fake\n  cluster:\n"
                              "    server: https://127.0.0.1:1\n"
                              "users:\n- name: tester\n  user:\n    tokenFile: tok\n"),
                     0);
    assert_int_equal(kh_write(b, "tok", KH_TOKEN "\n"), 0);
    /* c: no current-context; the user again, with a certificate: an entry
     * comes whole from one file, never field by field. */
    assert_int_equal(kh_write(c, "config",
                              "users:\n- name: tester\n  user:\n    token: from-c\n"
                              "    client-certificate: c.crt\n    client-key: c.key\n"),
                     0);
    snprintf(cmd, sizeof(cmd), "cp %s/client.crt %s/c.crt && cp %s/client.key %s/c.key", srv.dir, c,
             srv.dir, c);
    assert_int_equal(system(cmd), 0);
    snprintf(list, sizeof(list), "%s/none::%s/config:%s/config:%s/config:%s/config:", srv.dir, a, a,
             b, c);
    struct wh_kube_config cfg;
    assert_int_equal(load_list(list, &cfg, errbuf), WH_OK);
    char want[700];
    snprintf(want, sizeof(want), "https://127.0.0.1:%d", srv.port);
    assert_string_equal(cfg.server, want);
    snprintf(want, sizeof(want), "%s/ca.crt", a);
    assert_string_equal(cfg.ca_file, want);
    snprintf(want, sizeof(want), "%s/tok", b);
    assert_string_equal(cfg.token_file, want);
    assert_null(cfg.token);
    assert_null(cfg.cert_file);
    snprintf(want, sizeof(want), "%s/config", b); /* the user's file */
    assert_string_equal(cfg.source, want);
    /* And it works: the fake answers with the merged CA and token. */
    struct wh_kube *k = wh_kube_new(&cfg, errbuf);
    assert_non_null(k);
    assert_int_equal(get(k, errbuf), 200);
    wh_kube_free(k);
    wh_kube_config_clear(&cfg);

    /* c first: it sets no current-context, so a's; c's user wins whole. */
    snprintf(list, sizeof(list), "%s/config:%s/config:%s/config", c, a, b);
    assert_int_equal(load_list(list, &cfg, errbuf), WH_OK);
    assert_string_equal(cfg.token, "from-c");
    assert_null(cfg.token_file);
    assert_int_equal(strncmp(cfg.cert_file, c, strlen(c)), 0);
    wh_kube_config_clear(&cfg);

    /* b first: its current-context and its cluster of that name. */
    snprintf(list, sizeof(list), "%s/config:%s/config", b, a);
    assert_int_equal(load_list(list, &cfg, errbuf), WH_OK);
    assert_string_equal(cfg.server, "https://127.0.0.1:1");
    assert_null(cfg.ca_file);
    wh_kube_config_clear(&cfg);
    free(a);
    free(b);
    free(c);
}

static void test_kubeconfig_merge_errors(void **st)
{
    (void)st;
    char *a = merge_dir("merge-e"), list[4096], errbuf[WH_ERRBUF_LEN] = "", want[700];
    struct wh_kube_config cfg;
    assert_int_equal(kh_write(a, "good",
                              "current-context: t\n"
                              "contexts:\n- name: t\n  context: {cluster: c, user: u}\n"
                              "clusters:\n- name: c\n  cluster:\n"
                              "    server: https://127.0.0.1:1\n"
                              "users:\n- name: u\n  user: {token: t0k}\n"),
                     0);
    /* None of the files exists. */
    snprintf(list, sizeof(list), "%s/x:%s/y", a, a);
    assert_int_equal(load_list(list, &cfg, errbuf), WH_ERR_NOTFOUND);
    assert_non_null(strstr(errbuf, "no such file"));
    /* A bad file later in the list, its entries unused: the load fails
     * naming that file and the field, as kubectl's does. */
    static const struct {
        const char *text, *field;
    } bad[] = {
        {"clusters: {c: 1}\n", "clusters: must be a list"},
        {"users:\n- name: u\n  user: {}\n- name: u\n  user: {}\n", "users[1].name: \"u\""},
        {"contexts:\n- context: {cluster: c}\n", "contexts[0].name: missing"},
        {"contexts:\n- 7\n", "contexts[0]: must be a mapping"},
        {"current-context: 5\n", "current-context: must be a string"},
        {"- a list\n", "not a YAML mapping"},
        {"a: [\n", "kubeconfig"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(kh_write(a, "bad", bad[i].text), 0);
        snprintf(list, sizeof(list), "%s/good:%s/bad", a, a);
        assert_int_not_equal(load_list(list, &cfg, errbuf), WH_OK);
        snprintf(want, sizeof(want), "kubeconfig %s/bad: ", a);
        if (!strstr(errbuf, want) || !strstr(errbuf, bad[i].field))
            fail_msg("%s: %s", bad[i].text, errbuf);
        assert_null(strstr(errbuf, "t0k"));
    }
    /* An entry's error names the file the entry came from. */
    assert_int_equal(kh_write(a, "cl", "clusters:\n- name: c\n  cluster: {server: 5}\n"), 0);
    snprintf(list, sizeof(list), "%s/cl:%s/good", a, a);
    assert_int_equal(load_list(list, &cfg, errbuf), WH_ERR_INVALID);
    snprintf(want, sizeof(want), "kubeconfig %s/cl: clusters[name=c].cluster.server: must be", a);
    assert_non_null(strstr(errbuf, want));
    /* A context naming a user no file holds: every file searched is named. */
    assert_int_equal(kh_write(a, "ctx",
                              "current-context: t\n"
                              "contexts:\n- name: t\n  context: {cluster: c, user: v}\n"),
                     0);
    snprintf(list, sizeof(list), "%s/ctx:%s/good", a, a);
    assert_int_equal(load_list(list, &cfg, errbuf), WH_ERR_INVALID);
    snprintf(want, sizeof(want), "kubeconfig %s/ctx, %s/good: users: no entry named \"v\"", a, a);
    if (!strstr(errbuf, want))
        fail_msg("%s", errbuf);
    /* An empty file holds nothing; no file sets current-context. */
    assert_int_equal(kh_write(a, "empty", ""), 0);
    assert_int_equal(kh_write(a, "nocur", "users:\n- name: u\n  user: {}\n"), 0);
    snprintf(list, sizeof(list), "%s/empty:%s/nocur", a, a);
    assert_int_equal(load_list(list, &cfg, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "current-context: missing"));
    snprintf(list, sizeof(list), "%s/empty:%s/good", a, a);
    assert_int_equal(load_list(list, &cfg, errbuf), WH_OK);
    wh_kube_config_clear(&cfg);
    /* A FIFO in the list: refused at once (alarm() in setup), named. */
    snprintf(want, sizeof(want), "%s/fifo", a);
    assert_int_equal(mkfifo(want, 0600), 0);
    snprintf(list, sizeof(list), "%s/good:%s", a, want);
    assert_int_not_equal(load_list(list, &cfg, errbuf), WH_OK);
    assert_non_null(strstr(errbuf, "not a regular file"));
    assert_non_null(strstr(errbuf, want));
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_exec_v1_cached_until_expiry, reset),
        cmocka_unit_test_setup(test_exec_v1beta1_cluster_info, reset),
        cmocka_unit_test_setup(test_exec_rerun_after_401, reset),
        cmocka_unit_test_setup(test_exec_shared_by_threads, reset),
        cmocka_unit_test_setup(test_exec_background_refresh, reset),
        cmocka_unit_test_setup(test_exec_client_certificate, reset),
        cmocka_unit_test_setup(test_exec_hang_killed_at_timeout, reset),
        cmocka_unit_test_setup(test_exec_closed_pipes_killed_at_timeout, reset),
        cmocka_unit_test_setup(test_exec_failure_without_secrets, reset),
        cmocka_unit_test_setup(test_exec_config_errors, reset),
        cmocka_unit_test_setup(test_fifo_refused_at_once, reset),
        cmocka_unit_test_setup(test_plain_http, reset),
        cmocka_unit_test_setup(test_numeric_token_not_echoed, reset),
        cmocka_unit_test_setup(test_kubeconfig_merge, reset),
        cmocka_unit_test_setup(test_kubeconfig_merge_errors, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
