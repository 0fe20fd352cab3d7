/* kubeconfig.c: in-cluster configuration and kubeconfig files. */
#include "wh/kubeconfig.h"

#include <errno.h>    /* errno, ENOENT */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* getenv, free */
#include <string.h>   /* strcmp, strdup, strtok_r */
#include <sys/stat.h> /* stat */

#include <cjson/cJSON.h>

#include "wh/b64.h"    /* wh_b64_decode */
#include "wh/buf.h"    /* wh_buf */
#include "wh/fileio.h" /* wh_read_regular_file, wh_check_regular_file */
#include "wh/utf8.h"   /* wh_utf8_cut */
#include "wh/yaml.h"   /* wh_yaml_load_one */

void wh_kube_config_clear(struct wh_kube_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->source);
    free(cfg->server);
    free(cfg->ca_file);
    free(cfg->ca_pem);
    free(cfg->token);
    free(cfg->token_file);
    free(cfg->cert_file);
    free(cfg->cert_pem);
    free(cfg->key_file);
    free(cfg->key_pem);
    free(cfg->warning);
    struct wh_exec_config *x = cfg->exec;
    if (x) {
        for (char **a = x->argv; a && *a; a++)
            free(*a);
        for (char **e = x->env; e && *e; e++)
            free(*e);
        free(x->argv);
        free(x->env);
        free(x->api_version);
        free(x->command);
        free(x->install_hint);
        free(x->cluster_config);
        free(x);
    }
    memset(cfg, 0, sizeof(*cfg));
}

/* Concatenate up to five strings (NULL ends the list); malloc'd or NULL. */
static char *concat(const char *a, const char *b, const char *c, const char *d, const char *e)
{
    const char *parts[] = {a, b, c, d, e};
    size_t n = 1;
    for (size_t i = 0; i < 5 && parts[i]; i++)
        n += strlen(parts[i]);
    char *s = malloc(n);
    if (!s)
        return NULL;
    size_t at = 0;
    for (size_t i = 0; i < 5 && parts[i]; i++) {
        size_t len = strlen(parts[i]);
        memcpy(s + at, parts[i], len);
        at += len;
    }
    s[at] = '\0';
    return s;
}

enum wh_err wh_kubeconfig_in_cluster(struct wh_kube_config *out, char *errbuf)
{
    memset(out, 0, sizeof(*out));
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    const char *dir = getenv("WH_SERVICEACCOUNT_DIR");
    if (!dir || !*dir)
        dir = WH_SERVICEACCOUNT_DIR;
    if (!host || !*host || !port || !*port)
        return wh_fail(errbuf, WH_ERR_NOTFOUND,
                       "not running in a Kubernetes pod: KUBERNETES_SERVICE_HOST and "
                       "KUBERNETES_SERVICE_PORT are not set; pass --kubeconfig FILE "
                       "or --standalone");
    /* An IPv6 service address needs brackets in a URL. */
    bool v6 = strchr(host, ':') != NULL;
    out->source = strdup("in-cluster");
    out->server = v6 ? concat("https://[", host, "]:", port, NULL)
                     : concat("https://", host, ":", port, NULL);
    out->token_file = concat(dir, "/token", NULL, NULL, NULL);
    out->ca_file = concat(dir, "/ca.crt", NULL, NULL, NULL);
    if (!out->source || !out->server || !out->token_file || !out->ca_file) {
        wh_kube_config_clear(out);
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    }
    char why[WH_ERRBUF_LEN];
    if (wh_check_regular_file(out->token_file, WH_KUBECONFIG_MAX, why)) {
        enum wh_err err = wh_fail(errbuf, WH_ERR_NOTFOUND,
                                  "in-cluster configuration: service-account token %s: %s (is "
                                  "automountServiceAccountToken off?)",
                                  out->token_file, why);
        wh_kube_config_clear(out);
        return err;
    }
    if (wh_check_regular_file(out->ca_file, WH_KUBECONFIG_MAX, why)) {
        enum wh_err err = wh_fail(errbuf, WH_ERR_NOTFOUND,
                                  "in-cluster configuration: service-account CA %s: %s",
                                  out->ca_file, why);
        wh_kube_config_clear(out);
        return err;
    }
    return WH_OK;
}

/* ---- kubeconfig ---------------------------------------------------------- */

