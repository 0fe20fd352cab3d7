#!/usr/bin/env bash
# peak_rss.sh: the server's memory under concurrent worst-case reviews.
#
#   bench/peak_rss.sh [TPU_WEBHOOK [CONCURRENT]]
#
# Starts `tpu-webhook serve --standalone` with its default limits and sends
# CONCURRENT (default 16) reviews at once of each worst case, then both
# kinds together:
#   ints:   a 3 MB pod review with 1.5 million integers in a container's args
#           (a large parsed tree for a small body),
#   tpu7x:  a 1.9 KB native-index pod review of TPU7x 16x32x64 with 8
#           containers of 1 chip (an answer of tens of MB),
# and prints the answers' status codes, the server's peak RSS (VmHWM) and
# its RSS right after each burst and after 2 s idle (memory returned). The
# shipped manifests limit the container to 256 Mi. A benchmark: it prints
# figures and fails only when the server does not start or dies.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/tpu-webhook}
n=${2:-16}
[[ -x $bin ]] || { echo "peak_rss: no executable $bin (build first)" >&2; exit 2; }
work=$(mktemp -d)
pid=''
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$bin" certs --dir "$work/tls" >/dev/null
python3 - "$root/tests/fixtures/reviews/tpu7x-2x2x2-two-containers.json" "$work" <<'EOF'
import copy, json, sys
base = json.load(open(sys.argv[1]))
out = sys.argv[2]
ints = copy.deepcopy(base)
c = ints["request"]["object"]["spec"]["containers"]
c[0]["args"] = list(range(1, 10)) * 166_667  # 1.5M small integers, ~3 MB
json.dump(ints, open(f"{out}/ints.json", "w"), separators=(",", ":"))
big = copy.deepcopy(base)
spec = big["request"]["object"]["spec"]
spec["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "16x32x64"
one = spec["containers"][0]
spec["containers"] = []
for i in range(8):
    k = copy.deepcopy(one)
    k["name"] = f"ray-worker-{i}"
    for part in ("limits", "requests"):
        k["resources"][part]["google.com/tpu"] = "1"
    spec["containers"].append(k)
json.dump(big, open(f"{out}/tpu7x.json", "w"), separators=(",", ":"))
EOF

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --standalone --bind-address "127.0.0.1:$port" \
  --tls-cert-file "$work/tls/tls.crt" --tls-private-key-file "$work/tls/tls.key" 2>"$work/log" &
pid=$!
for _ in $(seq 50); do
  curl -sS --fail --cacert "$work/tls/ca.crt" "https://127.0.0.1:$port/healthz" -o /dev/null 2>/dev/null && break
  sleep 0.1
done

kb() { awk -v k="$1:" '$1 == k {print $2}' /proc/"$pid"/status; }
burst() { # label kinds...
  local label=$1; shift
  local i=0 k pids=()
  for k in "$@"; do
    for _ in $(seq "$n"); do
      curl -sS --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' \
        --data-binary @"$work/$k.json" -o "$work/ans.$i" -w '%{http_code}\n' \
        "https://127.0.0.1:$port/mutate" >"$work/code.$i" 2>/dev/null &
      pids+=($!)
      i=$((i + 1))
    done
  done
  wait "${pids[@]}" || true
  kill -0 "$pid" 2>/dev/null || { echo "peak_rss: the server died" >&2; tail -5 "$work/log" >&2; exit 1; }
  local codes after idle
  codes=$(cat "$work"/code.* | sort | uniq -c | awk '{printf "%s x%s ", $2, $1}')
  after=$(kb VmRSS)
  sleep 2
  idle=$(kb VmRSS)
  printf '%-14s %-22s peak %7s KiB  after %7s KiB  idle 2 s %7s KiB\n' "$label" "$codes" \
    "$(kb VmHWM)" "$after" "$idle"
  rm -f "$work"/code.* "$work"/ans.*
}

printf 'peak_rss: %d concurrent reviews per kind; ints %s bytes, tpu7x %s bytes; start RSS %s KiB\n' \
  "$n" "$(stat -c %s "$work/ints.json")" "$(stat -c %s "$work/tpu7x.json")" "$(kb VmRSS)"
burst ints ints
burst tpu7x tpu7x
burst "ints+tpu7x" ints tpu7x
echo "one answer of each kind:"
for k in ints tpu7x; do
  curl -sS --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' \
    --data-binary @"$work/$k.json" "https://127.0.0.1:$port/mutate" | cut -c1-300
  echo
done
