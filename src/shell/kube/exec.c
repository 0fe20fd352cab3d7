/* exec.c: exec credential plugins (execcred.h). */
#include "execcred.h"

#include <errno.h>    /* errno */
#include <fcntl.h>    /* O_CLOEXEC, O_RDONLY */
#include <poll.h>     /* poll */
#include <signal.h>   /* kill, sigset_t */
#include <spawn.h>    /* posix_spawnp */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* calloc, free */
#include <string.h>   /* strcmp, strlen */
#include <sys/wait.h> /* waitpid */
#include <time.h>     /* clock_gettime, timegm */
#include <unistd.h>   /* pipe2, isatty, close, read */

#include <cjson/cJSON.h>

#include "wh/b64.h"    /* wh_b64_encode */
#include "wh/buf.h"    /* wh_buf */
#include "wh/utf8.h"   /* wh_utf8_cut */
#include "wh/fileio.h" /* wh_read_regular_file */

extern char **environ;

/* Largest ExecCredential and stderr kept. */
#define OUT_MAX ((size_t)1024 * 1024)
#define ERR_KEEP ((size_t)2048)

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void free_secret(char *s, size_t n)
{
    if (!s)
        return;
    memset(s, 0, n);
    free(s);
}

void wh_exec_cred_clear(struct wh_exec_cred *c)
{
    if (!c)
        return;
    free_secret(c->token, c->token ? strlen(c->token) : 0);
    free_secret(c->cert_pem, c->cert_len);
    free_secret(c->key_pem, c->key_len);
    memset(c, 0, sizeof(*c));
}

static int digits(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9')
            return -1;
        v = v * 10 + (**p - '0');
    }
    return v;
}

long long wh_exec_parse_time_ms(const char *s)
{
    if (!s)
        return -1;
    struct tm tm = {0};
    const char *p = s;
    int y = digits(&p, 4);
    if (y < 0 || *p++ != '-')
        return -1;
    int mo = digits(&p, 2);
    if (mo < 1 || mo > 12 || *p++ != '-')
        return -1;
    int d = digits(&p, 2);
    if (d < 1 || d > 31 || (*p != 'T' && *p != 't' && *p != ' '))
        return -1;
    p++;
    int h = digits(&p, 2);
    if (h < 0 || h > 23 || *p++ != ':')
        return -1;
    int mi = digits(&p, 2);
    if (mi < 0 || mi > 59 || *p++ != ':')
        return -1;
    int sec = digits(&p, 2);
    if (sec < 0 || sec > 60)
        return -1;
    long long ms = 0;
    if (*p == '.') {
        p++;
        int scale = 100, any = 0;
        for (; *p >= '0' && *p <= '9'; p++, any = 1) {
            ms += (*p - '0') * scale;
            scale /= 10;
        }
        if (!any)
            return -1;
    }
    long long off_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        int oh = digits(&p, 2);
        if (oh < 0 || *p++ != ':')
            return -1;
        int om = digits(&p, 2);
        if (om < 0)
            return -1;
        off_s = sign * (oh * 3600LL + om * 60LL);
    } else {
        return -1;
    }
    if (*p)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    return ((long long)timegm(&tm) - off_s) * 1000 + ms;
}

/* KUBERNETES_EXEC_INFO: an ExecCredential with spec.interactive and, when
 * the kubeconfig asks (provideClusterInfo), spec.cluster as client-go
 * fills it. Malloc'd "KUBERNETES_EXEC_INFO=..." or NULL. */
static char *exec_info(const struct wh_kube_config *cfg, bool interactive)
{
    const struct wh_exec_config *x = cfg->exec;
    cJSON *root = cJSON_CreateObject();
    cJSON *spec = cJSON_AddObjectToObject(root, "spec");
    cJSON_AddStringToObject(root, "kind", "ExecCredential");
    cJSON_AddStringToObject(root, "apiVersion", x->api_version);
    cJSON_AddBoolToObject(spec, "interactive", interactive);
    char *out = NULL;
    if (x->provide_cluster_info) {
        cJSON *cl = cJSON_AddObjectToObject(spec, "cluster");
        cJSON_AddStringToObject(cl, "server", cfg->server);
        if (cfg->insecure)
            cJSON_AddBoolToObject(cl, "insecure-skip-tls-verify", true);
        struct wh_buf ca, b64;
        wh_buf_init(&ca, WH_KUBECONFIG_MAX);
        wh_buf_init(&b64, 2 * WH_KUBECONFIG_MAX);
        char eb[WH_ERRBUF_LEN];
        const char *pem = cfg->ca_pem;
        size_t pem_len = cfg->ca_pem_len;
        if (!pem && cfg->ca_file && !wh_read_regular_file(cfg->ca_file, &ca, eb)) {
            pem = wh_buf_ptr(&ca);
            pem_len = wh_buf_len(&ca);
        }
        if (pem && !wh_b64_encode(&b64, pem, pem_len))
            cJSON_AddStringToObject(cl, "certificate-authority-data", wh_buf_ptr(&b64));
        wh_buf_free(&ca);
        wh_buf_free(&b64);
        if (x->cluster_config)
            cJSON_AddItemToObject(cl, "config", cJSON_Parse(x->cluster_config));
    }
    char *json = cJSON_PrintUnformatted(root);
    if (json) {
        size_t n = strlen(json) + sizeof("KUBERNETES_EXEC_INFO=");
        out = malloc(n);
        if (out)
            snprintf(out, n, "KUBERNETES_EXEC_INFO=%s", json);
        free(json);
    }
    cJSON_Delete(root);
    return out;
}

