#!/usr/bin/env bash
# Builds, writes development certificates under certs/dev/ (kept between
# runs; gitignored) and serves the webhook on https://127.0.0.1:8443 in
# standalone mode (no Kubernetes API), printing a curl line that posts a
# bundled sample review. Ctrl-C stops it. Extra arguments go to `serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" --target tpu-webhook
./build/tpu-webhook certs --dir certs/dev >/dev/null
sample=tests/server/data/review-pod.json
cat <<MSG
== tpu-webhook serving on https://127.0.0.1:8443 (standalone); in another shell:

curl -s --cacert certs/dev/ca.crt -H 'Content-Type: application/json' --data-binary @$sample https://127.0.0.1:8443/mutate

   (or: ... | python3 -c 'import json,sys,base64; print(base64.b64decode(json.load(sys.stdin)["response"]["patch"]).decode())')
   metrics: curl -s --cacert certs/dev/ca.crt https://127.0.0.1:8443/metrics
MSG
exec ./build/tpu-webhook serve --bind-address=127.0.0.1:8443 \
  --tls-cert-file=certs/dev/tls.crt --tls-private-key-file=certs/dev/tls.key \
  --standalone --v=1 "$@"
