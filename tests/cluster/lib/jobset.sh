# shellcheck shell=bash
# The JobSet controller (sigs.k8s.io/jobset v0.12.0, built by
# tests/cluster/build.sh jobset) for scripts/cluster.sh, with its own
# admission webhooks running as in a real cluster (the JobSet defaulting and
# validation, and the pod webhooks on every pod labelled
# jobset.sigs.k8s.io/jobset-name): CRD and webhook configurations from its
# module's config/, a local process with the admin kubeconfig. The Job
# controller of kube-controller-manager creates the pods. No scheduler
# runs, so a JobSet with exclusive placement
# (alpha.jobset.sigs.k8s.io/exclusive-topology) never gets its followers:
# JobSet's pod webhook waits for the leader's nodeName.

# shellcheck source=tests/cluster/lib/operators.sh
. "$(dirname "${BASH_SOURCE[0]}")/operators.sh"

jobset_up() {
  local dir
  dir=$(operator_module_dir jobset sigs.k8s.io/jobset)
  operator_crds "$dir/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
  operator_controller jobset "$CLUSTER_BIN/jobset-controller" config.jobset.x-k8s.io/v1alpha1 \
    jobset-system jobset-webhook-service "$dir/config/components/webhook"
}
