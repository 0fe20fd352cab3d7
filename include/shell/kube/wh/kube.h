/* kube.h: a minimal Kubernetes API client on libcurl (requests and watch streams).
 *
 * Thread-safe: each call uses its own curl handle, so the pod and node
 * watchers run in parallel. The bearer token of a token file is re-read on
 * every request, so a rotated service-account token is picked up without a
 * restart. Tokens never appear in logs or error texts.
 *
 * An exec credential plugin's credential is cached, shared by the clones of
 * a client (wh_kube_clone), until its expirationTimestamp or a 401. In the
 * CLI a request runs the plugin when the cache holds nothing fresh (one run
 * at a time) and, after a 401, runs it again and repeats the request once.
 * serve calls wh_kube_refresh_in_background: from then on only a thread of
 * the client runs the plugin (ahead of expiry, and after a 401), and a
 * request never waits for it (docs/internals/threads.md).
 *
 * Ownership: wh_kube_new() takes over the configuration's memory (the
 * caller's struct is zeroed); wh_kube_free() releases a client, and the
 * configuration with its last clone.
 */
#ifndef WH_KUBE_H
#define WH_KUBE_H

#include <stdatomic.h> /* atomic_bool */
#include <stddef.h>    /* size_t */

#include "wh/buf.h"        /* struct wh_buf */
#include "wh/err.h"        /* enum wh_err */
#include "wh/kubeconfig.h" /* struct wh_kube_config */

/* Largest response body of a plain GET (one LIST page). */
#define WH_KUBE_BODY_MAX ((size_t)256 * 1024 * 1024)
/* Largest single watch event line. */
#define WH_KUBE_EVENT_MAX ((size_t)16 * 1024 * 1024)

struct wh_kube;

/* NULL with a reason in errbuf on failure (cfg then still owns its memory). */
struct wh_kube *wh_kube_new(struct wh_kube_config *cfg, char *errbuf);
void wh_kube_free(struct wh_kube *k); /* NULL-safe */
/* Another client of the same configuration and credential cache (its own
 * connections); freed with wh_kube_free. NULL with a reason on failure. */
struct wh_kube *wh_kube_clone(struct wh_kube *k, char *errbuf);
/* With an exec plugin: run it now (the caller waits, at start-up), then
 * keep the credential fresh on a thread of the client's own, stopped by
 * the last wh_kube_free. Without one: nothing. */
WH_NODISCARD enum wh_err wh_kube_refresh_in_background(struct wh_kube *k, char *errbuf);
/* "in-cluster" or the kubeconfig path; borrowed. */
const char *wh_kube_source(const struct wh_kube *k);

/* s percent-encoded into dst (cap bytes, NUL-terminated) for a path segment
 * or a query value: RFC 3986's unreserved characters are kept, every other
 * byte is %XX. Cut at a whole escape when dst is full. */
void wh_kube_escape(char *dst, size_t cap, const char *s);

/* GET server + path (path starts with '/', query already escaped). The body
 * is appended to body whatever the status; *status is the HTTP status. A
 * transport failure (connect, TLS, timeout, stop) is WH_ERR_HTTP/WH_ERR_TLS
 * with *status 0. stop (may be NULL) aborts the transfer when set. */
WH_NODISCARD enum wh_err wh_kube_get(struct wh_kube *k, const char *path, struct wh_buf *body,
                                     long *status, const atomic_bool *stop, char *errbuf);

/* GET server + path, the body handed to on_data as it arrives (libcurl's
 * pieces, already decompressed) when the status is 2xx; on_data returns
 * non-zero to stop the transfer (WH_OK: the caller knows why it stopped).
 * Any other status's body is appended to err_body up to its maximum, the
 * rest dropped. Otherwise as wh_kube_get. */
typedef int (*wh_kube_data_fn)(void *arg, const char *data, size_t len);
WH_NODISCARD enum wh_err wh_kube_get_each(struct wh_kube *k, const char *path,
                                          wh_kube_data_fn on_data, void *arg,
                                          struct wh_buf *err_body, long *status,
                                          const atomic_bool *stop, char *errbuf);

/* Another request: method ("POST", "PUT", "DELETE", ...) with an optional
 * JSON body (body may be NULL), a whole-transfer timeout (timeout_ms > 0,
 * else the GET default) and the answer's status and Retry-After in *ans.
 * The response body is appended to resp. Handles of such requests are
 * pooled so that their connections are kept alive between calls. A
 * transport failure is WH_ERR_HTTP/WH_ERR_TLS with ans->status 0. */
struct wh_kube_answer {
    long status;        /* HTTP status; 0 on a transport failure */
    long retry_after_s; /* Retry-After (seconds) when the server sent one, else 0 */
};
WH_NODISCARD enum wh_err wh_kube_request(struct wh_kube *k, const char *method, const char *path,
                                         const char *body, size_t body_len, long timeout_ms,
                                         struct wh_buf *resp, struct wh_kube_answer *ans,
                                         char *errbuf);

/* A watch: GET a newline-delimited stream and call on_line for each line.
 * Returns when the server ends the stream (WH_OK), on_line returns non-zero
 * (WH_OK), stop is set (WH_ERR_UNAVAILABLE) or the transfer fails. A non-2xx
 * status ends the call with WH_OK and the status in *status; the error body
 * is then passed to on_line as one line. on_open is called once the
 * response status is 2xx (may be NULL). */
typedef int (*wh_kube_line_fn)(void *arg, const char *line, size_t len);
WH_NODISCARD enum wh_err wh_kube_stream(struct wh_kube *k, const char *path,
                                        void (*on_open)(void *arg), wh_kube_line_fn on_line,
                                        void *arg, long *status, const atomic_bool *stop,
                                        char *errbuf);

#endif /* WH_KUBE_H */
