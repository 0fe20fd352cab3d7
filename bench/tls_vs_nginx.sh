#!/usr/bin/env bash
# tls_vs_nginx.sh: tpu-webhook's /mutate against nginx under the same wrk load.
#
#   bench/tls_vs_nginx.sh [TPU_WEBHOOK [ROUNDS [SECONDS]]]
#
# Both servers listen on 127.0.0.1 with the same certificate (made by
# `tpu-webhook certs`) and the same TLS versions; nginx serves, to the same
# POST, a file of exactly the size of the webhook's answer. For each review
# (the 1.6 KB native-index v6e pod of tests/fixtures/reviews, and the same
# TPU7x two-container pod at 256 hosts) every round runs wrk against one
# server then the other, alternating which goes first; the ratios of each
# round and their medians are printed (webhook / nginx: req/s higher is
# better, latency and CPU time per request lower is better), then the
# webhook's peak RSS (VmHWM) over the whole run. CPU time per request (user
# + system of the server's processes, from /proc) is the figure that the
# machine's other load disturbs least; wrk shares the same cores. Needs
# wrk and nginx (Debian wrk, nginx-light; see scripts/setup.sh). A
# benchmark: it prints figures and fails only when a server cannot be
# started or answers anything but 200.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/tpu-webhook}
rounds=${2:-3}
secs=${3:-10}
threads=2
conns=32

for tool in wrk nginx curl python3; do
  command -v "$tool" >/dev/null || { echo "tls_vs_nginx: $tool is missing (bash scripts/setup.sh)" >&2; exit 2; }
done
[[ -x $bin ]] || { echo "tls_vs_nginx: no executable $bin (build first)" >&2; exit 2; }

work=$(mktemp -d)
chmod 755 "$work" # nginx started as root serves as an unprivileged user
wh_pid='' ng_pid=''
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  [[ -n $wh_pid ]] && kill "$wh_pid" 2>/dev/null && wait "$wh_pid" 2>/dev/null
  [[ -n $ng_pid ]] && kill "$ng_pid" 2>/dev/null && wait "$ng_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

"$bin" certs --dir "$work/tls" >/dev/null
# shellcheck source=bench/reviews.sh
. "$root/bench/reviews.sh"
bench_reviews "$root" "$work" # native.json, tpu7x-256.json and their .lua

wh_port=$(free_port)
"$bin" serve --standalone --bind-address "127.0.0.1:$wh_port" \
  --tls-cert-file "$work/tls/tls.crt" --tls-private-key-file "$work/tls/tls.key" \
  2>"$work/webhook.log" &
wh_pid=$!

answer() { # case -> the webhook's answer, saved for nginx
  curl -sS --fail --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' \
    --data-binary @"$work/$1.json" "https://127.0.0.1:$wh_port/mutate" -o "$work/www/$1"
}
mkdir -p "$work/www"
for _ in $(seq 50); do answer native 2>/dev/null && break; sleep 0.1; done
answer native
answer tpu7x-256
chmod -R a+rX "$work/www"

ng_port=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes $threads;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
daemon off;
events { worker_connections 1024; }
http {
  access_log off;
  default_type application/json;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$ng_port ssl;
    ssl_certificate $work/tls/tls.crt;
    ssl_certificate_key $work/tls/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    root $work/www;
    # The static module refuses POST; answer it with the file, as for GET.
    error_page 405 =200 \$uri;
  }
}
EOF
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" 2>"$work/nginx/start.log" &
ng_pid=$!
for _ in $(seq 50); do
  curl -sS --fail --cacert "$work/tls/ca.crt" -X POST --data-binary @"$work/native.json" \
    "https://127.0.0.1:$ng_port/native" -o /dev/null 2>/dev/null && break
  sleep 0.1
done
cmp -s <(curl -sS --cacert "$work/tls/ca.crt" -X POST --data-binary @"$work/native.json" \
  "https://127.0.0.1:$ng_port/native") "$work/www/native" ||
  { echo "tls_vs_nginx: nginx did not serve the answer file" >&2; cat "$work/nginx/start.log" >&2; exit 1; }

