/* kubeconfig.h: where the Kubernetes API server is and how to talk to it.
 *
 * Two sources, as client-go has them:
 *   - in-cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT, the
 *     service-account token file (re-read by the client on every request,
 *     so a rotated token is picked up) and the service-account CA;
 *   - a kubeconfig file (--kube-config-path), read with wh_yaml_load as
 *     kubectl reads it (YAML or JSON; YAML 1.1 scalars; a duplicate key is
 *     refused; a string field given a number is refused, quote it): the
 *     current-context's cluster (server, certificate-authority(-data),
 *     insecure-skip-tls-verify) and user (token, tokenFile,
 *     client-certificate(-data), client-key(-data)). Relative paths are
 *     relative to the kubeconfig's directory, as kubectl resolves them.
 * Errors name the file, the field and the bad value.
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

struct wh_kube_config {
    char *source;  /* "in-cluster" or the kubeconfig path, for messages */
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
    bool insecure; /* insecure-skip-tls-verify */
};

/* Load the current context of a kubeconfig file. On failure out is cleared. */
WH_NODISCARD enum wh_err wh_kubeconfig_load(const char *path, struct wh_kube_config *out,
                                            char *errbuf);
/* The in-cluster configuration. Fails (WH_ERR_NOTFOUND) outside a pod. */
WH_NODISCARD enum wh_err wh_kubeconfig_in_cluster(struct wh_kube_config *out, char *errbuf);
/* Free what cfg owns and zero it; NULL-safe. */
void wh_kube_config_clear(struct wh_kube_config *cfg);

#endif /* WH_KUBECONFIG_H */
