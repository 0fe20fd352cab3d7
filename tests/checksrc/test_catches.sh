#!/usr/bin/env bash
# checksrc.py must be able to fail: on a copy of the tree with one violation
# of each kind planted, it exits 1 and names each; a banned name in a
# comment or a string, or in a static function's name, is not reported; nor
# is a function of 80 lines, a long function or file with a /* long: */
# reason, or a long header.
set -euo pipefail
src=$1 py=${2:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/include" "$src/src" "$src/scripts" "$tmp/"

"$py" "$tmp/scripts/checksrc.py" "$tmp" || { echo "the unchanged copy fails"; exit 1; }

cat > "$tmp/src/core/planted_calls.c" <<'C'
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
sed -i 's|^\(#include "wh/mem.h" *\)/\* wh_free \*/|\1/* wh_free, wh_planted_gone */|' \
  "$tmp/src/core/engine.c"
grep -q wh_planted_gone "$tmp/src/core/engine.c" || { echo "engine.c's mem.h include changed: plant elsewhere"; exit 1; }

# Lengths: a function of n lines (head to closing brace), with the comment
# $3 (may be empty) just above it.
planted_fn() { # name lines comment
  [[ -z $3 ]] || echo "$3"
  echo "static int $1(int x)"
  echo "{"
  for ((i = 0; i < $2 - 4; i++)); do echo "    x += $i;"; done
  echo "    return x;"
  echo "}"
}
{
  echo "/* planted: lengths */"
  planted_fn planted_80 80 ""
  planted_fn planted_81 81 "/* doc comment only */"
  planted_fn planted_marked 81 "/* long: a table read top to bottom */"
  planted_fn planted_short_reason 81 "/* long: why */"
  planted_fn planted_marked_gap 81 "/* long: a table read top to bottom */
"
} > "$tmp/src/util/planted_len.c"
planted_file() { # path first-comment
  { echo "$2"; echo "#include <stdio.h>"; for ((i = 0; i < 800; i++)); do echo "/* $i */"; done; } > "$1"
}
planted_file "$tmp/src/util/planted_big.c" "/* planted_big.c: 802 lines */"
planted_file "$tmp/src/util/planted_bigok.c" "/* planted_bigok.c: 802 lines
 * long: a doc comment line is no marker */
/* long: one generated table, an entry a line */"
planted_file "$tmp/include/util/wh/planted_big.h" "/* headers are not measured */"

if out=$("$py" "$tmp/scripts/checksrc.py" "$tmp"); then
  echo "checksrc.py passed a tree with planted violations"; exit 1
fi
echo "$out"
for want in 'src/core/planted_calls.c:[0-9]*: strcpy() is banned' \
            'src/core/planted_calls.c:[0-9]*: atoi() is banned' \
            'src/core/planted_calls.c:[0-9]*: planted_exported() is exported without the wh_ prefix' \
            'src/util/buf.c:[0-9]*: planted_second() is exported without the wh_ prefix' \
            'src/core/engine.c:[0-9]*: the include comment names wh_planted_gone' \
            'src/util/planted_len.c:[0-9]*: planted_81() is 81 lines, over 80' \
            'src/util/planted_len.c:[0-9]*: planted_short_reason() is 81 lines' \
            'src/util/planted_len.c:[0-9]*: planted_marked_gap() is 81 lines' \
            'src/util/planted_big.c: 802 lines, over 800'; do
  grep -q "$want" <<<"$out" || { echo "not reported: $want"; exit 1; }
done
n=$(grep -c . <<<"$out")
[[ $n -eq 9 ]] || { echo "expected exactly the 9 planted violations, got $n"; exit 1; }
echo "every planted violation reported, nothing else"