/* The caller's environment with exec.env over it (a name set there wins)
 * and info last. The strings are borrowed; the array is malloc'd. */
static char **plugin_env(const struct wh_exec_config *x, char *info)
{
    size_t n = 0, m = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    for (char **e = x->env; e && *e; e++)
        m++;
    char **v = calloc(n + m + 2, sizeof(*v));
    if (!v)
        return NULL;
    size_t at = 0;
    for (char **e = environ; e && *e; e++) {
        size_t len = strcspn(*e, "=");
        bool over = !strncmp(*e, "KUBERNETES_EXEC_INFO=", 21);
        for (char **o = x->env; o && *o && !over; o++)
            over = !strncmp(*o, *e, len) && (*o)[len] == '=';
        if (!over)
            v[at++] = *e;
    }
    for (char **e = x->env; e && *e; e++)
        v[at++] = *e;
    v[at] = info;
    return v;
}

struct run {
    pid_t pid;
    bool own_group;
    int out_fd, err_fd;
    struct wh_buf out, err; /* err: the first ERR_KEEP bytes */
    bool too_big, timed_out, stopped;
    int status;
};

/* Read both pipes until they close, then wait for the plugin to exit, all
 * within one deadline (past it, or on stop, the plugin is killed); reap it. */
static void collect(struct run *r, long timeout_ms, const atomic_bool *stop)
{
    long long deadline = mono_ms() + timeout_ms;
    char chunk[8192];
    while (r->out_fd >= 0 || r->err_fd >= 0) {
        long long left = deadline - mono_ms();
        if (stop && atomic_load(stop)) {
            r->stopped = true;
            break;
        }
        if (left <= 0) {
            r->timed_out = true;
            break;
        }
        struct pollfd p[2] = {{.fd = r->out_fd, .events = POLLIN},
                              {.fd = r->err_fd, .events = POLLIN}};
        int rc = poll(p, 2, (int)(left > 1000 ? 1000 : left));
        if (rc < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2 && rc > 0; i++) {
            int *fd = i ? &r->err_fd : &r->out_fd;
            if (*fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(*fd, chunk, sizeof(chunk));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                close(*fd);
                *fd = -1;
            } else if (i == 0 && wh_buf_addn(&r->out, chunk, (size_t)n)) {
                r->too_big = true;
                r->timed_out = false;
                goto stop;
            } else if (i == 1 && wh_buf_len(&r->err) < ERR_KEEP) {
                size_t room = ERR_KEEP - wh_buf_len(&r->err);
                if (wh_buf_addn(&r->err, chunk, (size_t)n < room ? (size_t)n : room))
                    wh_buf_reset(&r->err);
            }
        }
    }
stop:
    if (r->timed_out || r->too_big || r->stopped)
        kill(r->own_group ? -r->pid : r->pid, SIGKILL);
    if (r->out_fd >= 0)
        close(r->out_fd);
    if (r->err_fd >= 0)
        close(r->err_fd);
    r->out_fd = r->err_fd = -1;
    /* A plugin may close its pipes and keep running: the read's deadline
     * bounds the wait for its exit too. */
    bool killed = r->timed_out || r->too_big || r->stopped;
    for (;;) {
        pid_t w = waitpid(r->pid, &r->status, killed ? 0 : WNOHANG);
        if (w == r->pid || (w < 0 && errno != EINTR))
            break;
        if (w < 0)
            continue;
        if (stop && atomic_load(stop)) {
            r->stopped = true;
        } else if (mono_ms() >= deadline) {
            r->timed_out = true;
        } else {
            poll(NULL, 0, 10);
            continue;
        }
        kill(r->own_group ? -r->pid : r->pid, SIGKILL);
        killed = true;
    }
    /* A plugin's children left in its group go with it. */
    if (r->own_group)
        kill(-r->pid, SIGKILL);
}

