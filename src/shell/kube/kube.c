/* kube.c: Kubernetes API GETs and watch streams over libcurl. */
#include "wh/kube.h"

#include <ctype.h>   /* isspace */
#include <pthread.h> /* pthread_once, pthread_mutex_t */
#include <stdbool.h> /* bool */
#include <stdio.h>   /* snprintf */
#include <stdlib.h>  /* free */
#include <string.h>  /* strlen */
#include <strings.h> /* strncasecmp */

#include <curl/curl.h>

#include "credcache.h"    /* wh_credcache_*, struct wh_cred_use */
#include "wh/buildinfo.h" /* wh_build_* */
#include "wh/fileio.h"    /* wh_read_regular_file */

#define CONNECT_TIMEOUT_MS 5000L
#define GET_TIMEOUT_MS 120000L
/* A backstop only: watches ask the server for a shorter timeoutSeconds. */
#define STREAM_TIMEOUT_MS 900000L
#define TOKEN_MAX ((size_t)64 * 1024)

/* Idle handles of plain requests, kept so that their connections stay
 * open (keep-alive): a claim is one small request, and a TLS handshake per
 * request would cost more than the request. */
#define POOL_MAX 32

struct wh_kube {
    struct wh_credcache *sh;
    const struct wh_kube_config *cfg; /* &sh->cfg */
    pthread_mutex_t pool_mu;
    CURL *pool[POOL_MAX];
    size_t n_pool;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

/* Sent on every request, so that the API server's audit log and API
 * Priority and Fairness can tell this client (and its build) from others. */
static char user_agent[160];

static void init_curl(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    snprintf(user_agent, sizeof(user_agent), "tpu-webhook/%s (commit %s)", wh_build_version(),
             wh_build_commit());
}

struct wh_kube *wh_kube_new(struct wh_kube_config *cfg, char *errbuf)
{
    pthread_once(&curl_once, init_curl);
    if (curl_init_rc != CURLE_OK) {
        wh_fail(errbuf, WH_ERR_INTERNAL, "libcurl initialisation failed: %s",
                curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    struct wh_kube *k = calloc(1, sizeof(*k));
    struct wh_credcache *sh = k ? wh_credcache_new(cfg) : NULL;
    if (!sh) {
        free(k);
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    k->sh = sh;
    k->cfg = wh_credcache_config(sh);
    pthread_mutex_init(&k->pool_mu, NULL);
    return k;
}

struct wh_kube *wh_kube_clone(struct wh_kube *k, char *errbuf)
{
    struct wh_kube *c = calloc(1, sizeof(*c));
    if (!c) {
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    wh_credcache_ref(k->sh);
    c->sh = k->sh;
    c->cfg = k->cfg;
    pthread_mutex_init(&c->pool_mu, NULL);
    return c;
}

void wh_kube_free(struct wh_kube *k)
{
    if (!k)
        return;
    wh_credcache_unref(k->sh);
    for (size_t i = 0; i < k->n_pool; i++)
        curl_easy_cleanup(k->pool[i]);
    pthread_mutex_destroy(&k->pool_mu);
    free(k);
}

const char *wh_kube_source(const struct wh_kube *k)
{
    return k->cfg->source ? k->cfg->source : "";
}

enum wh_err wh_kube_refresh_in_background(struct wh_kube *k, char *errbuf)
{
    return wh_credcache_start(k->sh, errbuf);
}

/* The bearer token, read afresh from its file when there is one (a
 * projected service-account token rotates about every hour). *tok is
 * malloc'd or NULL when there is no token. */
static enum wh_err current_token(const struct wh_kube *k, char **tok, char *errbuf)
{
    *tok = NULL;
    if (k->cfg->token) {
        *tok = strdup(k->cfg->token);
        return *tok ? WH_OK : wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    }
    if (!k->cfg->token_file)
        return WH_OK;
    struct wh_buf b;
    wh_buf_init(&b, TOKEN_MAX);
    char inner[WH_ERRBUF_LEN] = "";
    if (wh_read_regular_file(k->cfg->token_file, &b, inner)) {
        wh_buf_free(&b);
        return wh_fail(errbuf, WH_ERR_IO, "bearer token file %s: %s", k->cfg->token_file, inner);
    }
    /* The buffer may come from the caller's request arena (reqmem.h): copy
     * the token to the C library's heap, which the caller frees. */
    size_t n = wh_buf_len(&b);
    const char *t = wh_buf_ptr(&b);
    while (n > 0 && isspace((unsigned char)t[n - 1]))
        n--;
    *tok = strndup(t, n);
    if (b.ptr) /* best effort: no token copies left behind */
        memset(b.ptr, 0, wh_buf_len(&b));
    wh_buf_free(&b);
    return *tok ? WH_OK : wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
}

struct xfer {
    const atomic_bool *stop;
    /* plain GET */
    struct wh_buf *body;
    /* GET handed over as it arrives (wh_kube_get_each) */
    wh_kube_data_fn on_data;
    /* stream */
    CURL *h;
    struct wh_buf line;
    wh_kube_line_fn on_line;
    void (*on_open)(void *arg);
    void *arg;
    bool opened;    /* status known */
    bool ok_status; /* 2xx */
    bool stopped_by_callback;
    bool too_big;
    long retry_after_s; /* Retry-After of the last response, 0 when none */
    /* request */
    const char *method;   /* NULL: GET */
    const char *req_body; /* NULL: none */
    size_t req_len;
    long timeout_ms; /* 0: the default of the kind of transfer */
};

static int progress_cb(void *p, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    const struct xfer *x = p;
    return x->stop && atomic_load(x->stop) ? 1 : 0;
}

static size_t get_write_cb(char *ptr, size_t size, size_t nmemb, void *p)
{
    struct xfer *x = p;
    size_t n = size * nmemb;
    if (wh_buf_addn(x->body, ptr, n)) {
        x->too_big = true;
        return 0;
    }
    return n;
}

/* wh_kube_get_each: a 2xx body goes to on_data piece by piece; any other
 * body is kept in x->body as far as it fits (an error's first bytes are
 * enough to say what it was). */
static size_t each_write_cb(char *ptr, size_t size, size_t nmemb, void *p)
{
    struct xfer *x = p;
    size_t n = size * nmemb;
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300) {
        if (x->on_data(x->arg, ptr, n)) {
            x->stopped_by_callback = true;
            return 0;
        }
        return n;
    }
    size_t room = x->body->max > wh_buf_len(x->body) ? x->body->max - wh_buf_len(x->body) : 0;
    if (room && wh_buf_addn(x->body, ptr, n < room ? n : room))
        return 0; /* out of memory */
    return n;
}

static void note_status(struct xfer *x)
{
    if (x->opened)
        return;
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (code < 200)
        return; /* interim (1xx) or unknown yet */
    x->opened = true;
    x->ok_status = code < 300;
    if (x->ok_status && x->on_open)
        x->on_open(x->arg);
}

static size_t header_cb(char *ptr, size_t size, size_t nmemb, void *p)
{
    struct xfer *x = p;
    size_t n = size * nmemb;
    /* A new response (after a 100 Continue or a redirect) starts afresh. */
    if (n > 5 && !strncmp(ptr, "HTTP/", 5))
        x->retry_after_s = 0;
    /* Retry-After in seconds (429, 503); the HTTP-date form is not used by
     * the API server. */
    if (n > 12 && !strncasecmp(ptr, "retry-after:", 12)) {
        long v = 0;
        const char *q = ptr + 12;
        while (q < ptr + n && (*q == ' ' || *q == '\t'))
            q++;
        while (q < ptr + n && *q >= '0' && *q <= '9' && v < 3600)
            v = v * 10 + (*q++ - '0');
        x->retry_after_s = v;
    }
    /* The blank line ends the headers: the stream is open from here, even
     * if no event arrives for minutes. */
    if (x->on_line && ((n == 2 && ptr[0] == '\r' && ptr[1] == '\n') || (n == 1 && ptr[0] == '\n')))
        note_status(x);
    return n;
}

static size_t stream_write_cb(char *ptr, size_t size, size_t nmemb, void *p)
{
    struct xfer *x = p;
    size_t n = size * nmemb;
    note_status(x);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (ptr[i] != '\n')
            continue;
        if (wh_buf_addn(&x->line, ptr + start, i - start)) {
            x->too_big = true;
            return 0;
        }
        start = i + 1;
        if (wh_buf_len(&x->line) > 0 && x->ok_status) {
            if (x->on_line(x->arg, wh_buf_ptr(&x->line), wh_buf_len(&x->line))) {
                x->stopped_by_callback = true;
                return 0;
            }
        }
        if (x->ok_status)
            wh_buf_reset(&x->line);
        else if (wh_buf_addc(&x->line, '\n')) { /* error body: keep it whole */
            x->too_big = true;
            return 0;
        }
    }
    if (wh_buf_addn(&x->line, ptr + start, n - start)) {
        x->too_big = true;
        return 0;
    }
    return n;
}

/* A handle for a plain request: an idle one of the pool (its connection
 * may still be open) or a new one. */
static CURL *handle_get(struct wh_kube *k)
{
    CURL *h = NULL;
    pthread_mutex_lock(&k->pool_mu);
    if (k->n_pool)
        h = k->pool[--k->n_pool];
    pthread_mutex_unlock(&k->pool_mu);
    if (h) {
        curl_easy_reset(h); /* options only: the connection cache stays */
        return h;
    }
    return curl_easy_init();
}

static void handle_put(struct wh_kube *k, CURL *h)
{
    pthread_mutex_lock(&k->pool_mu);
    if (k->n_pool < POOL_MAX) {
        k->pool[k->n_pool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&k->pool_mu);
    if (h)
        curl_easy_cleanup(h);
}

/* Frees a copy of the bearer token, or a header holding one, zeroing it
 * first (best effort: no token copies left behind). NULL-safe. */
static void free_secret(char *s)
{
    if (!s)
        return;
    memset(s, 0, strlen(s));
    free(s);
}

/* The request headers: Accept, Content-Type when there is a body, and
 * Authorization when there is a token. *hdrs and *auth (the Authorization
 * line, which holds the token) are the caller's to free, also on failure. */
static enum wh_err request_headers(const struct xfer *x, const char *tok, struct curl_slist **hdrs,
                                   char **auth, char *errbuf)
{
    struct curl_slist *t = curl_slist_append(NULL, "Accept: application/json");
    if (t)
        *hdrs = t;
    if (t && x->req_body) {
        t = curl_slist_append(*hdrs, "Content-Type: application/json");
        if (t)
            *hdrs = t;
    }
    if (t && tok && *tok) {
        size_t al = strlen(tok) + 32;
        *auth = malloc(al);
        if (*auth) {
            snprintf(*auth, al, "Authorization: Bearer %s", tok);
            t = curl_slist_append(*hdrs, *auth);
            if (t)
                *hdrs = t;
        }
        if (!*auth || !t)
            t = NULL;
    }
    return t ? WH_OK : wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
}

/* How the server is trusted (CA, or no verification when asked) and the
 * client certificate and key when the kubeconfig names them: in-memory PEM
 * first, else files. */
static void set_tls(CURL *h, const struct wh_kube_config *cfg, const struct wh_exec_cred *ec)
{
    if (cfg->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (cfg->ca_pem) {
        struct curl_blob blob = {cfg->ca_pem, cfg->ca_pem_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    } else if (cfg->ca_file) {
        curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file);
    }
    if (ec && ec->cert_pem) { /* an exec plugin's client certificate */
        struct curl_blob cb = {ec->cert_pem, ec->cert_len, CURL_BLOB_COPY};
        struct curl_blob kb = {ec->key_pem, ec->key_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
        return;
    }
    if (cfg->cert_pem) {
        struct curl_blob blob = {cfg->cert_pem, cfg->cert_pem_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &blob);
    } else if (cfg->cert_file) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, cfg->cert_file);
    }
    if (cfg->key_pem) {
        struct curl_blob blob = {cfg->key_pem, cfg->key_pem_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &blob);
    } else if (cfg->key_file) {
        curl_easy_setopt(h, CURLOPT_SSLKEY, cfg->key_file);
    }
}

/* Everything but TLS: URL, headers, method and body, timeouts, keep-alive,
 * and the callbacks that fill x. url, hdrs and cerr must outlive the
 * transfer. */
static void set_request(CURL *h, bool stream, struct xfer *x, const char *url,
                        struct curl_slist *hdrs, char *cerr)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     x->timeout_ms > 0 ? x->timeout_ms
                     : stream          ? STREAM_TIMEOUT_MS
                                       : GET_TIMEOUT_MS);
    if (x->method)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, x->method);
    if (x->req_body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, x->req_body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->req_len);
    }
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress_cb);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION,
                     stream       ? stream_write_cb
                     : x->on_data ? each_write_cb
                                  : get_write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
}

