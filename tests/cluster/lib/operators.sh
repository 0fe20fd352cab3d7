# shellcheck shell=bash
# What the operator components (kuberay.sh, jobset.sh, lws.sh) share;
# sourced by them after common.sh, never run. Each operator runs out of
# cluster as a local process with the admin kubeconfig; its CRDs, webhook
# configurations and manifests come from its own Go module (the sources
# build.sh downloaded), never from a copy in this repository.
#
#   operator_module_dir COMPONENT MODULE
#                          the directory of Go module MODULE as
#                          tests/cluster/modules/COMPONENT requires it
#   operator_crds FILE...  creates the CRDs (server-side: they are too large
#                          for the last-applied annotation) and waits until
#                          each is Established
#   operator_webhooks COMPONENT KUSTOMIZE-DIR NAMESPACE SERVICE PORT HOST
#                          installs the upstream webhook configurations of
#                          KUSTOMIZE-DIR (kubectl kustomize) as a release
#                          does: names prefixed "COMPONENT-", every
#                          clientConfig pointed at SERVICE.NAMESPACE:PORT with
#                          the webhook CA as caBundle, and SERVICE an
#                          ExternalName Service for HOST 127.0.0.1 (kwok's
#                          recipe: the API server dials 127.0.0.1:PORT), or,
#                          when the API server routes by endpoints
#                          (WH_ENDPOINT_ROUTING=1), a ClusterIP Service whose
#                          EndpointSlice lists HOST
#   operator_serving_cert DIR NAMESPACE SERVICE HOST
#                          DIR/tls.crt and tls.key for SERVICE.NAMESPACE.svc
#                          (and HOST), signed by the webhook CA
#   operator_health NAME PORT
#                          waits for NAME's /readyz on 127.0.0.1:PORT
#   operator_controller COMPONENT BINARY CONFIG-APIVERSION NAMESPACE SERVICE
#                       KUSTOMIZE-DIR
#                          a kubebuilder controller with its own admission
#                          webhooks (JobSet, LWS): its namespace, a serving
#                          certificate, its webhook configurations, then
#                          BINARY --config with internal certificate
#                          management, leader election and metrics off, the
#                          webhook and health probe on free loopback ports;
#                          returns once the webhook answers TLS

operator_module_dir() { # operator_module_dir COMPONENT MODULE
  local dir
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../modules/$1" &&
    PATH=/usr/local/go/bin:$PATH GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' "$2" 2>&1) ||
    cluster_die "$1: go list -m $2 in tests/cluster/modules/$1: $dir"
  [ -d "$dir" ] || cluster_die "$1: no sources of $2 at '$dir' (bash tests/cluster/build.sh $1 downloads them)"
  echo "$dir"
}

operator_crds() { # operator_crds FILE...
  local f names
  for f in "$@"; do
    [ -f "$f" ] || cluster_die "no CRD file $f"
    cluster_kubectl apply --server-side --field-manager=cluster-sh -f "$f" >/dev/null ||
      cluster_die "creating the CRDs of $f"
    names+=" crd/$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["metadata"]["name"])' "$f")"
  done
  # shellcheck disable=SC2086
  cluster_kubectl wait --for condition=Established --timeout 120s $names >/dev/null ||
    cluster_die "CRDs not Established after 120 s:$names"
}

operator_serving_cert() { # operator_serving_cert DIR NAMESPACE SERVICE HOST
  cluster_cert "$1" "$3.$2.svc" "$3.$2.svc" "$3.$2.svc.cluster.local" "$4"
}

