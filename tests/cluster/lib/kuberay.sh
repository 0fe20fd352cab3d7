# shellcheck shell=bash
# The KubeRay operator (ray-project/kuberay ray-operator v1.5.0, built by
# tests/cluster/build.sh kuberay) for scripts/cluster.sh: its three CRDs
# from its module, then the operator as a local process with the admin
# kubeconfig. KubeRay needs no webhook of its own.
#
# WH_KUBERAY_INDEXING (on|off, default on) is the RayMultiHostIndexing
# feature gate (alpha, off by default in v1.5.0): on, multi-host worker
# pods carry ray.io/worker-group-replica-index and ray.io/replica-host-index
# and the webhook takes the ids from them; off, they carry neither and the
# webhook assigns ids itself through Leases (docs/legacy-indices.md).
# kuberay_restart on|off switches it on a running cluster.

# shellcheck source=tests/cluster/lib/operators.sh
. "$(dirname "${BASH_SOURCE[0]}")/operators.sh"

KUBERAY_MODULE=github.com/ray-project/kuberay/ray-operator

kuberay_up() {
  local dir
  dir=$(operator_module_dir kuberay "$KUBERAY_MODULE")
  operator_crds "$dir"/config/crd/bases/ray.io_{rayclusters,rayjobs,rayservices}.yaml
  kuberay_start "${WH_KUBERAY_INDEXING:-on}"
}

kuberay_start() { # kuberay_start on|off
  local gate port
  case $1 in on) gate=true ;; off) gate=false ;; *) cluster_die "kuberay: indexing on|off, not '$1'" ;; esac
  [ -x "$CLUSTER_BIN/kuberay-operator" ] || cluster_die "kuberay: no $CLUSTER_BIN/kuberay-operator (bash tests/cluster/build.sh kuberay)"
  port=$(cluster_free_port)
  mkdir -p "$WH_CLUSTER_DIR/kuberay"
  echo "$1" >"$WH_CLUSTER_DIR/kuberay/indexing"
  cluster_spawn kuberay-operator "$CLUSTER_BIN/kuberay-operator" \
    --kubeconfig "$WH_CLUSTER_DIR/admin.kubeconfig" --enable-leader-election=false \
    --metrics-addr 0 --health-probe-bind-address "127.0.0.1:$port" \
    --feature-gates "RayMultiHostIndexing=$gate" --log-stdout-encoder console
  operator_health kuberay-operator "$port"
  cluster_log "kuberay-operator ready (RayMultiHostIndexing=$gate)"
}

# The operator again with the gate on or off; what it made stays.
kuberay_restart() { # kuberay_restart on|off
  cluster_stop kuberay-operator
  kuberay_start "$1"
}