/* Start the plugin; WH_OK with r->pid set. */
static enum wh_err spawn(const struct wh_kube_config *cfg, bool interactive, struct run *r,
                         char *errbuf)
{
    const struct wh_exec_config *x = cfg->exec;
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    char *info = exec_info(cfg, interactive);
    char **env = info ? plugin_env(x, info) : NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    enum wh_err e = WH_OK;
    if (!env) {
        e = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
        e = wh_fail(errbuf, WH_ERR_IO, "exec plugin %s: pipe: %s", x->command, strerror(errno));
        goto out;
    }
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    if (!interactive)
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* serve blocks its signals for sigtimedwait: the plugin starts with
     * none blocked and the default actions. Its own process group (unless
     * it prompts on the terminal, which needs the foreground group) lets a
     * timeout kill whatever it started. */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    r->own_group = !interactive;
    if (r->own_group) {
        flags |= POSIX_SPAWN_SETPGROUP;
        posix_spawnattr_setpgroup(&at, 0);
    }
    posix_spawnattr_setflags(&at, flags);
    int rc = posix_spawnp(&r->pid, x->command, &fa, &at, x->argv, env);
    if (rc) {
        e = wh_fail(errbuf, WH_ERR_UNAVAILABLE, "exec plugin %s (kubeconfig %s): cannot run: %s%s%s",
                    x->command, cfg->source, strerror(rc),
                    rc == ENOENT ? (x->install_hint ? "; " : "; is it installed and on $PATH?") : "",
                    rc == ENOENT && x->install_hint ? x->install_hint : "");
        goto out;
    }
    r->out_fd = out[0];
    r->err_fd = err[0];
    out[0] = err[0] = -1;
out:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(env);
    free(info);
    return e;
}

/* The plugin's stderr, first line, for a message: it is meant for people
 * (stdout, which holds the credential, never is). */
static void first_line(const struct wh_buf *b, char *out, size_t n)
{
    const char *s = wh_buf_len(b) ? wh_buf_ptr(b) : "";
    while (*s == '\n' || *s == ' ')
        s++;
    size_t len = strcspn(s, "\n");
    if (len > 200)
        len = wh_utf8_cut(s, 200);
    snprintf(out, n, "%s%.*s", len ? ": " : "", (int)len, s);
}

static enum wh_err take_str(const cJSON *st, const char *key, char **out, size_t *len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(st, key);
    if (!cJSON_IsString(v) || !*v->valuestring)
        return WH_OK;
    *out = strdup(v->valuestring);
    if (len)
        *len = *out ? strlen(*out) : 0;
    return *out ? WH_OK : WH_ERR_NOMEM;
}

/* The ExecCredential on stdout: kind, the apiVersion asked for, and
 * status with a token or a client certificate and key. */
