/* kubeconfig.h: where the Kubernetes API server is and how to talk to it.
 *
 * Two sources, as client-go has them:
 *   - in-cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT, the
 *     service-account token file (re-read by the client on every request,
 *     so a token the kubelet rotates is picked up) and the service-account CA;
 *   - a kubeconfig file (--kubeconfig), or the files $KUBECONFIG lists
 *     merged as kubectl merges them, read with wh_yaml_load as
 *     kubectl reads it (YAML or JSON; YAML 1.1 scalars; a duplicate key is
 *     refused; a string field given a number is refused, quote it): the
 *     current-context's cluster (server, certificate-authority(-data),
 *     insecure-skip-tls-verify, the exec extension) and user (token,
 *     tokenFile, client-certificate(-data), client-key(-data), exec: an
 *     ExecCredential plugin, client.authentication.k8s.io/v1 or v1beta1, run
 *     by kube.c). Relative paths are relative to the directory of the file
 *     that holds them, as kubectl resolves them (an exec command too, when
 *     it holds a '/').
 * Errors name the file, the field and the bad value, never a credential.
 * Files (kubeconfig, token, certificates) are read with
 * wh_read_regular_file: a FIFO or a device is refused at once, not waited on.
 * A credential is never sent over plain http:// to a host other than the
 * loopback (refused); to the loopback, the config carries a warning.
 *
 * Ownership: every pointer in struct wh_kube_config is owned by it and
 * freed by wh_kube_config_clear().
 */
#ifndef WH_KUBECONFIG_H
#define WH_KUBECONFIG_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include "wh/err.h" /* enum wh_err */

/* The service-account mount; WH_SERVICEACCOUNT_DIR overrides it (tests,
 * unusual mounts). */
#define WH_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Largest kubeconfig / token / certificate file read. */
#define WH_KUBECONFIG_MAX ((size_t)4 * 1024 * 1024)

/* How an exec plugin may use the terminal (kubeconfig interactiveMode). */
enum wh_exec_interactive {
    WH_EXEC_NEVER,        /* stdin is /dev/null */
    WH_EXEC_IF_AVAILABLE, /* the caller's stdin when it is a terminal and the caller allows it */
    WH_EXEC_ALWAYS,       /* needs that terminal: a clear error without one */
};

/* users[].user.exec. Every pointer is owned (freed by wh_kube_config_clear). */
struct wh_exec_config {
    char *api_version; /* "client.authentication.k8s.io/v1" or ".../v1beta1" */
    char *command;     /* an absolute path, or a bare name looked up on $PATH */
    char **argv;       /* command then args, NULL-terminated */
    char **env;        /* "NAME=value" added to the environment, NULL-terminated */
    char *install_hint;
    char *cluster_config; /* the cluster's client.authentication.k8s.io/exec extension (JSON), or NULL */
    enum wh_exec_interactive interactive;
    bool provide_cluster_info;
};

/* How long an exec plugin may run before it is killed. */
#define WH_EXEC_TIMEOUT_MS 60000L

struct wh_kube_config {
    char *source;  /* "in-cluster" or the kubeconfig file, for messages */
    char *server;  /* "https://host:port" without a trailing slash */
    char *ca_file; /* CA bundle file, or NULL */
    char *ca_pem;  /* CA bundle PEM bytes (certificate-authority-data), or NULL */
    size_t ca_pem_len;
    char *token;      /* static bearer token, or NULL */
    char *token_file; /* bearer token file, re-read per request, or NULL */
    char *cert_file;  /* client certificate PEM file, or NULL */
    char *cert_pem;   /* client certificate PEM bytes, or NULL */
    size_t cert_pem_len;
    char *key_file; /* client key PEM file, or NULL */
    char *key_pem;  /* client key PEM bytes, or NULL */
    size_t key_pem_len;
    bool insecure;               /* insecure-skip-tls-verify */
    struct wh_exec_config *exec; /* an exec credential plugin, or NULL */
    char *warning; /* why this configuration is risky (a token over loopback http://), or NULL */
    /* Set by the caller after loading (defaults: 0 = WH_EXEC_TIMEOUT_MS, false). */
    long exec_timeout_ms;
    bool exec_may_prompt; /* the caller runs in a terminal a plugin may prompt on (the CLI) */
};

/* Load the current context of a kubeconfig file. On failure out is cleared. */
WH_NODISCARD enum wh_err wh_kubeconfig_load(const char *path, struct wh_kube_config *out,
                                            char *errbuf);
/* Load the current context of a list of kubeconfig files separated by ':'
 * ($KUBECONFIG), merged as kubectl merges them: empty entries and repeats
 * are dropped and a file that does not exist is skipped (WH_ERR_NOTFOUND
 * when none exists); every other file is read and checked, and one that is
 * bad fails the load naming it and the field. The first file that sets
 * current-context gives it; the first file holding a context, cluster or
 * user of a name gives that whole entry (later files' entries of that name
 * are ignored), its relative paths resolved against its own directory.
 * source is the file of the user's entry (else the context's). On failure
 * out is cleared. */
WH_NODISCARD enum wh_err wh_kubeconfig_load_list(const char *list, struct wh_kube_config *out,
                                                 char *errbuf);
/* The in-cluster configuration. Fails (WH_ERR_NOTFOUND) outside a pod. */
WH_NODISCARD enum wh_err wh_kubeconfig_in_cluster(struct wh_kube_config *out, char *errbuf);
/* The configuration kubectl would use: path when given; else $KUBECONFIG
 * (its files merged: wh_kubeconfig_load_list); else ~/.kube/config when
 * it exists; else in-cluster. serve (in_cluster_default) skips $KUBECONFIG
 * and ~/.kube/config: without --kubeconfig it is in-cluster, as the
 * reference is. */
WH_NODISCARD enum wh_err wh_kubeconfig_resolve(const char *path, bool in_cluster_default,
                                               struct wh_kube_config *out, char *errbuf);
/* Free what cfg owns and zero it; NULL-safe. */
void wh_kube_config_clear(struct wh_kube_config *cfg);

#endif /* WH_KUBECONFIG_H */
