#!/usr/bin/env bash
# cluster.sh up [options] | down | status | webhook start|stop|restart
#
# A real Kubernetes control plane on this machine, no GKE, container engine
# or kubelet needed: etcd, kube-apiserver and kube-controller-manager built
# from their Go modules (tests/cluster/build.sh), TPU Nodes from
# tests/cluster/fixtures/nodes.yaml (pods stay Pending: nothing runs them),
# the operators of the components asked for, and tpu-webhook installed from
# this repository's Helm chart (or kustomize), served by a local process
# with the chart's ServiceAccount token, so the chart's RBAC is what it runs
# with. docs/cluster.md says more; the README shows a first session.
#
#   up       starts it; prints the admin kubeconfig's path last
#   down     stops every process up started and removes the state directory
#   status   the processes, their listeners, the kubeconfig
#   webhook start|stop|restart   the webhook process(es) alone (tests)
#
# up's options:
#   --components LIST    operators to start, space or comma separated, each
#                        tests/cluster/lib/<name>.sh (default: "kuberay
#                        jobset lws"; "" for none)
#   --install helm|kustomize|none   how the webhook is installed (default
#                        helm; none: not at all, for a case that installs
#                        another, e.g. the reference's manifests)
#   --replicas N         webhook processes (default 1), each its own Lease
#                        holder; with N > 1 the API server spreads its calls
#                        over them (--enable-aggregator-routing: the
#                        Service's EndpointSlice, one address per replica
#                        on lo, which needs root)
#   --endpoint-routing   that routing with any N (and with --install none)
#   --kuberay-indexing on|off  KubeRay's multi-host indexing feature gate
#                        (default on), for kuberay_up
#   --webhook PATH       the tpu-webhook binary (default: $WH_BINARY, else
#                        built with cmake in build/)
#   --keep-logs          down keeps logs/ (for reading after a failed run)
#   --webhook-client-cert on|missing  the webhook requires a client
#                        certificate (--client-ca-file, pki/webhook-client-ca);
#                        on: kube-apiserver presents one through its
#                        admission configuration (admission/, as
#                        docs/deploy.md "Client certificates" shows);
#                        missing: it presents none (the negative control:
#                        up does not wait for the webhook to mutate)
#
# State lives in ${WH_CLUSTER_DIR:-<repo>/build-cluster}: env (source it:
# KUBECONFIG, CLUSTER_BIN, ...), admin.kubeconfig, pki/, logs/NAME.log,
# pids/NAME. Every listener is on 127.0.0.1 (with --replicas N > 1, the
# webhooks' on addresses of their own on lo), its port chosen free at start.
set -Eeuo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export WH_CLUSTER_DIR=${WH_CLUSTER_DIR:-$repo/build-cluster}
CLUSTER_BIN=$repo/tests/cluster/bin
export CLUSTER_BIN
# shellcheck source=tests/cluster/lib/common.sh
. "$repo/tests/cluster/lib/common.sh"
D=$WH_CLUSTER_DIR
WH_NAMESPACE=ray-system
WH_SERVICE=kuberay-tpu-webhook