/* Each file is read with wh_yaml_load (the manifests' loader), so a
 * kubeconfig resolves as kubectl reads it: YAML 1.1 scalars (true/yes/on are
 * booleans, unquoted digits are numbers), JSON accepted, and a duplicate key
 * refused. */
struct kc_file {
    char *path;
    char *dir;  /* the file's directory, for relative paths; NULL: the working directory */
    cJSON *doc; /* NULL for an empty file */
};

/* The files of one load, merged as kubectl merges $KUBECONFIG's list: the
 * first file that sets current-context gives it, and the first file that
 * holds an entry of a name (context, cluster, user) gives the whole entry,
 * read relative to that file. path and dir are those of the file being
 * read, for messages and relative paths. */
struct kc {
    const char *path;
    const char *dir;
    char *errbuf;
    char *cluster_exec; /* the cluster's exec extension as JSON, for an exec user; or NULL */
    struct kc_file *files;
    size_t nfiles;
    char all[300]; /* the files, for a message about all of them */
};

static const cJSON *map_get(const cJSON *map, const char *key)
{
    return cJSON_IsObject(map) ? cJSON_GetObjectItemCaseSensitive(map, key) : NULL;
}

/* What a value that should have been a string is, for messages. */
static void describe(const cJSON *v, char *out, size_t n)
{
    if (cJSON_IsBool(v))
        snprintf(out, n, "the boolean %s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNumber(v))
        snprintf(out, n, "the number %.17g", v->valuedouble);
    else if (cJSON_IsArray(v))
        snprintf(out, n, "a list");
    else
        snprintf(out, n, "a mapping");
}

/* The string map[key], NULL when absent or null. WH_ERR_INVALID (naming
 * field.key and what is there) when present but not a string. */
static enum wh_err get_str(struct kc *k, const cJSON *map, const char *key, const char *field,
                           const char **out)
{
    *out = NULL;
    const cJSON *n = map_get(map, key);
    if (!n || cJSON_IsNull(n))
        return WH_OK;
    if (!cJSON_IsString(n)) {
        char what[64];
        describe(n, what, sizeof(what));
        /* A credential's value never goes into a message, not even a
         * number (an unquoted numeric token). */
        static const char *const secret[] = {"token", "client-key-data", "password"};
        for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
            if (!strcmp(key, secret[i]) && cJSON_IsNumber(n))
                snprintf(what, sizeof(what), "a number (not shown: it is a credential)");
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s%s%s: must be a string, not %s (quote the value)", k->path,
                       field, *field ? "." : "", key, what);
    }
    *out = n->valuestring;
    return WH_OK;
}

/* The boolean map[key] (false when absent or null); a quoted "true" or
 * "false" is taken too. WH_ERR_INVALID (naming field.key and the value) for
 * anything else. */
static enum wh_err get_flag(struct kc *k, const cJSON *map, const char *key, const char *field,
                            bool *out)
{
    const cJSON *n = map_get(map, key);
    *out = cJSON_IsTrue(n);
    if (!n || cJSON_IsNull(n) || cJSON_IsBool(n))
        return WH_OK;
    const char *v = cJSON_IsString(n) ? n->valuestring : NULL;
    if (v && (!strcmp(v, "true") || !strcmp(v, "false"))) {
        *out = v[0] == 't';
        return WH_OK;
    }
    char what[64];
    if (v)
        snprintf(what, sizeof(what), "\"%.*s\"", (int)wh_utf8_cut(v, 40), v);
    else
        describe(n, what, sizeof(what));
    return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s.%s: %s is not true or false",
                   k->path, field, key, what);
}

/* The entry named name in the lists key (contexts, clusters, users) of the
 * files, the first file holding it winning; returns its inner mapping
 * (entry[inner]) and makes that file the one read. The lists' shapes were
 * checked by check_file. */
static enum wh_err find_named(struct kc *k, const char *key, const char *inner, const char *name,
                              const char *by, const cJSON **out)
{
    *out = NULL;
    bool any = false;
    for (size_t f = 0; f < k->nfiles; f++) {
        const cJSON *seq = map_get(k->files[f].doc, key), *e;
        if (!cJSON_IsArray(seq))
            continue;
        any = true;
        cJSON_ArrayForEach(e, seq)
        {
            const cJSON *n = map_get(e, "name");
            if (!cJSON_IsString(n) || strcmp(n->valuestring, name))
                continue;
            k->path = k->files[f].path;
            k->dir = k->files[f].dir;
            const cJSON *in = map_get(e, inner);
            if (!cJSON_IsObject(in))
                return wh_fail(k->errbuf, WH_ERR_INVALID,
                               "kubeconfig %s: %s[name=%s].%s: missing or not a mapping", k->path,
                               key, name, inner);
            *out = in;
            return WH_OK;
        }
    }
    if (!any)
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s: missing (needed for %s \"%s\")", k->all, key, by, name);
    return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s: no entry named \"%s\" (from %s)",
                   k->all, key, name, by);
}