/* The error of a failed curl_easy_perform: a body over the limit
 * (WH_ERR_TOOBIG), a stop (WH_ERR_UNAVAILABLE), a TLS failure (WH_ERR_TLS)
 * or any other transport failure (WH_ERR_HTTP), with libcurl's detail. */
static enum wh_err transfer_failure(const struct wh_kube *k, const struct xfer *x, CURLcode rc,
                                    const char *cerr, const char *method, const char *path,
                                    char *errbuf)
{
    if (x->too_big)
        return wh_fail(errbuf, WH_ERR_TOOBIG, "%s %s: response larger than the client accepts",
                       method, path);
    if (rc == CURLE_ABORTED_BY_CALLBACK)
        return wh_fail(errbuf, WH_ERR_UNAVAILABLE, "%s %s: stopped", method, path);
    bool tls = rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION ||
               rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CIPHER ||
               rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CRL_BADFILE;
    return wh_fail(errbuf, tls ? WH_ERR_TLS : WH_ERR_HTTP, "%s %s%s (%s): %s", method,
                   k->cfg->server, path, wh_kube_source(k), cerr[0] ? cerr : curl_easy_strerror(rc));
}

static enum wh_err transfer_once(struct wh_kube *k, const char *path, bool stream, struct xfer *x,
                                 const struct wh_cred_use *use, long *status, char *errbuf)
{
    *status = 0;
    char *tok = NULL, *url = NULL, *auth = NULL;
    struct curl_slist *hdrs = NULL;
    char cerr[CURL_ERROR_SIZE] = "";
    CURL *h = stream ? curl_easy_init() : handle_get(k);
    enum wh_err err = h ? WH_OK : wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    if (!err && use && use->c.token && !(tok = strdup(use->c.token)))
        err = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    else if (!err && !use)
        err = current_token(k, &tok, errbuf);
    if (err)
        goto out;
    size_t ul = strlen(k->cfg->server) + strlen(path) + 1;
    url = malloc(ul);
    if (!url) {
        err = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        goto out;
    }
    snprintf(url, ul, "%s%s", k->cfg->server, path);
    err = request_headers(x, tok, &hdrs, &auth, errbuf);
    if (err)
        goto out;
    x->h = h;
    set_request(h, stream, x, url, hdrs, cerr);
    set_tls(h, k->cfg, use ? &use->c : NULL);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x->stopped_by_callback)) {
        err = transfer_failure(k, x, rc, cerr, x->method ? x->method : "GET", path, errbuf);
        *status = 0;
    }