usage() {
  sed -n '2,/^set -Eeuo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

# ---- down -------------------------------------------------------------------

down() {
  local keep_logs=0 name comp
  [ "${1:-}" = --keep-logs ] && keep_logs=1
  [ -f "$D/keep-logs" ] && keep_logs=1
  [ -d "$D" ] || {
    cluster_log "nothing to stop ($D does not exist)"
    return 0
  }
  if [ -f "$D/components" ]; then
    while read -r comp; do
      [ -n "$comp" ] || continue
      if [ -f "$repo/tests/cluster/lib/$comp.sh" ]; then
        # shellcheck source=/dev/null
        . "$repo/tests/cluster/lib/$comp.sh"
        if declare -F "${comp}_down" >/dev/null; then "${comp}_down" || cluster_log "${comp}_down failed"; fi
      fi
    done <"$D/components"
  fi
  if [ -f "$D/pids/.order" ]; then
    for name in $(tac "$D/pids/.order"); do cluster_stop "$name"; done
  fi
  for name in "$D"/pids/*; do # any not in .order
    [ -e "$name" ] && cluster_stop "$(basename "$name")"
  done
  cluster_addresses_release
  if ((keep_logs)) && [ -d "$D/logs" ]; then
    find "$D" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
    cluster_log "stopped; logs kept in $D/logs"
  else
    rm -rf "$D"
    cluster_log "stopped; $D removed"
  fi
}

# ---- status -----------------------------------------------------------------

status() {
  local name pid state rc=0
  if [ ! -d "$D/pids" ]; then
    echo "cluster: down ($D has no processes)"
    return 3
  fi
  while read -r name; do
    [ -f "$D/pids/$name" ] || continue
    pid=$(cat "$D/pids/$name")
    if cluster_alive "$name"; then state=running; else
      state=exited
      rc=1
    fi
    printf '%-28s pid %-8s %-8s %s\n' "$name" "$pid" "$state" \
      "$(ss -Hltnp 2>/dev/null | grep "pid=$pid," | awk '{print $4}' | tr '\n' ' ')"
  done <"$D/pids/.order"
  echo "KUBECONFIG=$D/admin.kubeconfig"
  return $rc
}

# ---- up ---------------------------------------------------------------------

pki() {
  local p=$D/pki
  mkdir -p "$p"
  ca() { # ca NAME CN
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$p/$1.key" -out "$p/$1.crt" -days 30 \
      -subj "/CN=$2" -addext basicConstraints=critical,CA:TRUE \
      -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null || cluster_die "openssl: CA $1"
  }
  leaf() { # leaf NAME SUBJECT EXT CA
    if ! openssl req -new -newkey rsa:2048 -nodes -keyout "$p/$1.key" -subj "$2" -out "$p/$1.csr" 2>/dev/null ||
      ! openssl x509 -req -in "$p/$1.csr" -CA "$p/$4.crt" -CAkey "$p/$4.key" -set_serial "0x$(openssl rand -hex 16)" \
        -days 30 -sha256 -out "$p/$1.crt" -extfile <(printf '%s\n' "$3") 2>/dev/null; then
      cluster_die "openssl: certificate $1"
    fi
    rm -f "$p/$1.csr"
  }
  ca cluster-ca "tpu-webhook test cluster CA"
  ca webhook-ca "tpu-webhook test webhook CA"
  if [ "$client_cert" != off ]; then
    ca webhook-client-ca "tpu-webhook test API server client CA"
    leaf apiserver-webhook-client "/CN=kube-apiserver-webhook-client" "extendedKeyUsage=clientAuth" webhook-client-ca
  fi
  leaf apiserver "/CN=kube-apiserver" \
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc,IP:10.0.0.1
extendedKeyUsage=serverAuth" cluster-ca
  leaf admin "/O=system:masters/CN=admin" "extendedKeyUsage=clientAuth" cluster-ca
  if ! openssl genrsa -out "$p/sa.key" 2048 2>/dev/null ||
    ! openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null; then
    cluster_die "openssl: service account key"
  fi
}

kubeconfig() { # kubeconfig FILE USER-LINES...
  local f=$1
  shift
  {
    cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tpu-webhook-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $D/pki/cluster-ca.crt
contexts:
- name: tpu-webhook-test
  context: {cluster: tpu-webhook-test, user: user}
current-context: tpu-webhook-test
users:
- name: user
  user:
EOF
    printf '    %s\n' "$@"
  } >"$f"
  chmod 600 "$f"
}

# kube-apiserver's admission configuration giving its webhook calls the
# client certificate (docs/deploy.md, "Client certificates"); the user "*"
# matches every webhook host.
admission_config() {
  local a=$D/admission
  mkdir -p "$a"
  cat >"$a/webhook-kubeconfig.yaml" <<EOF
apiVersion: v1
kind: Config
users:
  - name: "*"
    user:
      client-certificate: $D/pki/apiserver-webhook-client.crt
      client-key: $D/pki/apiserver-webhook-client.key
EOF
  cat >"$a/config.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: ValidatingAdmissionWebhook
    configuration:
      apiVersion: apiserver.config.k8s.io/v1
      kind: WebhookAdmissionConfiguration
      kubeConfigFile: $a/webhook-kubeconfig.yaml
  - name: MutatingAdmissionWebhook
    configuration:
      apiVersion: apiserver.config.k8s.io/v1
      kind: WebhookAdmissionConfiguration
      kubeConfigFile: $a/webhook-kubeconfig.yaml
EOF
  echo "$a/config.yaml"
}

start_control_plane() {
  local ec ep admission=()
  [ "$client_cert" = on ] && admission=(--admission-control-config-file "$(admission_config)")
  ec=$(cluster_free_port)
  ep=$(cluster_free_port)
  cluster_spawn etcd "$CLUSTER_BIN/etcd" --data-dir "$D/etcd" --name test \
    --listen-client-urls "http://127.0.0.1:$ec" --advertise-client-urls "http://127.0.0.1:$ec" \
    --listen-peer-urls "http://127.0.0.1:$ep" --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
    --initial-cluster "test=http://127.0.0.1:$ep" \
    --unsafe-no-fsync --log-level warn
  cluster_wait 60 "etcd health" etcd curl -fsS "http://127.0.0.1:$ec/health"
  cluster_log "etcd ready on 127.0.0.1:$ec"

  API_PORT=$(cluster_free_port)
  cluster_spawn kube-apiserver "$CLUSTER_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ec" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
    --secure-port "$API_PORT" --tls-cert-file "$D/pki/apiserver.crt" --tls-private-key-file "$D/pki/apiserver.key" \
    --client-ca-file "$D/pki/cluster-ca.crt" --authorization-mode RBAC \
    --service-account-issuer "https://127.0.0.1:$API_PORT" --service-account-key-file "$D/pki/sa.pub" \
    --service-account-signing-key-file "$D/pki/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
    --allow-privileged --endpoint-reconciler-type none --profiling=false \
    --enable-aggregator-routing="$routing" "${admission[@]}"
  kubeconfig "$D/admin.kubeconfig" "client-certificate: $D/pki/admin.crt" "client-key: $D/pki/admin.key"
  export KUBECONFIG=$D/admin.kubeconfig
  cluster_wait 240 "kube-apiserver /readyz" kube-apiserver \
    curl -fsS --cacert "$D/pki/cluster-ca.crt" --cert "$D/pki/admin.crt" --key "$D/pki/admin.key" \
    "https://127.0.0.1:$API_PORT/readyz"
  cluster_log "kube-apiserver ready on 127.0.0.1:$API_PORT"

  # The admin identity (system:masters) with --use-service-account-credentials
  # off: one client for all controllers, no token controller needed.
  cluster_spawn kube-controller-manager "$CLUSTER_BIN/kube-controller-manager" \
    --kubeconfig "$D/admin.kubeconfig" --leader-elect=false --use-service-account-credentials=false \
    --controllers job-controller,statefulset-controller,serviceaccount-controller,garbage-collector-controller,namespace-controller \
    --bind-address 127.0.0.1 --secure-port 0
  # The ServiceAccount admission plugin refuses pods until "default" exists.
  cluster_wait 120 "kube-controller-manager: ServiceAccount default/default" kube-controller-manager \
    cluster_kubectl get serviceaccount default -n default
  cluster_log "kube-controller-manager ready"
}

create_nodes() {
  cluster_kubectl create -f "$repo/tests/cluster/fixtures/nodes.yaml" >/dev/null ||
    cluster_die "creating the TPU Nodes of tests/cluster/fixtures/nodes.yaml"
  cluster_log "$(cluster_kubectl get nodes --no-headers | wc -l) TPU Nodes created (no kubelet: pods stay Pending)"
}

install_helm() {
  local helm=$repo/build-tools/helm4/helm
  [ -x "$helm" ] || bash "$repo/scripts/fetch-test-helm.sh" >&2 ||
    cluster_die "no Helm 4 at $helm (scripts/fetch-test-helm.sh failed)"
  "$helm" install tpu-webhook "$repo/deploy/helm/kuberay-tpu-webhook" --kubeconfig "$D/admin.kubeconfig" \
    -n "$WH_NAMESPACE" --set tpuWebhook.certManager.enabled=false --set tpuWebhook.workloads.enabled=true \
    --set "tpuWebhook.service.port=$WH_PORT" --set "tpuWebhook.deployment.replicas=$replicas" \
    >"$D/logs/helm-install.log" 2>&1 ||
    {
      cat "$D/logs/helm-install.log" >&2
      cluster_die "helm install of deploy/helm/kuberay-tpu-webhook (output above)"
    }
}

# kustomize: deploy/kustomize/base and the workload webhooks of
# deploy/kustomize/workloads, without its cert-manager objects (certs/),
# each webhook's service port set to the local process's.
install_kustomize() {
  local k=$D/kustomize
  mkdir -p "$k"
  cp "$repo/deploy/kustomize/workloads/workload-webhooks.yaml" "$k/"
  cat >"$k/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$k" "$repo/deploy/kustomize/base")
  - workload-webhooks.yaml
EOF
  cluster_kubectl kustomize --load-restrictor LoadRestrictionsNone "$k" >"$k/rendered.yaml" ||
    cluster_die "kubectl kustomize of deploy/kustomize/base + workloads"
  python3 - "$k/rendered.yaml" "$WH_PORT" "$replicas" >"$k/installed.yaml" <<'PY' || cluster_die "rewriting the kustomize output"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for w in d["webhooks"]:
            w["clientConfig"]["service"]["port"] = int(sys.argv[2])
    if d["kind"] == "Deployment":
        d["spec"]["replicas"] = int(sys.argv[3])
yaml.safe_dump_all(docs, sys.stdout)
PY
  cluster_kubectl apply --server-side -f "$k/installed.yaml" >"$D/logs/kustomize-install.log" 2>&1 ||
    {
      cat "$D/logs/kustomize-install.log" >&2
      cluster_die "kubectl apply of the kustomize output ($k/installed.yaml)"
    }
}

# The command that serves replica I; also written to webhook/run-I.sh so
# that `cluster.sh webhook start` (and a test) starts the same process.
webhook_cmd() { # webhook_cmd I
  local i=$1 client_ca_arg=""
  [ "$client_cert" = off ] || client_ca_arg=" --client-ca-file $D/pki/webhook-client-ca.crt"
  cat <<EOF
#!/usr/bin/env bash
export POD_NAME=kuberay-tpu-webhook-local-$i POD_NAMESPACE=$WH_NAMESPACE
exec "$WH_BIN" serve --bind-address ${WH_ADDRS[i]}:$WH_PORT \\
  --tls-cert-file "$D/webhook/tls.crt" --tls-private-key-file "$D/webhook/tls.key" \\
  --kube-config-path "$D/webhook/kubeconfig" --v=1 --shutdown-timeout=5s$client_ca_arg
EOF
}

webhook_start() {
  local i addrs
  mapfile -t addrs <"$D/webhook/addresses"
  for ((i = 0; i < ${#addrs[@]}; i++)); do
    cluster_spawn "tpu-webhook-$i" bash "$D/webhook/run-$i.sh"
  done
  for ((i = 0; i < ${#addrs[@]}; i++)); do
    cluster_wait 120 "tpu-webhook-$i /readyz" "tpu-webhook-$i" \
      curl -fsS --cacert "$D/pki/webhook-ca.crt" \
      --resolve "$WH_SERVICE.$WH_NAMESPACE.svc:$(cat "$D/webhook/port"):${addrs[i]}" \
      "https://$WH_SERVICE.$WH_NAMESPACE.svc:$(cat "$D/webhook/port")/readyz"
  done
}

webhook_stop() {
  local i n
  n=$(cat "$D/webhook/replicas")
  for ((i = 0; i < n; i++)); do cluster_stop "tpu-webhook-$i"; done
}

# A TPU pod the workload webhook mutates, created with a server-side dry
# run: the configuration is active once its env carries TPU_WORKER_ID.
webhook_active() {
  cluster_kubectl create --dry-run=server -o json -f - <<'EOF' | grep -q '"TPU_WORKER_ID"'
apiVersion: v1
kind: Pod
metadata: {name: cluster-sh-ready-probe, namespace: default, labels: {tpu-webhook/inject: enabled}}
spec:
  nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice, cloud.google.com/gke-tpu-topology: 2x2}
  containers:
  - name: c
    image: none
    resources: {limits: {google.com/tpu: "4"}}
EOF
}

install_webhook() {
  WH_PORT=$(cluster_free_port)
  mkdir -p "$D/webhook"
  echo "$WH_PORT" >"$D/webhook/port"
  echo "$replicas" >"$D/webhook/replicas"
  cluster_kubectl create namespace "$WH_NAMESPACE" >/dev/null
  case $install in
  helm) install_helm ;;
  kustomize) install_kustomize ;;
  esac
  local i a
  WH_ADDRS=()
  if ((!routing)); then
    # The API server reaches an ExternalName Service at externalName:<the
    # webhook's clientConfig port>: this process on 127.0.0.1.
    WH_ADDRS=(127.0.0.1)
    cluster_kubectl patch service "$WH_SERVICE" -n "$WH_NAMESPACE" --type merge \
      -p '{"spec":{"type":"ExternalName","externalName":"127.0.0.1","selector":null,"ports":null}}' >/dev/null ||
      cluster_die "patching Service $WH_NAMESPACE/$WH_SERVICE to ExternalName 127.0.0.1"
  else
    # The chart's ClusterIP Service as installed; its EndpointSlice lists
    # one address per replica, as the EndpointSlice controller would list
    # the pods (none runs: no kubelet). The API server picks one at random
    # for each connection it opens.
    for ((i = 0; i < replicas; i++)); do
      a=$(cluster_address)
      WH_ADDRS+=("$a")
    done
    cluster_endpoints "$WH_NAMESPACE" "$WH_SERVICE" "$WH_PORT" "${WH_ADDRS[@]}"
  fi
  printf '%s\n' "${WH_ADDRS[@]}" >"$D/webhook/addresses"
  # Serving certificate for the Service's DNS name, the caBundle and the
  # Secret, as an operator without cert-manager does.
  cluster_cert "$D/webhook" "$WH_SERVICE.$WH_NAMESPACE.svc" "$WH_SERVICE.$WH_NAMESPACE.svc" "${WH_ADDRS[@]}"
  KUBECTL=$CLUSTER_BIN/kubectl bash "$repo/certs/install-without-cert-manager.sh" --cert-dir "$D/webhook" \
    --workloads --namespace "$WH_NAMESPACE" --service "$WH_SERVICE" >"$D/logs/install-certs.log" 2>&1 ||
    {
      cat "$D/logs/install-certs.log" >&2
      cluster_die "certs/install-without-cert-manager.sh (output above)"
    }
  # The chart's ServiceAccount token: the chart's RBAC is what the webhook has.
  local token
  token=$(cluster_kubectl create token "$WH_SERVICE" -n "$WH_NAMESPACE" --duration 48h) ||
    cluster_die "kubectl create token $WH_SERVICE -n $WH_NAMESPACE (does the install have its ServiceAccount?)"
  kubeconfig "$D/webhook/kubeconfig" "token: $token"
  for ((i = 0; i < replicas; i++)); do
    webhook_cmd "$i" >"$D/webhook/run-$i.sh"
  done
  webhook_start
  if [ "$client_cert" = missing ]; then
    cluster_log "no wait for a mutated pod: the API server has no client certificate (--webhook-client-cert missing)"
  else
    cluster_wait 120 "the webhook configuration active (a dry-run TPU pod mutated)" tpu-webhook-0 webhook_active
  fi
  cluster_log "tpu-webhook ($install, $replicas replica(s)) serving on ${WH_ADDRS[*]} port $WH_PORT"
}

write_env() {
  cat >"$D/env" <<EOF
# Source this file: the test cluster of scripts/cluster.sh.
export WH_CLUSTER_DIR=$D
export KUBECONFIG=$D/admin.kubeconfig
export CLUSTER_BIN=$CLUSTER_BIN
export PATH=$CLUSTER_BIN:\$PATH
export WH_APISERVER=https://127.0.0.1:$API_PORT
export WH_CLUSTER_CA=$D/pki/cluster-ca.crt
export WH_WEBHOOK_CA=$D/pki/webhook-ca.crt
export WH_WEBHOOK_CA_KEY=$D/pki/webhook-ca.key
export WH_WEBHOOK_BINARY=$WH_BIN
export WH_WEBHOOK_PORT=$WH_PORT
export WH_WEBHOOK_REPLICAS=$replicas
export WH_WEBHOOK_ADDRESSES="${WH_ADDRS[*]}"
export WH_ENDPOINT_ROUTING=$routing
export WH_WEBHOOK_INSTALL=$install
export WH_KUBERAY_INDEXING=$kuberay_indexing
export WH_CLUSTER_COMPONENTS="${components[*]}"
export WH_WEBHOOK_CLIENT_CERT=$client_cert
EOF
}

build() {
  local mods=(k8s) c
  for c in "${components[@]}"; do
    [ -d "$repo/tests/cluster/modules/$c" ] && mods+=("$c")
  done
  bash "$repo/tests/cluster/build.sh" "${mods[@]}" >&2 || cluster_die "tests/cluster/build.sh ${mods[*]}"
  for c in etcd kube-apiserver kube-controller-manager kubectl; do
    [ -x "$CLUSTER_BIN/$c" ] || cluster_die "no $CLUSTER_BIN/$c after tests/cluster/build.sh"
  done
  if [ -z "$WH_BIN" ]; then
    [ -f "$repo/build/CMakeCache.txt" ] || cmake -S "$repo" -B "$repo/build" >&2 ||
      cluster_die "cmake -S $repo -B $repo/build"
    cmake --build "$repo/build" -j "$(nproc)" --target tpu-webhook >&2 ||
      cluster_die "building tpu-webhook (cmake --build build --target tpu-webhook)"
    WH_BIN=$repo/build/tpu-webhook
  fi
  [ -x "$WH_BIN" ] || cluster_die "no tpu-webhook binary at $WH_BIN"
}

up() {
  local t0 c
  t0=$(date +%s)
  if [ -d "$D/pids" ]; then
    for c in "$D"/pids/*; do
      [ -e "$c" ] && cluster_alive "$(basename "$c")" &&
        cluster_die "a cluster is up in $D already (bash scripts/cluster.sh down first)"
    done
  fi
  rm -rf "$D"
  mkdir -p "$D/logs" "$D/pids"
  ((keep_logs)) && touch "$D/keep-logs"
  # From here on, a failure or a Ctrl-C stops what was started.
  trap 'rc=$?; trap - ERR INT TERM EXIT; cluster_log "up failed or interrupted: stopping"; touch "$D/keep-logs"; down; exit $((rc ? rc : 130))' ERR INT TERM
  trap 'rc=$?; if ((rc)); then trap - EXIT; touch "$D/keep-logs"; down; fi' EXIT
  for c in "${components[@]}"; do
    [ -f "$repo/tests/cluster/lib/$c.sh" ] ||
      cluster_die "component $c: no tests/cluster/lib/$c.sh (--components \"\" starts none)"
  done
  build
  local tb=$(($(date +%s) - t0))
  pki
  start_control_plane
  create_nodes
  WH_PORT="" WH_ADDRS=()
  if [ "$install" = none ]; then
    cluster_log "no webhook installed (--install none)"
  else
    install_webhook
  fi
  printf '%s\n' "${components[@]}" >"$D/components"
  export WH_KUBERAY_INDEXING=$kuberay_indexing WH_WEBHOOK_REPLICAS=$replicas WH_WEBHOOK_INSTALL=$install \
    WH_ENDPOINT_ROUTING=$routing
  for c in "${components[@]}"; do
    # shellcheck source=/dev/null
    . "$repo/tests/cluster/lib/$c.sh"
    declare -F "${c}_up" >/dev/null || cluster_die "component $c: tests/cluster/lib/$c.sh defines no ${c}_up"
    "${c}_up" || cluster_die "component $c: ${c}_up failed"
    cluster_log "component $c up"
  done
  write_env
  trap - ERR INT TERM EXIT
  cluster_log "up in $(($(date +%s) - t0)) s (build $tb s); source $D/env, or:"
  echo "$D/admin.kubeconfig"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
up)
  components=(kuberay jobset lws) install=helm replicas=1 kuberay_indexing=on WH_BIN=${WH_BINARY:-} keep_logs=0
  routing="" client_cert=off
  while [ $# -gt 0 ]; do
    case $1 in
    --components)
      [ $# -ge 2 ] || cluster_die "--components needs a list"
      read -r -a components <<<"${2//,/ }"
      shift 2
      ;;
    --install)
      case ${2:-} in helm | kustomize | none) install=$2 ;; *) cluster_die "--install helm|kustomize|none, not '${2:-}'" ;; esac
      shift 2
      ;;
    --replicas)
      [[ ${2:-} =~ ^[1-9]$ ]] || cluster_die "--replicas takes 1 to 9, not '${2:-}'"
      replicas=$2
      shift 2
      ;;
    --kuberay-indexing)
      case ${2:-} in on | off) kuberay_indexing=$2 ;; *) cluster_die "--kuberay-indexing on|off, not '${2:-}'" ;; esac
      shift 2
      ;;
    --webhook)
      [ -n "${2:-}" ] || cluster_die "--webhook needs a path"
      WH_BIN=$2
      shift 2
      ;;
    --keep-logs)
      keep_logs=1
      shift
      ;;
    --webhook-client-cert)
      case ${2:-} in on | missing) client_cert=$2 ;; *) cluster_die "--webhook-client-cert on|missing, not '${2:-}'" ;; esac
      shift 2
      ;;
    --endpoint-routing)
      routing=1
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) cluster_die "up: unknown option '$1' (bash scripts/cluster.sh --help)" ;;
    esac
  done
  [ -n "$routing" ] || routing=$((replicas > 1))
  up
  ;;
down) down "$@" ;;
status) status ;;
webhook)
  [ -f "$D/env" ] || cluster_die "no cluster is up in $D"
  [ -f "$D/webhook/addresses" ] || cluster_die "the cluster in $D has no webhook of cluster.sh (up --install none)"
  # shellcheck source=/dev/null
  . "$D/env"
  case ${1:-} in
  start) webhook_start ;;
  stop) webhook_stop ;;
  restart)
    webhook_stop
    webhook_start
    ;;
  *) cluster_die "webhook start|stop|restart, not '${1:-}'" ;;
  esac
  ;;
-h | --help | help) usage ;;
*)
  usage >&2
  exit 2
  ;;
esac
