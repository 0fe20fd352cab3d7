/* execcred.h: running a kubeconfig's exec credential plugin (private to the
 * kube room; kube.c caches what it returns).
 *
 * The plugin is started with posix_spawnp (safe in a threaded process), its
 * own process group unless it may use the terminal, an empty signal mask,
 * the caller's environment plus exec.env and KUBERNETES_EXEC_INFO (spec.
 * interactive, and spec.cluster when provideClusterInfo), stdin /dev/null
 * unless interactive. Its stdout (bounded) is the ExecCredential; its stderr
 * (bounded) is quoted in a failure message, its stdout never is, since it
 * may hold a credential. A plugin still running at the timeout is killed.
 * The call blocks for that long at most: run it on a kube client thread or
 * in the CLI, never on a thread that serves admissions (threads.md).
 */
#ifndef WH_EXECCRED_H
#define WH_EXECCRED_H

#include <stdatomic.h> /* atomic_bool */
#include <stddef.h>    /* size_t */

#include "wh/err.h"        /* enum wh_err */
#include "wh/kubeconfig.h" /* struct wh_kube_config */

/* An ExecCredential's status. Every pointer is malloc'd and owned; the
 * secrets are zeroed by wh_exec_cred_clear. */
struct wh_exec_cred {
    char *token;    /* bearer token, or NULL */
    char *cert_pem; /* client certificate PEM, or NULL */
    size_t cert_len;
    char *key_pem; /* client key PEM, or NULL */
    size_t key_len;
    long long expires_ms; /* expirationTimestamp, Unix ms; 0 when none (valid until a 401) */
};

/* Run cfg->exec once and parse its ExecCredential into out. stop (may be
 * NULL), once set, kills the plugin within a second. Errors name the
 * plugin, the kubeconfig and the fix, never a credential. */
WH_NODISCARD enum wh_err wh_exec_run(const struct wh_kube_config *cfg, const atomic_bool *stop,
                                     struct wh_exec_cred *out, char *errbuf);
/* Zero and free what c holds; NULL-safe. */
void wh_exec_cred_clear(struct wh_exec_cred *c);
/* An RFC 3339 time ("2026-12-07T14:00:00Z", fractions, offsets) in Unix
 * ms; -1 when it is not one. */
long long wh_exec_parse_time_ms(const char *s);

#endif /* WH_EXECCRED_H */