static char *resolve(struct kc *k, const char *p)
{
    if (p[0] == '/' || !k->dir)
        return strdup(p);
    return concat(k->dir, "/", p, NULL, NULL);
}

static enum wh_err decode_data(struct kc *k, const char *text, const char *field, char **out,
                               size_t *out_len)
{
    struct wh_buf b;
    wh_buf_init(&b, WH_KUBECONFIG_MAX);
    if (wh_b64_decode(&b, text, strlen(text))) {
        wh_buf_free(&b);
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s: not valid base64 (paste the PEM file through "
                       "'base64 -w0')",
                       k->path, field);
    }
    *out = wh_buf_take(&b, out_len);
    return *out ? WH_OK : wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
}

/* file/data pair: at most one of them; file paths resolved. */
static enum wh_err file_or_data(struct kc *k, const cJSON *map, const char *field,
                                const char *file_key, const char *data_key, char **file,
                                char **data, size_t *data_len)
{
    const char *f = NULL, *d = NULL;
    enum wh_err err = get_str(k, map, file_key, field, &f);
    if (!err)
        err = get_str(k, map, data_key, field, &d);
    if (err)
        return err;
    if (d && *d) {
        char fld[128];
        snprintf(fld, sizeof(fld), "%s.%s", field, data_key);
        return decode_data(k, d, fld, data, data_len);
    }
    if (f && *f) {
        *file = resolve(k, f);
        if (!*file)
            return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
        char why[WH_ERRBUF_LEN];
        enum wh_err e = wh_check_regular_file(*file, WH_KUBECONFIG_MAX, why);
        if (e)
            return wh_fail(k->errbuf, e, "kubeconfig %s: %s.%s: %s: %s", k->path, field, file_key,
                           *file, why);
    }
    return WH_OK;
}

static enum wh_err load_cluster(struct kc *k, const cJSON *cl, const char *name,
                                struct wh_kube_config *out)
{
    char field[160];
    snprintf(field, sizeof(field), "clusters[name=%s].cluster", name);
    const char *server = NULL;
    enum wh_err err = get_str(k, cl, "server", field, &server);
    if (!err)
        err = get_flag(k, cl, "insecure-skip-tls-verify", field, &out->insecure);
    if (err)
        return err;
    if (!server || !*server)
        return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s.server: missing", k->path,
                       field);
    if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s.server: \"%s\" is not an http(s):// URL", k->path, field,
                       server);
    out->server = strdup(server);
    if (!out->server)
        return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    /* What provideClusterInfo passes to a plugin as spec.cluster.config. */
    const cJSON *ext;
    cJSON_ArrayForEach(ext, map_get(cl, "extensions"))
    {
        const cJSON *n = map_get(ext, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, "client.authentication.k8s.io/exec") &&
            map_get(ext, "extension")) {
            k->cluster_exec = cJSON_PrintUnformatted(map_get(ext, "extension"));
            if (!k->cluster_exec)
                return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
        }
    }
    size_t n = strlen(out->server);
    while (n > 0 && out->server[n - 1] == '/')
        out->server[--n] = '\0';
    return file_or_data(k, cl, field, "certificate-authority", "certificate-authority-data",
                        &out->ca_file, &out->ca_pem, &out->ca_pem_len);
}

/* A NULL-terminated copy of a YAML list of strings (NULL or absent: an
 * empty list), after first (when not NULL). */
