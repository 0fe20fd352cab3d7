#!/usr/bin/env bash
# The layer check must be able to fail: on a copy of the tree with one
# violation of each kind planted, check-layers.sh exits 1 and names each.
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/include" "$src/src" "$src/scripts" "$tmp/"

bash "$tmp/scripts/check-layers.sh" "$tmp" || { echo "the unchanged copy fails"; exit 1; }

echo '#include "wh/server.h" /* planted */' >> "$tmp/src/core/mutate.c"
echo '#include "wh/yaml.h" /* planted */' >> "$tmp/include/util/wh/buf.h"
echo '#include "wh/nosuch.h" /* planted */' >> "$tmp/src/offline/render.c"
echo '#include "wh/admit.h" /* planted */' >> "$tmp/include/shell/sys/wh/metrics.h"
echo '#include "wh/admit.h" /* planted */' >> "$tmp/src/shell/http/server.c"
echo '#include "wh/cache.h" /* planted */' >> "$tmp/include/shell/http/wh/server.h"
echo '#include "store.h" /* planted */' >> "$tmp/src/shell/admit/claims.c"
echo '#include "../kube/store.h" /* planted */' >> "$tmp/src/shell/admit/ledger.c"
echo '/* planted */' > "$tmp/src/offline/doctor/planted.h"
echo '#include "doctor/planted.h" /* planted */' >> "$tmp/src/offline/check.c"
mkdir -p "$tmp/include/wh" "$tmp/src/misc" "$tmp/src/shell/misc"
echo '/* planted */' > "$tmp/include/wh/stray.h"
echo '/* planted */' > "$tmp/src/misc/stray.c"
echo '/* planted */' > "$tmp/src/shell/misc/stray.c"
echo '/* planted */' > "$tmp/src/shell/stray.c"

if out=$(bash "$tmp/scripts/check-layers.sh" "$tmp"); then
  echo "check-layers.sh passed a tree with planted violations"; exit 1
fi
echo "$out"
for want in 'src/core/mutate.c:[0-9]*: core includes wh/server.h of shell' \
            'include/util/wh/buf.h:[0-9]*: util includes wh/yaml.h of offline' \
            'src/offline/render.c:[0-9]*: includes wh/nosuch.h, which no layer holds' \
            'include/shell/sys/wh/metrics.h:[0-9]*: shell/sys includes wh/admit.h of shell/admit' \
            'src/shell/http/server.c:[0-9]*: shell/http includes wh/admit.h of shell/admit, a layer it does not use' \
            'include/shell/http/wh/server.h:[0-9]*: shell/http includes wh/cache.h of shell/kube, a layer it does not use' \
            'src/shell/admit/claims.c:[0-9]*: includes "store.h", which is not beside it' \
            'src/shell/admit/ledger.c:[0-9]*: includes "../kube/store.h", a private header of another room' \
            'src/offline/check.c:[0-9]*: includes "doctor/planted.h", a private header of the room offline/doctor' \
            'src/shell/misc: not a layer' \
            'src/shell/stray.c: a source outside every room' \
            'include/wh/stray.h: a header outside every layer' \
            'src/misc: not a layer'; do
  grep -q "$want" <<<"$out" || { echo "not reported: $want"; exit 1; }
done
echo "every planted violation reported"
