#!/usr/bin/env bash
# Installs every Debian 12 package the build, the tests and the benchmarks
# need. Idempotent; run as root. Skips apt entirely when all are present.
set -euo pipefail
pkgs=(
  build-essential cmake pkg-config clang
  libmicrohttpd-dev libgnutls28-dev libssl-dev libcjson-dev libyaml-dev
  libcurl4-openssl-dev libcmocka-dev
  valgrind curl openssl ca-certificates python3 python3-yaml python3-jsonpatch
  shellcheck python3-kubernetes
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
# needs kubectl 1.21 or later (kustomize v4+). Debian's is kubernetes-client
# (1.20: the deploy tests then fail, saying so), which must not be installed
# over another package's kubectl.
command -v kubectl >/dev/null || missing+=(kubernetes-client)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