static enum wh_err str_list(struct kc *k, const cJSON *seq, const char *field, const char *first,
                            char ***out)
{
    if (seq && !cJSON_IsNull(seq) && !cJSON_IsArray(seq))
        return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s: must be a list", k->path,
                       field);
    size_t n = (size_t)(seq && cJSON_IsArray(seq) ? cJSON_GetArraySize(seq) : 0) + 2;
    char **v = calloc(n, sizeof(*v));
    if (!v)
        return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    *out = v;
    size_t at = 0;
    if (first && !(v[at++] = strdup(first)))
        return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, seq)
    {
        if (!cJSON_IsString(e))
            return wh_fail(k->errbuf, WH_ERR_INVALID,
                           "kubeconfig %s: %s[%zu]: must be a string (quote the value)", k->path,
                           field, i);
        if (!(v[at++] = strdup(e->valuestring)))
            return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
        i++;
    }
    return WH_OK;
}

/* exec.env: a list of {name, value}, kept as "NAME=value". */
static enum wh_err exec_env(struct kc *k, const cJSON *seq, const char *field, char ***out)
{
    if (seq && !cJSON_IsNull(seq) && !cJSON_IsArray(seq))
        return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s.env: must be a list", k->path,
                       field);
    size_t n = (size_t)(cJSON_IsArray(seq) ? cJSON_GetArraySize(seq) : 0) + 1;
    char **v = calloc(n, sizeof(*v));
    if (!v)
        return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    *out = v;
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, seq)
    {
        char f[256];
        snprintf(f, sizeof(f), "%s.env[%zu]", field, i++);
        const char *name = NULL, *value = NULL;
        enum wh_err err = get_str(k, e, "name", f, &name);
        if (!err)
            err = get_str(k, e, "value", f, &value);
        if (err)
            return err;
        if (!name || !*name || strchr(name, '='))
            return wh_fail(k->errbuf, WH_ERR_INVALID,
                           "kubeconfig %s: %s.name: missing, empty or holding '='", k->path, f);
        v[i - 1] = concat(name, "=", value ? value : "", NULL, NULL);
        if (!v[i - 1])
            return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    }
    return WH_OK;
}

#define EXEC_V1 "client.authentication.k8s.io/v1"
#define EXEC_V1BETA1 "client.authentication.k8s.io/v1beta1"

/* users[].user.exec, as client-go reads it: apiVersion v1 or v1beta1,
 * command (relative to the kubeconfig's directory when it holds a '/'),
 * args, env, interactiveMode (required by v1; v1beta1's default is
 * IfAvailable), provideClusterInfo, installHint. */
static enum wh_err load_exec(struct kc *k, const cJSON *ex, const char *field,
                             struct wh_kube_config *out)
{
    char f[200];
    snprintf(f, sizeof(f), "%s.exec", field);
    if (!cJSON_IsObject(ex))
        return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s: must be a mapping", k->path,
                       f);
    const char *api = NULL, *cmd = NULL, *mode = NULL, *hint = NULL;
    struct wh_exec_config *x = calloc(1, sizeof(*x));
    if (!x)
        return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    out->exec = x;
    enum wh_err err = get_str(k, ex, "apiVersion", f, &api);
    if (!err)
        err = get_str(k, ex, "command", f, &cmd);
    if (!err)
        err = get_str(k, ex, "interactiveMode", f, &mode);
    if (!err)
        err = get_str(k, ex, "installHint", f, &hint);
    if (!err)
        err = get_flag(k, ex, "provideClusterInfo", f, &x->provide_cluster_info);
    if (err)
        return err;
    if (!api || (strcmp(api, EXEC_V1) && strcmp(api, EXEC_V1BETA1)))
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s.apiVersion: \"%.80s\" is not supported; use "
                       "%s or %s (v1alpha1 was removed in Kubernetes 1.24)",
                       k->path, f, api ? api : "", EXEC_V1, EXEC_V1BETA1);
    if (!cmd || !*cmd)
        return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s.command: missing", k->path, f);
    bool v1 = !strcmp(api, EXEC_V1);
    if (!mode && v1)
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s.interactiveMode: missing; %s requires it (Never, "
                       "IfAvailable or Always)",
                       k->path, f, EXEC_V1);
    if (!mode || !strcmp(mode, "IfAvailable"))
        x->interactive = WH_EXEC_IF_AVAILABLE;
    else if (!strcmp(mode, "Never"))
        x->interactive = WH_EXEC_NEVER;
    else if (!strcmp(mode, "Always"))
        x->interactive = WH_EXEC_ALWAYS;
    else
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s.interactiveMode: \"%.40s\" is not Never, IfAvailable "
                       "or Always",
                       k->path, f, mode);
    x->api_version = strdup(api);
    x->command = strchr(cmd, '/') ? resolve(k, cmd) : strdup(cmd);
    x->install_hint = hint && *hint ? strdup(hint) : NULL;
    if (!x->api_version || !x->command || (hint && *hint && !x->install_hint))
        return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    char af[220];
    snprintf(af, sizeof(af), "%s.args", f);
    err = str_list(k, map_get(ex, "args"), af, x->command, &x->argv);
    if (!err)
        err = exec_env(k, map_get(ex, "env"), f, &x->env);
    return err;
}

