/* kubeconfig.c: in-cluster configuration and kubeconfig files. */
#include "wh/kubeconfig.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* getenv, free */
#include <string.h> /* strcmp, strdup */
#include <unistd.h> /* access */

#include <cjson/cJSON.h>

#include "wh/b64.h"    /* wh_b64_decode */
#include "wh/buf.h"    /* wh_buf */
#include "wh/fileio.h" /* wh_read_file */
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
                       "KUBERNETES_SERVICE_PORT are not set; pass --kube-config-path FILE "
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
    if (access(out->token_file, R_OK) != 0) {
        enum wh_err err = wh_fail(errbuf, WH_ERR_NOTFOUND,
                                  "in-cluster configuration: service-account token %s is not "
                                  "readable (is automountServiceAccountToken off?)",
                                  out->token_file);
        wh_kube_config_clear(out);
        return err;
    }
    if (access(out->ca_file, R_OK) != 0) {
        enum wh_err err = wh_fail(errbuf, WH_ERR_NOTFOUND,
                                  "in-cluster configuration: service-account CA %s is not "
                                  "readable",
                                  out->ca_file);
        wh_kube_config_clear(out);
        return err;
    }
    return WH_OK;
}

/* ---- kubeconfig ---------------------------------------------------------- */

/* The file is read with wh_yaml_load (the manifests' loader), so a kubeconfig
 * resolves as kubectl reads it: YAML 1.1 scalars (true/yes/on are booleans,
 * unquoted digits are numbers), JSON accepted, and a duplicate key refused. */
struct kc {
    const char *path;
    char *dir; /* the file's directory, for relative paths */
    char *errbuf;
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

/* The entry named name in the sequence top[key] (contexts, clusters, users),
 * returning its inner mapping (entry[inner]). */
static enum wh_err find_named(struct kc *k, const cJSON *root, const char *key, const char *inner,
                              const char *name, const char *by, const cJSON **out)
{
    *out = NULL;
    const cJSON *seq = map_get(root, key);
    if (!cJSON_IsArray(seq))
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: %s: missing or not a list (needed for %s \"%s\")", k->path,
                       key, by, name);
    const cJSON *e;
    cJSON_ArrayForEach(e, seq)
    {
        const char *n = NULL;
        if (get_str(k, e, "name", key, &n))
            return WH_ERR_INVALID;
        if (n && !strcmp(n, name)) {
            const cJSON *in = map_get(e, inner);
            if (!cJSON_IsObject(in))
                return wh_fail(k->errbuf, WH_ERR_INVALID,
                               "kubeconfig %s: %s[name=%s].%s: missing or not a mapping", k->path,
                               key, name, inner);
            *out = in;
            return WH_OK;
        }
    }
    return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: %s: no entry named \"%s\" (from %s)",
                   k->path, key, name, by);
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
        if (access(*file, R_OK) != 0)
            return wh_fail(k->errbuf, WH_ERR_NOTFOUND, "kubeconfig %s: %s.%s: cannot read %s",
                           k->path, field, file_key, *file);
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
    size_t n = strlen(out->server);
    while (n > 0 && out->server[n - 1] == '/')
        out->server[--n] = '\0';
    return file_or_data(k, cl, field, "certificate-authority", "certificate-authority-data",
                        &out->ca_file, &out->ca_pem, &out->ca_pem_len);
}

static enum wh_err load_user(struct kc *k, const cJSON *u, const char *name,
                             struct wh_kube_config *out)
{
    char field[160];
    snprintf(field, sizeof(field), "users[name=%s].user", name);
    static const char *const unsupported[] = {"exec", "auth-provider", "username", "password"};
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
        if (map_get(u, unsupported[i]))
            return wh_fail(k->errbuf, WH_ERR_INVALID,
                           "kubeconfig %s: %s.%s: not supported; use a bearer token (token or "
                           "tokenFile) or a client certificate",
                           k->path, field, unsupported[i]);
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
        if (access(out->token_file, R_OK) != 0)
            return wh_fail(k->errbuf, WH_ERR_NOTFOUND, "kubeconfig %s: %s.tokenFile: cannot read %s",
                           k->path, field, out->token_file);
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

static enum wh_err load_doc(struct kc *k, const cJSON *root, struct wh_kube_config *out)
{
    if (!cJSON_IsObject(root))
        return wh_fail(k->errbuf, WH_ERR_INVALID, "kubeconfig %s: not a YAML mapping", k->path);
    const char *cur = NULL;
    enum wh_err err = get_str(k, root, "current-context", "", &cur);
    if (err)
        return err;
    if (!cur || !*cur)
        return wh_fail(k->errbuf, WH_ERR_INVALID,
                       "kubeconfig %s: current-context: missing (run 'kubectl config "
                       "use-context NAME --kubeconfig %s')",
                       k->path, k->path);
    const cJSON *ctx, *cl, *user = NULL;
    err = find_named(k, root, "contexts", "context", cur, "current-context", &ctx);
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
    err = find_named(k, root, "clusters", "cluster", cluster_name, field, &cl);
    if (!err)
        err = load_cluster(k, cl, cluster_name, out);
    if (!err && user_name && *user_name) {
        err = find_named(k, root, "users", "user", user_name, field, &user);
        if (!err)
            err = load_user(k, user, user_name, out);
    }
    return err;
}

enum wh_err wh_kubeconfig_load(const char *path, struct wh_kube_config *out, char *errbuf)
{
    memset(out, 0, sizeof(*out));
    struct wh_buf text;
    wh_buf_init(&text, WH_KUBECONFIG_MAX);
    struct kc k = {.path = path, .errbuf = errbuf};
    cJSON *doc = NULL;
    char inner[WH_ERRBUF_LEN];
    enum wh_err err = wh_read_file(path, &text, errbuf);
    if (!err)
        err = wh_yaml_load_one(wh_buf_ptr(&text), wh_buf_len(&text), &doc, errbuf);
    if (err) {
        snprintf(inner, sizeof(inner), "%s", errbuf);
        err = wh_fail(errbuf, err, "kubeconfig %s: %s", path, inner);
        goto out;
    }
    const char *slash = strrchr(path, '/');
    k.dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : NULL;
    out->source = strdup(path);
    if ((slash && !k.dir) || !out->source) {
        err = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        goto out;
    }
    err = load_doc(&k, doc, out);
out:
    cJSON_Delete(doc);
    free(k.dir);
    wh_buf_free(&text);
    if (err)
        wh_kube_config_clear(out);
    return err;
}
