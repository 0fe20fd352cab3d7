# shellcheck shell=bash
# Helpers of scripts/cluster.sh and of every component script
# (tests/cluster/lib/<component>.sh); sourced, never run. docs/cluster.md,
# "Writing a component", lists them with their contracts. They need
# WH_CLUSTER_DIR (the cluster's state: logs/, pids/, pki/, env) to be set.
#
#   cluster_log MSG...              one progress line on stderr
#   cluster_die MSG...              a failure line on stderr, then exit 1
#   cluster_free_port               a TCP port free on 127.0.0.1 now
#   cluster_spawn NAME CMD...       CMD in the background, in its own session,
#                                   output in logs/NAME.log, pid in pids/NAME
#   cluster_alive NAME              true while NAME runs
#   cluster_stop NAME               SIGTERM, then SIGKILL after 15 s; forgets it
#   cluster_wait SECS WHAT NAME CMD...
#                                   runs CMD until it succeeds; after SECS (or
#                                   as soon as process NAME has exited) fails
#                                   naming WHAT and logs/NAME.log
#   cluster_cert DIR CN DNS...      DIR/tls.crt, DIR/tls.key (and DIR/ca.crt)
#                                   for the DNS names (an IP is an IP SAN),
#                                   signed by the webhook CA (pki/webhook-ca.*)
#   cluster_kubectl ARGS...         the cluster's kubectl as admin
#   cluster_address                 a new address for a listener the API
#                                   server reaches through an EndpointSlice
#                                   (10.213.B.N/32 on lo; needs root)
#   cluster_addresses_release       removes every address cluster_address added
#   cluster_endpoints NS SVC PORT ADDR...
#                                   the EndpointSlice of Service NS/SVC (port
#                                   "https"): ADDR:PORT each, ready

cluster_log() { echo "cluster: $*" >&2; }

cluster_die() {
  echo "cluster: FAILED: $*" >&2
  exit 1
}