static enum wh_err parse_credential(const struct wh_kube_config *cfg, const struct wh_buf *b,
                                    struct wh_exec_cred *c, char *errbuf)
{
    const struct wh_exec_config *x = cfg->exec;
    cJSON *doc = cJSON_ParseWithLength(wh_buf_ptr(b), wh_buf_len(b));
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "status");
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "kind"));
    const char *api = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "apiVersion"));
    enum wh_err e = WH_OK;
    if (!cJSON_IsObject(doc))
        e = wh_fail(errbuf, WH_ERR_INVALID,
                    "exec plugin %s (kubeconfig %s): its output is not a JSON ExecCredential",
                    x->command, cfg->source);
    else if (!kind || strcmp(kind, "ExecCredential") || !api || strcmp(api, x->api_version))
        e = wh_fail(errbuf, WH_ERR_INVALID,
                    "exec plugin %s (kubeconfig %s): answered kind \"%.40s\" apiVersion "
                    "\"%.80s\"; the kubeconfig asks for an ExecCredential of %s",
                    x->command, cfg->source, kind ? kind : "", api ? api : "", x->api_version);
    else if (!cJSON_IsObject(st))
        e = wh_fail(errbuf, WH_ERR_INVALID,
                    "exec plugin %s (kubeconfig %s): no status in its "
                    "ExecCredential",
                    x->command, cfg->source);
    if (!e && (take_str(st, "token", &c->token, NULL) ||
               take_str(st, "clientCertificateData", &c->cert_pem, &c->cert_len) ||
               take_str(st, "clientKeyData", &c->key_pem, &c->key_len)))
        e = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    if (!e && !c->token && !(c->cert_pem && c->key_pem))
        e = wh_fail(errbuf, WH_ERR_INVALID,
                    "exec plugin %s (kubeconfig %s): its ExecCredential has neither "
                    "status.token nor status.clientCertificateData with clientKeyData",
                    x->command, cfg->source);
    if (!e && !!c->cert_pem != !!c->key_pem)
        e = wh_fail(errbuf, WH_ERR_INVALID,
                    "exec plugin %s (kubeconfig %s): status.clientCertificateData and "
                    "clientKeyData come together; only one is set",
                    x->command, cfg->source);
    const char *exp = st ? cJSON_GetStringValue(
                               cJSON_GetObjectItemCaseSensitive(st, "expirationTimestamp"))
                         : NULL;
    if (!e && exp && (c->expires_ms = wh_exec_parse_time_ms(exp)) < 0)
        e = wh_fail(errbuf, WH_ERR_INVALID,
                    "exec plugin %s (kubeconfig %s): status.expirationTimestamp \"%.40s\" is "
                    "not an RFC 3339 time",
                    x->command, cfg->source, exp);
    /* No copy of the credential is left in cJSON's memory. */
    if (st) {
        const char *keys[] = {"token", "clientKeyData"};
        for (size_t i = 0; i < 2; i++) {
            char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, keys[i]));
            if (v)
                memset(v, 0, strlen(v));
        }
    }
    cJSON_Delete(doc);
    if (e)
        wh_exec_cred_clear(c);
    return e;
}

enum wh_err wh_exec_run(const struct wh_kube_config *cfg, const atomic_bool *stop,
                        struct wh_exec_cred *out, char *errbuf)
{
    memset(out, 0, sizeof(*out));
    const struct wh_exec_config *x = cfg->exec;
    bool tty = cfg->exec_may_prompt && isatty(0);
    if (x->interactive == WH_EXEC_ALWAYS && !tty)
        return wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                       "exec plugin %s (kubeconfig %s): interactiveMode is Always but %s; run "
                       "it from a terminal, or give the kubeconfig a non-interactive credential",
                       x->command, cfg->source,
                       cfg->exec_may_prompt ? "standard input is not a terminal"
                                            : "this command never prompts (serve)");
    bool interactive = tty && x->interactive != WH_EXEC_NEVER;
    struct run r = {.pid = -1, .out_fd = -1, .err_fd = -1};
    wh_buf_init(&r.out, OUT_MAX);
    wh_buf_init(&r.err, ERR_KEEP + 1);
    enum wh_err e = spawn(cfg, interactive, &r, errbuf);
    if (e)
        goto out;
    long timeout = cfg->exec_timeout_ms > 0 ? cfg->exec_timeout_ms : WH_EXEC_TIMEOUT_MS;
    collect(&r, timeout, stop);
    char why[300];
    first_line(&r.err, why, sizeof(why));
    if (r.stopped)
        e = wh_fail(errbuf, WH_ERR_UNAVAILABLE, "exec plugin %s: stopped", x->command);
    else if (r.timed_out)
        e = wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                    "exec plugin %s (kubeconfig %s): no answer within %ld ms; killed%s", x->command,
                    cfg->source, timeout, why);
    else if (r.too_big)
        e = wh_fail(errbuf, WH_ERR_TOOBIG,
                    "exec plugin %s (kubeconfig %s): its output is over %zu bytes; killed",
                    x->command, cfg->source, OUT_MAX);
    else if (WIFSIGNALED(r.status))
        e = wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                    "exec plugin %s (kubeconfig %s): killed by signal %d%s", x->command,
                    cfg->source, WTERMSIG(r.status), why);
    else if (WEXITSTATUS(r.status))
        e = wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                    "exec plugin %s (kubeconfig %s): exited with status %d%s%s%s", x->command,
                    cfg->source, WEXITSTATUS(r.status), why,
                    x->install_hint && WEXITSTATUS(r.status) == 127 ? "; " : "",
                    x->install_hint && WEXITSTATUS(r.status) == 127 ? x->install_hint : "");
    else
        e = parse_credential(cfg, &r.out, out, errbuf);
out:
    if (r.out.ptr)
        memset(r.out.ptr, 0, wh_buf_len(&r.out));
    wh_buf_free(&r.out);
    wh_buf_free(&r.err);
    return e;
}