# CPU time (user + system, in clock ticks) of a process: all its threads,
# those that ended included. utime and stime are fields 14 and 15 of
# /proc/PID/stat; the command (field 2) has no space here.
ticks() {
  local f
  read -r -a f <"/proc/$1/stat"
  echo $((f[13] + f[14]))
}
server_ticks() { # server -> ticks of all its processes
  local p t=0
  if [[ $1 == webhook ]]; then ticks "$wh_pid"; return; fi
  for p in "$ng_pid" $(pgrep -P "$ng_pid"); do t=$((t + $(ticks "$p"))); done
  echo "$t"
}

# wrk output -> "req/s p50_us p99_us cpu_us_per_request non2xx"
run() { # server case
  local port=$wh_port path=/mutate t0 t1
  if [[ $1 == nginx ]]; then port=$ng_port path=/$2; fi
  t0=$(server_ticks "$1")
  wrk -t"$threads" -c"$conns" -d"${secs}s" --latency -s "$work/$2.lua" \
    "https://127.0.0.1:$port$path" >"$work/out" 2>&1
  t1=$(server_ticks "$1")
  python3 - "$work/out" "$((t1 - t0))" "$(getconf CLK_TCK)" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
def us(v, unit):
    return float(v) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
n = int(re.search(r"(\d+) requests in", t).group(1))
cpu = int(sys.argv[2]) * 1e6 / int(sys.argv[3]) / max(n, 1)
lat = {p: us(v, u) for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", t, re.M)}
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
errs = re.search(r"Socket errors: (.*)", t)
print(f"{rps:.0f} {lat['50']:.0f} {lat['99']:.0f} {cpu:.1f} {int(bad.group(1)) if bad else 0} "
      f"{'errors:' + errs.group(1).replace(' ', '') if errs else ''}")
EOF
}

printf 'tls_vs_nginx: wrk -t%d -c%d -d%ds over TLS on 127.0.0.1, %d rounds, servers alternated\n' \
  "$threads" "$conns" "$secs" "$rounds"
printf 'answers: native %s bytes, tpu7x-256 %s bytes (nginx serves files of the same size)\n' \
  "$(stat -c %s "$work/www/native")" "$(stat -c %s "$work/www/tpu7x-256")"
printf '%-10s %-5s %-8s %10s %9s %9s %11s   %s\n' case round server req/s p50_us p99_us cpu_us/req notes
status=0
: >"$work/ratios"
for c in native tpu7x-256; do
  for r in $(seq "$rounds"); do
    order=(webhook nginx)
    ((r % 2)) || order=(nginx webhook)
    declare -A got=()
    for srv in "${order[@]}"; do
      read -r rps p50 p99 cpu bad notes < <(run "$srv" "$c")
      got[$srv]="$rps $p50 $p99 $cpu"
      printf '%-10s %-5s %-8s %10s %9s %9s %11s   %s\n' "$c" "$r" "$srv" "$rps" "$p50" "$p99" "$cpu" \
        "${notes}$([[ $bad != 0 ]] && echo " non-2xx:$bad")"
      [[ $bad == 0 ]] || status=1
    done
    echo "$c ${got[webhook]} ${got[nginx]}" >>"$work/ratios"
    unset got
  done
done

python3 - "$work/ratios" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    c, *v = line.split()
    w_rps, w50, w99, w_cpu, n_rps, n50, n99, n_cpu = map(float, v)
    rows.setdefault(c, []).append((w_rps / n_rps, w50 / n50, w99 / n99, w_cpu / max(n_cpu, 0.1)))
print("\nratios webhook/nginx per round, then the median (bar: req/s >= 0.90, p99 <= 1.20;")
print("cpu: the server's CPU time per request, which the machine's load disturbs least)")
for c, rs in rows.items():
    for i, (a, b, d, e) in enumerate(rs, 1):
        print(f"  {c:<10} round {i}: req/s {a:.2f}x  p50 {b:.2f}x  p99 {d:.2f}x  cpu {e:.2f}x")
    med = [statistics.median(x[k] for x in rs) for k in range(4)]
    print(f"  {c:<10} median : req/s {med[0]:.2f}x  p50 {med[1]:.2f}x  p99 {med[2]:.2f}x  cpu {med[3]:.2f}x")
EOF
printf 'webhook peak RSS (VmHWM): %s\n' "$(awk '/VmHWM/ {print $2, $3}' /proc/"$wh_pid"/status)"
exit $status
