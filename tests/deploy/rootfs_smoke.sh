#!/usr/bin/env bash
# Manual check of the Dockerfile's runtime stage without a Docker engine (not
# run by ctest: it needs root, debootstrap and Debian's mirror):
#   1. debootstrap a minimal Debian 12 (what debian:12-slim is) into a folder,
#   2. install exactly the runtime stage's packages (read from the Dockerfile)
#      and its user, copy the binary stripped as the build stage does,
#   3. start it as the Deployment runs it: uid 2007, no capabilities,
#      no_new_privs, its own network namespace with
#      net.ipv4.ip_unprivileged_port_start=443, certificate files mode 0440
#      group 2007, binding :443,
#   4. probe /healthz and /readyz and post a fixture review to /mutate over
#      HTTPS, verifying the certificate for kuberay-tpu-webhook.ray-system.svc.
#
#   tests/deploy/rootfs_smoke.sh build/tpu-webhook [ROOTFS_DIR]
# ROOTFS_DIR is reused when it already holds a system (default: a new
# temporary folder, removed at the end).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
binary=${1:?usage: $0 BINARY [ROOTFS_DIR]}
rootfs=${2:-}
((EUID == 0)) || { echo "rootfs_smoke: run as root (chroot, unshare)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "rootfs_smoke: apt-get install debootstrap" >&2; exit 2; }

work=$(mktemp -d)
made_rootfs=""
cleanup() {
    rm -rf "$work"
    if [[ -n $made_rootfs ]]; then rm -rf "$made_rootfs"; fi
}
trap cleanup EXIT
if [[ -z $rootfs ]]; then
    rootfs=$(mktemp -d)
    made_rootfs=$rootfs
fi

pkgs=$(cd "$here" && /usr/bin/python3 -c '
import test_image as t
ins = t.instructions(open(t.DOCKERFILE).read())
print(" ".join(t.apt_packages(ins, len([1 for _, w, _ in ins if w == "FROM"]) - 1)))')
echo "rootfs_smoke: runtime packages: $pkgs"

if [[ ! -x $rootfs/usr/bin/apt-get ]]; then
    debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" ||
        { tail "$work/debootstrap.log" >&2; exit 1; }
fi
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
# shellcheck disable=SC2086 # $pkgs is a list of package names
chroot "$rootfs" /bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends $pkgs >/dev/null 2>&1"
chroot "$rootfs" /bin/sh -c 'getent passwd 2007 >/dev/null || {
    groupadd --system --gid 2007 tpu-webhook &&
    useradd --system --uid 2007 --gid 2007 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin tpu-webhook; } 2>/dev/null'
strip --strip-debug -o "$rootfs/usr/local/bin/tpu-webhook" "$binary"

"$binary" certs --dir "$work/certs" >/dev/null
tls=$rootfs/etc/kuberay-tpu-webhook/tls
mkdir -p "$tls"
cp "$work/certs/tls.crt" "$work/certs/tls.key" "$tls/"
chown 0:2007 "$tls"/tls.*
chmod 0440 "$tls"/tls.*

cat >"$work/pod.sh" <<EOF
set -eu
ip link set lo up
sysctl -qw net.ipv4.ip_unprivileged_port_start=443
chroot "$rootfs" /usr/bin/setpriv --reuid=2007 --regid=2007 --clear-groups --no-new-privs \\
    --inh-caps=-all --bounding-set=-all /usr/local/bin/tpu-webhook serve --v=1 --bind-address=:443 \\
    --tls-cert-file=/etc/kuberay-tpu-webhook/tls/tls.crt \\
    --tls-private-key-file=/etc/kuberay-tpu-webhook/tls/tls.key --standalone >"$work/serve.log" 2>&1 &
server=\$!
url=https://kuberay-tpu-webhook.ray-system.svc
c() { curl -sS --max-time 5 --cacert "$work/certs/ca.crt" \\
        --resolve kuberay-tpu-webhook.ray-system.svc:443:127.0.0.1 "\$@"; }
for _ in 1 2 3 4 5 6 7 8 9 10; do c -o /dev/null "\$url/healthz" 2>/dev/null && break; sleep 0.3; done
rc=0
for p in /healthz /readyz; do
    code=\$(c -o /dev/null -w '%{http_code}' "\$url\$p") || code=000
    echo "GET \$p -> \$code"; [ "\$code" = 200 ] || rc=1
done
code=\$(c -o "$work/mutate.json" -w '%{http_code}' -H 'Content-Type: application/json' \\
    --data-binary @"$root/tests/fixtures/reviews/v6e-16-native-host1.json" "\$url/mutate") || code=000
echo "POST /mutate -> \$code"
grep -q '"allowed":true' "$work/mutate.json" || rc=1
[ "\$code" = 200 ] || rc=1
kill \$server; wait \$server || true
exit \$rc
EOF
if unshare -n bash "$work/pod.sh"; then
    echo "rootfs_smoke: PASS"
else
    echo "rootfs_smoke: FAIL; server log:" >&2
    cat "$work/serve.log" >&2
    exit 1
fi
