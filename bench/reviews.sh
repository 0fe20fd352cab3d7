# shellcheck shell=bash
# reviews.sh: the reviews the HTTPS benchmarks send, and wrk scripts that
# POST them. Sourced by bench/tls_vs_nginx.sh and bench/callgrind_mutate.sh.
#
#   bench_reviews ROOT DIR   writes DIR/native.json (the 1.6 KB native-index
#                            v6e review of tests/fixtures/reviews) and
#                            DIR/tpu7x-256.json (the TPU7x two-container
#                            review at 8x8x16: 1,024 chips, 4 per host, 256
#                            hosts; the last one), and DIR/<case>.lua for
#                            each: a wrk script that POSTs it.

bench_reviews() {
  local root=$1 dir=$2 c
  cp "$root/tests/fixtures/reviews/v6e-16-native-host1.json" "$dir/native.json"
  sed -e 's/"2x2x2"/"8x8x16"/' \
    -e 's/"ray.io\/replica-host-index": "1"/"ray.io\/replica-host-index": "255"/' \
    "$root/tests/fixtures/reviews/tpu7x-2x2x2-two-containers.json" >"$dir/tpu7x-256.json"
  for c in native tpu7x-256; do
    cat >"$dir/$c.lua" <<EOL
local f = io.open("$dir/$c.json", "rb")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
EOL
  done
}
