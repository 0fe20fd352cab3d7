#!/usr/bin/env bash
# check-layers.sh [ROOT]: the layer rule of README.md ("Architecture") over
# the sources and headers. The layers, lowest first: util, core, offline,
# shell. A file of layer L (src/L/*.c, include/L/wh/*.h; src/main.c is shell)
# may include "wh/x.h" only when x.h lives in L or a layer below it. Also
# refused: a header outside a layer (include/wh/), a source folder that is no
# layer, an include of a header that does not exist, and a leaf module of the
# shell (see "leaves" below) that includes another shell header. The build enforces
# the rule for what it compiles (each layer sees only its own include
# directory and those below); this also covers headers and unbuilt files.
# Prints one line per violation; exits 1 if there is any.
set -euo pipefail
root=${1:-$(dirname "$0")/..}
cd "$root"
layers=(util core offline shell)
rank() { local i; for i in "${!layers[@]}"; do [[ ${layers[$i]} == "$1" ]] && { echo "$i"; return; }; done; echo -1; }

bad=0
fail() { echo "check-layers: $*"; bad=1; }

# Where each header lives.
declare -A home
for l in "${layers[@]}"; do
  for h in include/"$l"/wh/*.h; do
    [[ -e $h ]] || continue
    n=$(basename "$h")
    [[ -n ${home[$n]:-} ]] && fail "$h: wh/$n is also in include/${home[$n]}/wh (one header, one layer)"
    home[$n]=$l
  done
done
for h in include/wh/*.h; do
  [[ -e $h ]] && fail "$h: a header outside every layer; move it to include/<layer>/wh/ (layers: ${layers[*]})"
done
for d in src/*/; do
  d=${d%/}
  [[ $(rank "$(basename "$d")") -ge 0 ]] || fail "$d: not a layer (layers: ${layers[*]})"
done

check_file() { # file layer
  local f=$1 l=$2 mine n lno inc
  mine=$(rank "$l")
  while IFS=: read -r lno inc; do
    n=${inc#*wh/}; n=${n%%\"*}
    if [[ -z ${home[$n]:-} ]]; then
      fail "$f:$lno: includes wh/$n, which no layer holds"
    elif [[ $(rank "${home[$n]}") -gt $mine ]]; then
      fail "$f:$lno: $l includes wh/$n of ${home[$n]}, a layer above it"
    fi
  done < <(grep -no '^[[:space:]]*#[[:space:]]*include[[:space:]]*"wh/[^"]*"' "$f" || true)
}
for l in "${layers[@]}"; do
  for f in src/"$l"/*.c src/"$l"/*.h include/"$l"/wh/*.h; do
    [[ -e $f ]] && check_file "$f" "$l"
  done
done
for f in src/*.c; do
  [[ -e $f ]] && check_file "$f" shell
done

# Leaf modules of the shell: every other module may use them, so they
# include no other shell header (metrics.h once included admit.h, which
# pulled the cache, the ledger and the engine into a counter module).
leaves=(clock fileio htab log metrics)
for m in "${leaves[@]}"; do
  for f in src/shell/"$m".c include/shell/wh/"$m".h; do
    [[ -e $f ]] || { fail "$f: listed as a leaf module but missing (update the list)"; continue; }
    while IFS=: read -r lno inc; do
      n=${inc#*wh/}; n=${n%%\"*}
      [[ $n == "$m.h" || ${home[$n]:-} != shell ]] ||
        fail "$f:$lno: the leaf module $m includes wh/$n of the shell; a leaf uses only the layers below"
    done < <(grep -no '^[[:space:]]*#[[:space:]]*include[[:space:]]*"wh/[^"]*"' "$f" || true)
  done
done
exit $bad
