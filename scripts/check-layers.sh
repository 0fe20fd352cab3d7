#!/usr/bin/env bash
# check-layers.sh [ROOT]: the layer rule of docs/internals/architecture.md over
# the sources and headers. The layers, lowest first: util, core, offline, then
# the shell's rooms: sys, kube on sys, admit on kube, http on sys alone (it
# knows the pipeline only through wh/server.h's struct wh_pipeline), cli on
# all. A file of layer L (src/L/**.c and .h, include/L/wh/*.h, L being e.g.
# util or shell/kube; src/main.c is the top) may include "wh/x.h" only when
# x.h lives in L or a layer L uses (the table below), and
# a private header ("x.h", "mhd/x.h": no wh/) only when it sits in L's own
# source folder. Also refused: a header outside a layer (include/wh/,
# include/shell/wh/), a source folder that is no layer or room, a source file
# directly in src/shell/, and an include of a header that does not exist. The
# build enforces the rule for what it compiles (each layer sees only its own
# include directories and those below); this also covers headers and unbuilt
# files. Prints one line per violation; exits 1 if there is any.
set -euo pipefail
root=${1:-$(dirname "$0")/..}
cd "$root"
layers=(util core offline shell/sys shell/kube shell/admit shell/http shell/cli)
# What each layer uses, besides itself (the same as the libraries it links in
# CMakeLists.txt). No layer uses one listed after it, so there is no circle.
declare -A uses=(
  [util]=''
  [core]='util'
  [offline]='util core'
  [shell/sys]='util core offline'
  [shell/kube]='util core offline shell/sys'
  [shell/admit]='util core offline shell/sys shell/kube'
  [shell/http]='util core offline shell/sys'
  [shell/cli]='util core offline shell/sys shell/kube shell/admit shell/http'
)
# Rooms inside a layer: a folder of the layer's sources whose private
# headers are its own (a file of the layer outside the folder may use its
# public header, include/<layer>/wh/, not them). Each is in its layer's
# library; see CMakeLists.txt for why doctor is not a layer of its own.
inner_rooms=(offline/doctor)
declare -A rank_of # a lookup, not a subshell per include: the check runs on a loaded machine
for i in "${!layers[@]}"; do rank_of[${layers[$i]}]=$i; done
rank() { echo "${rank_of[$1]:--1}"; }
may_use() { [[ $1 == "$2" || " ${uses[$1]} " == *" $2 "* ]]; } # layer, layer of a header

bad=0
fail() { echo "check-layers: $*"; bad=1; }

# Where each public header lives.
declare -A home
for l in "${layers[@]}"; do
  for h in include/"$l"/wh/*.h; do
    [[ -e $h ]] || continue
    n=$(basename "$h")
    [[ -n ${home[$n]:-} ]] && fail "$h: wh/$n is also in include/${home[$n]}/wh (one header, one layer)"
    home[$n]=$l
  done
done
for h in include/wh/*.h include/shell/wh/*.h; do
  [[ -e $h ]] && fail "$h: a header outside every layer; move it to include/<layer>/wh/ (layers: ${layers[*]})"
done
for d in src/*/ src/shell/*/; do
  d=${d%/}
  [[ $d == src/shell ]] && continue
  [[ $(rank "${d#src/}") -ge 0 ]] || fail "$d: not a layer (layers: ${layers[*]})"
done
for f in src/shell/*.c src/shell/*.h; do
  [[ -e $f ]] && fail "$f: a source outside every room; move it to src/shell/<room>/"
done

check_file() { # file layer
  local f=$1 l=$2 mine n lno inc dir
  mine=${rank_of[$l]}
  while IFS=: read -r lno inc; do
    n=${inc#*wh/}; n=${n%%\"*}
    if [[ -z ${home[$n]:-} ]]; then
      fail "$f:$lno: includes wh/$n, which no layer holds"
    elif [[ ${rank_of[${home[$n]}]} -gt $mine ]]; then
      fail "$f:$lno: $l includes wh/$n of ${home[$n]}, a layer above it"
    elif ! may_use "$l" "${home[$n]}"; then
      fail "$f:$lno: $l includes wh/$n of ${home[$n]}, a layer it does not use (it uses: ${uses[$l]})"
    fi
  done < <(grep -no '^[[:space:]]*#[[:space:]]*include[[:space:]]*"wh/[^"]*"' "$f" || true)
  dir=$(dirname "$f")
  while IFS=: read -r lno inc; do
    n=${inc#*\"}; n=${n%%\"*}
    [[ $n == wh/* ]] && continue
    if [[ ! -e $dir/$n ]]; then
      fail "$f:$lno: includes \"$n\", which is not beside it (a private header sits in its room's folder)"
    elif [[ $(realpath "$dir/$n") != "$(realpath "src/$l")"/* ]]; then
      fail "$f:$lno: includes \"$n\", a private header of another room"
    else
      for r in "${inner_rooms[@]}"; do
        if [[ $(realpath "$dir/$n") == "$(realpath "src/$r")"/* &&
              $(realpath "$f") != "$(realpath "src/$r")"/* ]]; then
          fail "$f:$lno: includes \"$n\", a private header of the room $r (use its wh/ header)"
        fi
      done
    fi
  done < <(grep -no '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*"' "$f" || true)
}
for l in "${layers[@]}"; do
  while IFS= read -r f; do
    check_file "$f" "$l"
  done < <(find src/"$l" include/"$l"/wh -name '*.[ch]' 2>/dev/null | sort)
done
for f in src/*.c; do
  [[ -e $f ]] && check_file "$f" shell/cli
done
exit $bad