out:
    curl_slist_free_all(hdrs);
    free_secret(auth);
    free_secret(tok);
    free(url);
    if (h && !stream && !err)
        handle_put(k, h); /* a failed transfer's connection is not reused */
    else if (h)
        curl_easy_cleanup(h);
    return err;
}

/* One request with the configured credential. With an exec plugin, a 401
 * marks the credential refused; in the CLI the plugin is run again and the
 * request made once more, as kubectl does (serve's refresher renews it, and
 * the caller's own retry uses the new one). */
static enum wh_err transfer(struct wh_kube *k, const char *path, bool stream, struct xfer *x,
                            long *status, char *errbuf)
{
    if (!k->cfg->exec)
        return transfer_once(k, path, stream, x, NULL, status, errbuf);
    size_t body_len = x->body ? wh_buf_len(x->body) : 0;
    for (int attempt = 0;; attempt++) {
        struct wh_cred_use use = {0};
        enum wh_err err = wh_credcache_get(k->sh, &use, errbuf);
        if (!err)
            err = transfer_once(k, path, stream, x, &use, status, errbuf);
        wh_exec_cred_clear(&use.c);
        if (err || *status != 401)
            return err;
        wh_credcache_refused(k->sh, use.gen);
        if (attempt > 0 || wh_credcache_background(k->sh))
            return err;
        /* Again from a clean slate: the 401's body is dropped. */
        if (x->body)
            wh_buf_truncate(x->body, body_len);
        wh_buf_reset(&x->line);
        x->opened = x->ok_status = x->stopped_by_callback = x->too_big = false;
        x->retry_after_s = 0;
    }
}