operator_webhooks() { # operator_webhooks COMPONENT KUSTOMIZE-DIR NAMESPACE SERVICE PORT HOST
  local comp=$1 kdir=$2 ns=$3 svc=$4 port=$5 host=$6 out=$WH_CLUSTER_DIR/$1
  mkdir -p "$out"
  cluster_kubectl kustomize "$kdir" >"$out/webhooks.upstream.yaml" ||
    cluster_die "$comp: kubectl kustomize $kdir"
  python3 - "$out/webhooks.upstream.yaml" "$comp" "$ns" "$svc" "$port" \
    "$WH_CLUSTER_DIR/pki/webhook-ca.crt" "${WH_ENDPOINT_ROUTING:-0}" "$host" >"$out/webhooks.yaml" <<'PY' ||
import base64, sys, yaml
src, comp, ns, svc, port, ca, routing, host = sys.argv[1:]
bundle = base64.b64encode(open(ca, "rb").read()).decode()
spec = {"type": "ExternalName", "externalName": host}
if routing == "1":
    spec = {"type": "ClusterIP", "ports": [{"name": "https", "port": int(port), "protocol": "TCP"}]}
out = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc, "namespace": ns}, "spec": spec}]
for d in yaml.safe_load_all(open(src)):
    if not d or d["kind"] not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        continue
    d["metadata"]["name"] = comp + "-" + d["metadata"]["name"]
    for w in d["webhooks"]:
        cc = w["clientConfig"]
        cc["service"].update({"name": svc, "namespace": ns, "port": int(port)})
        cc["caBundle"] = bundle
    out.append(d)
if len(out) < 3:
    sys.exit("%s: no webhook configurations in %s" % (comp, src))
yaml.safe_dump_all(out, sys.stdout)
PY
    cluster_die "$comp: rewriting the webhook configurations of $kdir"
  cluster_kubectl apply --server-side --field-manager=cluster-sh -f "$out/webhooks.yaml" >/dev/null ||
    cluster_die "$comp: installing $out/webhooks.yaml"
  [ "${WH_ENDPOINT_ROUTING:-0}" != 1 ] || cluster_endpoints "$ns" "$svc" "$port" "$host"
}

operator_health() { # operator_health NAME PORT
  cluster_wait 120 "$1 /readyz" "$1" curl -fsS "http://127.0.0.1:$2/readyz"
}

operator_controller() { # operator_controller COMPONENT BINARY CONFIG-APIVERSION NAMESPACE SERVICE KUSTOMIZE-DIR
  local comp=$1 bin=$2 api=$3 ns=$4 svc=$5 kdir=$6 dir=$WH_CLUSTER_DIR/$1 port hport host=127.0.0.1
  [ -x "$bin" ] || cluster_die "$comp: no $bin (bash tests/cluster/build.sh $comp)"
  cluster_kubectl get namespace "$ns" >/dev/null 2>&1 || cluster_kubectl create namespace "$ns" >/dev/null ||
    cluster_die "$comp: creating namespace $ns"
  port=$(cluster_free_port)
  hport=$(cluster_free_port)
  [ "${WH_ENDPOINT_ROUTING:-0}" != 1 ] || host=$(cluster_address)
  operator_serving_cert "$dir/certs" "$ns" "$svc" "$host"
  cat >"$dir/config.yaml" <<EOF
apiVersion: $api
kind: Configuration
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
webhook: {host: $host, port: $port, certDir: $dir/certs}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "127.0.0.1:$hport"}
EOF
  operator_webhooks "$comp" "$kdir" "$ns" "$svc" "$port" "$host"
  cluster_spawn "$comp-controller" "$bin" --config "$dir/config.yaml" --kubeconfig "$WH_CLUSTER_DIR/admin.kubeconfig"
  operator_health "$comp-controller" "$hport"
  # Any HTTP answer over TLS for the Service's name: the webhook serves.
  cluster_wait 120 "$comp webhook on $host:$port" "$comp-controller" \
    curl -sS -o /dev/null --cacert "$WH_CLUSTER_DIR/pki/webhook-ca.crt" \
    --resolve "$svc.$ns.svc:$port:$host" "https://$svc.$ns.svc:$port/"
  cluster_log "$comp controller ready (webhook $host:$port)"
}
