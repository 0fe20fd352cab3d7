#!/usr/bin/env bash
# build.sh [MODULE...]: builds the real control plane's binaries from their Go
# modules (tests/cluster/modules/<MODULE>/: go.mod, go.sum and targets; no
# upstream code is committed) into tests/cluster/bin/ (git-ignored). With no
# argument, every module. A module is rebuilt only when its go.mod, go.sum or
# targets change (bin/.<MODULE>.stamp holds their hash), so a warm run costs
# seconds. Each step prints its time; the figures go into docs/cluster.md.
#
# targets: one binary a line, "<output name> <Go package> [k8s-version]".
# k8s-version stamps the binary with the Kubernetes release it is built
# from, as Kubernetes' own release build does: k8s.io/kubernetes's for its
# own commands, else the release of the client-go it links: a
# plain `go build` reports v0.0.0-master, which Helm's kubeVersion check and
# `kubectl version` would see.
#
# Needs the Go that go.mod names (1.26, /usr/local/go on the project's
# machines) and the Go module proxy; says so and exits 1 when either lacks.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
export PATH=/usr/local/go/bin:$PATH
export GOFLAGS=-mod=readonly CGO_ENABLED=0

die() {
  echo "cluster/build: FAILED: $*" >&2
  exit 1
}

command -v go >/dev/null || die "no go on PATH or in /usr/local/go/bin; install Go 1.26 (scripts/setup.sh test says how)"

# The version a k8s-version target is stamped with: k8s.io/kubernetes's
# release for a package of k8s.io/kubernetes, else client-go's v0.X.Y as
# v1.X.Y. Not k8s.io/kubernetes whenever the module graph holds it: KubeRay
# pulls it in through scheduler-plugins (v1.31.8) and links client-go v0.34.
k8s_version() { # k8s_version MODDIR PACKAGE
  local v
  case $2 in
  k8s.io/kubernetes/*) v=$(cd "$1" && go list -m -f '{{.Version}}' k8s.io/kubernetes) ;;
  *) v=$(cd "$1" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/client-go |
    sed 's/^v0\./v1./') ;;
  esac
  [ -n "$v" ] || die "no Kubernetes version for $2 in $1"
  echo "$v"
}

ldflags_for() { # ldflags_for VERSION
  local v=$1 maj min p out="-s -w"
  maj=${v#v}
  maj=${maj%%.*}
  min=${v#v*.}
  min=${min%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    out+=" -X $p.gitVersion=$v -X $p.gitMajor=$maj -X $p.gitMinor=$min"
    out+=" -X $p.gitTreeState=clean -X $p.gitCommit=0000000000000000000000000000000000000000"
    out+=" -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$out"
}

build_module() { # build_module NAME
  local name=$1 dir=$here/modules/$1 stamp sum out pkg flag v t0 t1 total=0
  [ -f "$dir/go.mod" ] || die "no module $name (tests/cluster/modules/$name/go.mod)"
  stamp=$bin/.$name.stamp
  sum=$(cat "$dir/go.mod" "$dir/go.sum" "$dir/targets" | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
    local all=1
    while read -r out pkg flag; do
      [ -z "$out" ] || [ "${out#\#}" != "$out" ] || [ -x "$bin/$out" ] || all=0
    done <"$dir/targets"
    if ((all)); then
      echo "cluster/build: $name up to date"
      return 0
    fi
  fi
  t0=$(date +%s)
  (cd "$dir" && go mod download) ||
    die "$name: the Go module proxy did not serve every module of tests/cluster/modules/$name/go.sum (see above)"
  t1=$(date +%s)
  echo "cluster/build: $name: modules downloaded in $((t1 - t0)) s"
  while read -r out pkg flag; do
    [ -z "$out" ] || [ "${out#\#}" != "$out" ] && continue
    local ldf="-s -w"
    if [ "${flag:-}" = k8s-version ]; then
      v=$(k8s_version "$dir" "$pkg")
      ldf=$(ldflags_for "$v")
    fi
    t0=$(date +%s)
    (cd "$dir" && go build -trimpath -ldflags "$ldf" -o "$bin/$out" "$pkg") ||
      die "$name: go build $pkg failed (see above)"
    t1=$(date +%s)
    total=$((total + t1 - t0))
    echo "cluster/build: $name: $out built in $((t1 - t0)) s"
  done <"$dir/targets"
  echo "$sum" >"$stamp"
  echo "cluster/build: $name: built in $total s"
}

mkdir -p "$bin"
if (($#)); then
  mods=("$@")
else
  mods=()
  for d in "$here"/modules/*/; do mods+=("$(basename "$d")"); done
fi
for m in "${mods[@]}"; do build_module "$m"; done