cluster_free_port() {
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# The order of cluster_spawn calls is kept in pids/.order: down stops the
# processes in reverse (the webhook and operators before the API server,
# the API server before etcd).
cluster_spawn() { # cluster_spawn NAME CMD...
  local name=$1
  shift
  [ -n "${WH_CLUSTER_DIR:-}" ] || cluster_die "cluster_spawn $name: WH_CLUSTER_DIR is not set"
  mkdir -p "$WH_CLUSTER_DIR/logs" "$WH_CLUSTER_DIR/pids"
  if cluster_alive "$name"; then
    cluster_die "cluster_spawn $name: already running (pid $(cat "$WH_CLUSTER_DIR/pids/$name"))"
  fi
  command -v "$1" >/dev/null || cluster_die "cluster_spawn $name: no program $1"
  # Its own session: a Ctrl-C at the terminal reaches cluster.sh, whose trap
  # stops everything in order, and not each process at once.
  setsid "$@" </dev/null >>"$WH_CLUSTER_DIR/logs/$name.log" 2>&1 &
  echo $! >"$WH_CLUSTER_DIR/pids/$name"
  grep -qx "$name" "$WH_CLUSTER_DIR/pids/.order" 2>/dev/null ||
    echo "$name" >>"$WH_CLUSTER_DIR/pids/.order"
}

cluster_alive() { # cluster_alive NAME
  local f=$WH_CLUSTER_DIR/pids/$1 pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

cluster_stop() { # cluster_stop NAME
  local f=$WH_CLUSTER_DIR/pids/$1 pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -CONT "$pid" 2>/dev/null || true # a stopped process (SIGSTOP) ignores SIGTERM
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      cluster_log "$1 (pid $pid) ignored SIGTERM for 15 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$f"
}

cluster_wait() { # cluster_wait SECS WHAT NAME CMD...
  local secs=$1 what=$2 name=$3 end
  shift 3
  end=$(($(date +%s) + secs))
  until "$@" >/dev/null 2>&1; do
    if [ -n "$name" ] && [ -f "$WH_CLUSTER_DIR/pids/$name" ] && ! cluster_alive "$name"; then
      tail -n 20 "$WH_CLUSTER_DIR/logs/$name.log" >&2 2>/dev/null || true
      cluster_die "$what: $name exited; read $WH_CLUSTER_DIR/logs/$name.log (last lines above)"
    fi
    if (($(date +%s) >= end)); then
      [ -z "$name" ] || tail -n 20 "$WH_CLUSTER_DIR/logs/$name.log" >&2 2>/dev/null || true
      cluster_die "$what: not after $secs s${name:+; read $WH_CLUSTER_DIR/logs/$name.log (last lines above)}"
    fi
    sleep 0.5
  done
}

cluster_cert() { # cluster_cert DIR CN DNS...
  local dir=$1 cn=$2 san="" n ca=$WH_CLUSTER_DIR/pki/webhook-ca
  shift 2
  [ -f "$ca.key" ] || cluster_die "cluster_cert: no webhook CA at $ca.crt (cluster.sh up makes it)"
  for n in "$@"; do
    if [[ $n =~ ^[0-9.]+$ ]]; then san+=",IP:$n"; else san+=",DNS:$n"; fi
  done
  mkdir -p "$dir"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$dir/tls.key.new" -subj "/CN=$cn" \
    -out "$dir/tls.csr" 2>/dev/null || cluster_die "cluster_cert: openssl req for $cn failed"
  # A fresh random serial each time: a renewal is told apart by it.
  openssl x509 -req -in "$dir/tls.csr" -CA "$ca.crt" -CAkey "$ca.key" -set_serial "0x$(openssl rand -hex 16)" \
    -days 30 -sha256 -out "$dir/tls.crt.new" \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' "${san#,}") \
    2>/dev/null || cluster_die "cluster_cert: openssl x509 for $cn failed"
  rm -f "$dir/tls.csr"
  cp "$ca.crt" "$dir/ca.crt"
  # The key first, then the certificate, each replaced whole: a server that
  # watches the pair never reads half a file.
  mv -f "$dir/tls.key.new" "$dir/tls.key"
  mv -f "$dir/tls.crt.new" "$dir/tls.crt"
}

cluster_kubectl() {
  "$CLUSTER_BIN/kubectl" --kubeconfig "$WH_CLUSTER_DIR/admin.kubeconfig" "$@"
}

# With --enable-aggregator-routing (cluster.sh up --replicas N, N > 1) the
# API server dials a webhook Service through its EndpointSlices, picking a
# ready endpoint at random for each new connection; it refuses ExternalName
# Services there, and EndpointSlice validation refuses loopback addresses
# (127.0.0.0/8). So each such listener gets an address of its own on the
# loopback interface, outside every range the cluster uses: 10.213.B.N/32,
# B free on this machine when the first is taken (clusters of other
# worktrees use other Bs), N counting up. addresses lists them for down.
cluster_address() {
  local f=$WH_CLUSTER_DIR/addresses a b n
  if [ -s "$f" ]; then
    a=$(tail -n 1 "$f")
    b=${a%.*}
    n=$((${a##*.} + 1))
  else
    for b in $(shuf -i 0-255); do
      ip -o -4 addr show | grep -q " 10\.213\.$b\." || break
    done
    b=10.213.$b n=1
  fi
  a=$b.$n
  echo "$a" >>"$f"
  ip addr add "$a/32" dev lo >&2 ||
    cluster_die "ip addr add $a/32 dev lo failed: more than one webhook replica needs an address per replica, which needs root (CAP_NET_ADMIN); --replicas 1 needs none"
  echo "$a"
}

cluster_addresses_release() {
  local f=$WH_CLUSTER_DIR/addresses a
  [ -f "$f" ] || return 0
  while read -r a; do
    [ -z "$a" ] || ip addr del "$a/32" dev lo 2>/dev/null || true
  done <"$f"
  rm -f "$f"
}

cluster_endpoints() { # cluster_endpoints NS SVC PORT ADDR...
  local ns=$1 svc=$2 port=$3
  shift 3
  python3 - "$ns" "$svc" "$port" "$@" <<'PY' | cluster_kubectl apply --server-side --field-manager=cluster-sh -f - >/dev/null ||
import json, sys
ns, svc, port, addrs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
print(json.dumps({
    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
    "metadata": {"name": svc + "-cluster-sh", "namespace": ns,
                 "labels": {"kubernetes.io/service-name": svc,
                            "endpointslice.kubernetes.io/managed-by": "cluster-sh"}},
    "addressType": "IPv4",
    "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    "endpoints": [{"addresses": [a], "conditions": {"ready": True}} for a in addrs]}))
PY
    cluster_die "creating the EndpointSlice of Service $ns/$svc"
}
