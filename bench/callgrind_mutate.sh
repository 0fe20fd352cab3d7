#!/usr/bin/env bash
# callgrind_mutate.sh: user-space instructions per /mutate request in the
# server, counted by callgrind (deterministic: the machine's load does not
# change them, unlike timings).
#
#   bench/callgrind_mutate.sh [TPU_WEBHOOK [CASE [SECONDS]]]
#
# CASE: native (the 1.6 KB native-index v6e review of tests/fixtures/reviews,
# the default) or tpu7x-256 (the TPU7x two-container review at 256 hosts, as
# bench/tls_vs_nginx.sh builds it). Starts `serve --standalone` under
# callgrind with instrumentation off, warms one kept-alive connection, then
# counts only while wrk sends requests on one connection for SECONDS (6).
# Prints the total per request and the inclusive counts of the main steps;
# the callgrind file stays in $OUT (a new temporary folder by default) for
# callgrind_annotate. valgrind does not emulate AVX-512: code dispatched on
# it (the base64 encoder) is counted in its AVX2 form. A benchmark: it
# prints figures and fails only when something cannot start.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/tpu-webhook}")
c=${2:-native}
secs=${3:-6}
for tool in valgrind callgrind_control callgrind_annotate wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "callgrind_mutate: $tool is missing (bash scripts/setup.sh)" >&2; exit 2; }
done
[[ $c == native || $c == tpu7x-256 ]] || { echo "callgrind_mutate: CASE is native or tpu7x-256" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d)}
"$bin" certs --dir "$OUT/tls" >/dev/null
# shellcheck source=bench/reviews.sh
. "$root/bench/reviews.sh"
bench_reviews "$root" "$OUT" # native.json, tpu7x-256.json and their .lua
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg.out" "$bin" serve --standalone \
  --bind-address "127.0.0.1:$port" --tls-cert-file "$OUT/tls/tls.crt" \
  --tls-private-key-file "$OUT/tls/tls.key" 2>"$OUT/valgrind.log" &
vg=$!
trap 'kill "$vg" 2>/dev/null || true' EXIT
for _ in $(seq 150); do
  curl -s -o /dev/null --cacert "$OUT/tls/ca.crt" "https://127.0.0.1:$port/mutate" -d @"$OUT/$c.json" && break
  sleep 0.2
done
wrk -t1 -c1 -d1s -s "$OUT/$c.lua" "https://127.0.0.1:$port/mutate" >/dev/null
callgrind_control -i on "$vg" >/dev/null 2>&1
n=$(wrk -t1 -c1 -d"${secs}s" -s "$OUT/$c.lua" "https://127.0.0.1:$port/mutate" | awk '/requests in/ {print $1}')
callgrind_control -i off "$vg" >/dev/null 2>&1
kill -INT "$vg"
wait "$vg" 2>/dev/null || true
trap - EXIT
total=$(callgrind_annotate "$OUT/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "callgrind_mutate: $c: $n requests, $((total / n)) instructions per request in the server (user space; $OUT/cg.out)"
callgrind_annotate --inclusive=yes "$OUT/cg.out" 2>/dev/null |
  grep -E ":(wh_srv_on_request|wh_engine_decide|wh_review_parse|wh_json_parse|wh_mutate_pod|wh_b64_encode|gnutls_record_send|gnutls_record_recv) \[|:__memset[a-z0-9_]* \[" |
  awk -v n="$n" '{gsub(",", "", $1); f = $0; sub(/^.*\?\?\?:/, "", f); sub(/^.*:__/, "__", f); sub(/ \[.*/, "", f); printf "  %9d  %s\n", $1 / n, f}'
