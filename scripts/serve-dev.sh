#!/usr/bin/env bash
# Installs what building and serving need (scripts/setup.sh build: Debian
# packages only, no npm, no other network), builds, writes development
# certificates under certs/dev/ (kept between runs; gitignored) and serves
# the webhook on https://127.0.0.1:8443 in standalone mode (no Kubernetes
# API), printing a curl line that posts a bundled sample review. Ctrl-C
# stops it. Extra arguments go to `serve`; WH_DEV_ADDRESS (host:port) moves
# the listen address (tests/ops/test_readme.py serves on a free port).
set -Eeuo pipefail
cd "$(dirname "$0")/.."
trap 'echo "serve-dev: FAILED (exit $?): $BASH_COMMAND; see the output above." \
  "Packages missing: bash scripts/setup.sh build (as root); a stale build/: rm -rf build and rerun" >&2' ERR
addr=${WH_DEV_ADDRESS:-127.0.0.1:8443}
bash scripts/setup.sh build
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" --target tpu-webhook
./build/tpu-webhook certs --dir certs/dev >/dev/null
sample=tests/server/data/review-pod.json
post="curl -s --cacert certs/dev/ca.crt -H 'Content-Type: application/json' --data-binary @$sample https://$addr/mutate"
# The decode line needs only sed and base64 (Debian's essential sed and
# coreutils) besides the curl setup.sh installed: no python3, no jq.
cat <<MSG
== tpu-webhook serving on https://$addr (standalone); in another shell:

$post

   the JSON patch of the answer, decoded:
$post | sed -n 's/.*"patch":"\([^"]*\)".*/\1/p' | base64 -d; echo
   metrics: curl -s --cacert certs/dev/ca.crt https://$addr/metrics
MSG
exec ./build/tpu-webhook serve --bind-address="$addr" \
  --tls-cert-file=certs/dev/tls.crt --tls-private-key-file=certs/dev/tls.key \
  --standalone --v=1 "$@"
