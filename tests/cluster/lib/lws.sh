# shellcheck shell=bash
# The LeaderWorkerSet controller (sigs.k8s.io/lws v0.9.0, built by
# tests/cluster/build.sh lws; v0.10+ is not served, docs/cluster.md) for
# scripts/cluster.sh, with its own admission webhooks running as in a real
# cluster: its pod webhook labels every LWS pod and injects TPU_WORKER_ID,
# TPU_WORKER_HOSTNAMES, TPU_NAME and TPU_PROCESS_ADDRESSES itself, so
# tpu-webhook meets a second mutating webhook on the same pod. CRDs and
# webhook configurations from its module's config/, a local process with
# the admin kubeconfig; the StatefulSet controller of
# kube-controller-manager creates the pods.

# shellcheck source=tests/cluster/lib/operators.sh
. "$(dirname "${BASH_SOURCE[0]}")/operators.sh"

lws_up() {
  local dir
  dir=$(operator_module_dir lws sigs.k8s.io/lws)
  # The plain base CRDs: LeaderWorkerSet has one version (v1), so the
  # conversion webhook of config/crd/patches is not needed.
  operator_crds "$dir"/config/crd/bases/{leaderworkerset.x-k8s.io_leaderworkersets,disaggregatedset.x-k8s.io_disaggregatedsets}.yaml
  operator_controller lws "$CLUSTER_BIN/lws-controller" config.lws.x-k8s.io/v1alpha1 \
    lws-system lws-webhook-service "$dir/config/webhook"
}