static enum wh_err load_user(struct kc *k, const cJSON *u, const char *name,
                             struct wh_kube_config *out)
{
    char field[160];
    snprintf(field, sizeof(field), "users[name=%s].user", name);
    if (map_get(u, "auth-provider"))
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s.auth-provider: not supported (kubectl dropped it too); "
                       "on GKE install gke-gcloud-auth-plugin and run 'gcloud container clusters "
                       "get-credentials', which writes an exec entry",
                       k->path, field);
    static const char *const unsupported[] = {"username", "password"};
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
        if (map_get(u, unsupported[i]))
            return wh_fail(k->errbuf, WH_ERR_INVALID,
                           "kubeconfig %s: %s.%s: basic authentication is not supported; use a "
                           "bearer token (token or tokenFile), a client certificate or exec",
                           k->path, field, unsupported[i]);
    const cJSON *exec = map_get(u, "exec");
    if (exec && !cJSON_IsNull(exec)) {
        enum wh_err e = load_exec(k, exec, field, out);
        if (e)
            return e;
    }
    const char *token = NULL, *token_file = NULL;
    enum wh_err err = get_str(k, u, "token", field, &token);
    if (!err)
        err = get_str(k, u, "tokenFile", field, &token_file);
    if (err)
        return err;
    if (token && *token) {
        out->token = strdup(token);
        if (!out->token)
            return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    } else if (token_file && *token_file) {
        out->token_file = resolve(k, token_file);
        if (!out->token_file)
            return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
        char why[WH_ERRBUF_LEN];
        enum wh_err e = wh_check_regular_file(out->token_file, WH_KUBECONFIG_MAX, why);
        if (e)
            return wh_fail(k->errbuf, e, "kubeconfig %s: %s.tokenFile: %s: %s", k->path, field,
                           out->token_file, why);
    }
    err = file_or_data(k, u, field, "client-certificate", "client-certificate-data",
                       &out->cert_file, &out->cert_pem, &out->cert_pem_len);
    if (!err)
        err = file_or_data(k, u, field, "client-key", "client-key-data", &out->key_file,
                           &out->key_pem, &out->key_pem_len);
    if (err)
        return err;
    bool cert = out->cert_file || out->cert_pem, key = out->key_file || out->key_pem;
    if (cert != key)
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s: client-certificate%s and client-key%s come together; "
                       "only the %s is set",
                       k->path, field, "(-data)", "(-data)", cert ? "certificate" : "key");
    return WH_OK;
}

/* Whether the authority of an http:// URL is the loopback. */
static bool loopback(const char *authority)
{
    static const char *const names[] = {"localhost", "[::1]", "127."};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t n = strlen(names[i]);
        if (strncmp(authority, names[i], n))
            continue;
        char next = authority[n];
        return i == 2 || next == '\0' || next == ':' || next == '/';
    }
    return false;
}

/* A credential over plain http:// crosses the network in clear: refused,
 * unless the server is the loopback (kubectl proxy, a test server), where
 * the configuration carries a warning for the caller to print. */
static enum wh_err check_plain_http(struct kc *k, const char *cluster, const char *user,
                                    struct wh_kube_config *out)
{
    if (strncmp(out->server, "http://", 7) || !(out->token || out->token_file || out->exec))
        return WH_OK;
    if (!loopback(out->server + 7))
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: clusters[name=%s].cluster.server: %s is plain http://: "
                       "the credential of users[name=%s] would cross the network unencrypted; "
                       "refused (use the https:// address of the API server)",
                       k->path, cluster, out->server, user);
    out->warning = concat("the credential of the kubeconfig's user goes over plain http:// to ",
                          out->server, " (unencrypted; acceptable on the loopback only)", NULL,
                          NULL);
    return out->warning ? WH_OK : wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
}

