#!/usr/bin/env bash
# checksrc.py must be able to fail: on a copy of the tree with one violation
# of each kind planted, it exits 1 and names each; a banned name in a
# comment or a string, or in a static function's name, is not reported.
set -euo pipefail
src=$1 py=${2:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/include" "$src/src" "$src/scripts" "$tmp/"

"$py" "$tmp/scripts/checksrc.py" "$tmp" || { echo "the unchanged copy fails"; exit 1; }

cat >> "$tmp/src/core/mutate.c" <<'C'
/* planted: strcpy(a, b) in a comment is no call */
static const char *planted_text = "sprintf(x)";
static int planted_ok(void) { return planted_text[0]; }
int planted_exported(char *d, const char *s)
{
    strcpy(d, s);
    return atoi(s) + planted_ok();
}
C
cat >> "$tmp/src/util/buf.c" <<'C'
void wh_planted_fine(void) {}
long planted_second(const char *s) { return strtol(s, 0, 10); }
C
sed -i 's|^#include "wh/mem.h" /\* wh_free \*/|#include "wh/mem.h" /* wh_free, wh_planted_gone */|' \
  "$tmp/src/core/engine.c"

if out=$("$py" "$tmp/scripts/checksrc.py" "$tmp"); then
  echo "checksrc.py passed a tree with planted violations"; exit 1
fi
echo "$out"
for want in 'src/core/mutate.c:[0-9]*: strcpy() is banned' \
            'src/core/mutate.c:[0-9]*: atoi() is banned' \
            'src/core/mutate.c:[0-9]*: planted_exported() is exported without the wh_ prefix' \
            'src/util/buf.c:[0-9]*: planted_second() is exported without the wh_ prefix' \
            'src/core/engine.c:[0-9]*: the include comment names wh_planted_gone'; do
  grep -q "$want" <<<"$out" || { echo "not reported: $want"; exit 1; }
done
n=$(grep -c . <<<"$out")
[[ $n -eq 5 ]] || { echo "expected exactly the 5 planted violations, got $n"; exit 1; }
echo "every planted violation reported, nothing else"
