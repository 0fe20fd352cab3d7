#!/usr/bin/env bash
# Quick start, first command: installs what is missing, builds, and runs the
# main job on a bundled sample: the review of a v6e-16 TPU worker pod, with
# the decoded JSON patch printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)"
sample=tests/fixtures/reviews/v6e-16-native-host1.json
echo "== tpu-webhook review $sample"
./build/tpu-webhook review "$sample" | /usr/bin/python3 -c '
import base64, json, sys
resp = json.load(sys.stdin)["response"]
patch = resp.pop("patch", None)
print(json.dumps(resp, indent=1))
if patch:
    print("decoded patch:")
    print(json.dumps(json.loads(base64.b64decode(patch)), indent=1))
'