static enum wh_err load_doc(struct kc *k, struct wh_kube_config *out)
{
    const char *cur = NULL;
    for (size_t f = 0; f < k->nfiles && !cur; f++) {
        k->path = k->files[f].path;
        enum wh_err err = get_str(k, k->files[f].doc, "current-context", "", &cur);
        if (err)
            return err;
        if (cur && !*cur)
            cur = NULL;
    }
    if (!cur)
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: current-context: missing (run 'kubectl config "
                       "use-context NAME --kubeconfig %s')",
                       k->all, k->files[0].path);
    const cJSON *ctx, *cl, *user = NULL;
    enum wh_err err = find_named(k, "contexts", "context", cur, "current-context", &ctx);
    if (err)
        return err;
    char field[160];
    snprintf(field, sizeof(field), "contexts[name=%s].context", cur);
    const char *cluster_name = NULL, *user_name = NULL;
    err = get_str(k, ctx, "cluster", field, &cluster_name);
    if (!err)
        err = get_str(k, ctx, "user", field, &user_name);
    if (err)
        return err;
    if (!cluster_name || !*cluster_name)
        return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s.cluster: missing", k->path,
                       field);
    const char *ctx_path = k->path;
    err = find_named(k, "clusters", "cluster", cluster_name, field, &cl);
    if (!err)
        err = load_cluster(k, cl, cluster_name, out);
    const char *cluster_path = k->path;
    if (!err && user_name && *user_name) {
        err = find_named(k, "users", "user", user_name, field, &user);
        if (!err)
            err = load_user(k, user, user_name, out);
    }
    /* The file an exec plugin's messages name: the user's, else the context's. */
    if (!err && !(out->source = strdup(user ? k->path : ctx_path)))
        err = wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    if (!err && out->exec && out->exec->provide_cluster_info) {
        out->exec->cluster_config = k->cluster_exec;
        k->cluster_exec = NULL;
    }
    k->path = cluster_path;
    if (!err)
        err = check_plain_http(k, cluster_name, user_name, out);
    return err;
}

/* What kubectl refuses in any file of the list, used or not: a document
 * that is not a mapping, a current-context that is not a string, contexts,
 * clusters or users that are not lists of mappings, an entry without a
 * name, and two entries of one name in one file. */
static enum wh_err check_file(struct kc *k, const struct kc_file *f)
{
    k->path = f->path;
    if (!f->doc)
        return WH_OK;
    if (!cJSON_IsObject(f->doc))
        return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: not a YAML mapping", f->path);
    const char *cur;
    enum wh_err err = get_str(k, f->doc, "current-context", "", &cur);
    if (err)
        return err;
    static const char *const lists[] = {"contexts", "clusters", "users"};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        const cJSON *seq = map_get(f->doc, lists[i]), *e;
        if (!seq || cJSON_IsNull(seq))
            continue;
        if (!cJSON_IsArray(seq))
            return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s: must be a list", f->path,
                           lists[i]);
        size_t at = 0;
        cJSON_ArrayForEach(e, seq)
        {
            char fld[64];
            snprintf(fld, sizeof(fld), "%s[%zu]", lists[i], at++);
            const char *name = NULL;
            if (!cJSON_IsObject(e))
                return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s: must be a mapping",
                               f->path, fld);
            if ((err = get_str(k, e, "name", fld, &name)))
                return err;
            if (!name || !*name)
                return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s.name: missing",
                               f->path, fld);
            for (const cJSON *o = seq->child; o != e; o = o->next) {
                const cJSON *on = map_get(o, "name");
                if (cJSON_IsString(on) && !strcmp(on->valuestring, name))
                    return wh_fail(k->errbuf, WH_ERR_INVALID,
                                   "kubeconfig %s: %s.name: \"%s\" is the name of an earlier "
                                   "entry too (names are unique in a file)",
                                   f->path, fld, name);
            }
        }
    }
    return WH_OK;
}

/* Read and parse one file of the list. An empty file holds nothing, as
 * kubectl reads it. */