enum wh_err wh_kube_get(struct wh_kube *k, const char *path, struct wh_buf *body, long *status,
                        const atomic_bool *stop, char *errbuf)
{
    struct xfer x = {.stop = stop, .body = body};
    return transfer(k, path, false, &x, status, errbuf);
}

enum wh_err wh_kube_get_each(struct wh_kube *k, const char *path, wh_kube_data_fn on_data,
                             void *arg, struct wh_buf *err_body, long *status,
                             const atomic_bool *stop, char *errbuf)
{
    struct xfer x = {.stop = stop, .body = err_body, .on_data = on_data, .arg = arg};
    return transfer(k, path, false, &x, status, errbuf);
}

enum wh_err wh_kube_request(struct wh_kube *k, const char *method, const char *path,
                            const char *body, size_t body_len, long timeout_ms, struct wh_buf *resp,
                            struct wh_kube_answer *ans, char *errbuf)
{
    struct xfer x = {.body = resp,
                     .method = method,
                     .req_body = body,
                     .req_len = body_len,
                     .timeout_ms = timeout_ms};
    enum wh_err err = transfer(k, path, false, &x, &ans->status, errbuf);
    ans->retry_after_s = x.retry_after_s;
    return err;
}

enum wh_err wh_kube_stream(struct wh_kube *k, const char *path, void (*on_open)(void *arg),
                           wh_kube_line_fn on_line, void *arg, long *status,
                           const atomic_bool *stop, char *errbuf)
{
    struct xfer x = {.stop = stop, .on_line = on_line, .on_open = on_open, .arg = arg};
    wh_buf_init(&x.line, WH_KUBE_EVENT_MAX);
    enum wh_err err = transfer(k, path, true, &x, status, errbuf);
    /* A non-2xx answer carries a Status object; hand it over whole. */
    if (!err && !x.stopped_by_callback && wh_buf_len(&x.line) > 0 &&
        (*status < 200 || *status >= 300))
        on_line(arg, wh_buf_ptr(&x.line), wh_buf_len(&x.line));
    wh_buf_free(&x.line);
    return err;
}

void wh_kube_escape(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            dst[o++] = (char)ch;
        } else {
            dst[o++] = '%';
            dst[o++] = hex[ch >> 4];
            dst[o++] = hex[ch & 15];
        }
    }
    dst[o] = '\0';
}