static enum wh_err open_file(struct kc *k, struct kc_file *f, const char *path)
{
    f->path = strdup(path);
    if (!f->path)
        return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    const char *slash = strrchr(path, '/');
    f->dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : NULL;
    if (slash && !f->dir)
        return wh_fail(k->errbuf, WH_ERR_NOMEM, "out of memory");
    struct wh_buf text;
    wh_buf_init(&text, WH_KUBECONFIG_MAX);
    enum wh_err err = wh_read_regular_file(path, &text, k->errbuf);
    size_t len = wh_buf_len(&text);
    if (!err && len > 0 && strspn(wh_buf_ptr(&text), " \t\r\n") < len)
        err = wh_yaml_load_one(wh_buf_ptr(&text), len, &f->doc, k->errbuf);
    wh_buf_free(&text);
    if (err) {
        char inner[WH_ERRBUF_LEN];
        snprintf(inner, sizeof(inner), "%s", k->errbuf);
        return wh_fail(k->errbuf, err, "kubeconfig %s: %s", path, inner);
    }
    return check_file(k, f);
}

/* Load and merge the files paths[0..n) (n >= 1, each existing). */
static enum wh_err load_files(const char *const *paths, size_t n, struct wh_kube_config *out,
                              char *errbuf)
{
    memset(out, 0, sizeof(*out));
    struct kc k = {.errbuf = errbuf, .files = calloc(n, sizeof(struct kc_file))};
    enum wh_err err = k.files ? WH_OK : wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    size_t at = 0;
    for (size_t i = 0; i < n && !err; i++) {
        at += (size_t)snprintf(k.all + at, sizeof(k.all) - at, "%s%s", i ? ", " : "", paths[i]);
        at = at < sizeof(k.all) ? at : sizeof(k.all) - 1;
        err = open_file(&k, &k.files[i], paths[i]);
        k.nfiles = i + 1;
    }
    if (!err)
        err = load_doc(&k, out);
    for (size_t i = 0; i < k.nfiles; i++) {
        cJSON_Delete(k.files[i].doc);
        free(k.files[i].path);
        free(k.files[i].dir);
    }
    free(k.files);
    free(k.cluster_exec);
    if (err)
        wh_kube_config_clear(out);
    return err;
}

enum wh_err wh_kubeconfig_load(const char *path, struct wh_kube_config *out, char *errbuf)
{
    return load_files(&path, 1, out, errbuf);
}

enum wh_err wh_kubeconfig_load_list(const char *list, struct wh_kube_config *out, char *errbuf)
{
    memset(out, 0, sizeof(*out));
    size_t cap = 1;
    for (const char *c = list; *c; c++)
        cap += *c == ':';
    char *copy = strdup(list);
    const char **paths = calloc(cap, sizeof(*paths));
    if (!copy || !paths) {
        free(copy);
        free(paths);
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    }
    /* Empty entries and repeats are dropped, a file that does not exist is
     * skipped; any other file that cannot be read fails the load. */
    size_t n = 0;
    for (char *save = NULL, *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        bool seen = false;
        for (size_t i = 0; i < n && !seen; i++)
            seen = !strcmp(paths[i], p);
        struct stat st;
        if (!seen && !(stat(p, &st) && errno == ENOENT))
            paths[n++] = p;
    }
    enum wh_err err = n ? load_files(paths, n, out, errbuf)
                        : wh_fail(errbuf, WH_ERR_NOTFOUND,
                                  "KUBECONFIG=%.300s: no such file (unset it to use "
                                  "~/.kube/config or the in-cluster configuration)",
                                  list);
    free(paths);
    free(copy);
    return err;
}

enum wh_err wh_kubeconfig_resolve(const char *path, bool in_cluster_default,
                                  struct wh_kube_config *out, char *errbuf)
{
    if (path && *path)
        return wh_kubeconfig_load(path, out, errbuf);
    if (in_cluster_default)
        return wh_kubeconfig_in_cluster(out, errbuf);
    char p[4096];
    const char *env = getenv("KUBECONFIG");
    if (env && *env)
        return wh_kubeconfig_load_list(env, out, errbuf);
    const char *home = getenv("HOME");
    struct stat st;
    if (home && *home && snprintf(p, sizeof(p), "%s/.kube/config", home) < (int)sizeof(p) &&
        !stat(p, &st))
        return wh_kubeconfig_load(p, out, errbuf);
    enum wh_err err = wh_kubeconfig_in_cluster(out, errbuf);
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (err == WH_ERR_NOTFOUND && (!host || !*host))
        wh_fail(errbuf, err,
                "no kubeconfig: --kubeconfig is not given, $KUBECONFIG is not set, "
                "~/.kube/config does not exist, and this is not a Kubernetes pod "
                "(KUBERNETES_SERVICE_HOST is not set)");
    return err;
}
