#!/usr/bin/env bash
# fuzz.sh: run the libFuzzer harnesses, each for a given time, and keep what
# they grow.
#
#   scripts/fuzz.sh [-t SECONDS] [-r RUNS] [--merge] [HARNESS...]
#
# HARNESS is a name from the table below (all of them when none is given).
# Each runs in one process, one after the other, for SECONDS (default 60) or
# RUNS executions, whichever comes first, from its committed corpus plus the
# grown one in build-fuzz/corpus/<name>/ (kept between runs). A failure
# leaves crash-*/leak-*/timeout-* in build-fuzz/artifacts/<name>/ and makes
# the script exit 1: replay it with the harness binary, fix the engine, and
# add the input to the committed corpus so that ctest replays it.
#
# --merge minimises the grown corpus into the committed one (a libFuzzer
# set cover over edges: the fewest inputs that reach what it reaches, each
# under its SHA-1),
# for committing. Keep the committed corpora small: merge after long runs,
# not after every one.
#
# To add a harness: build it in tests/<dir>/CMakeLists.txt under WH_FUZZ (see
# tests/fuzz/CMakeLists.txt), give it a replay test, and add one line to the
# table: name, binary (in build-fuzz), committed corpus, dictionary (or -),
# and its libFuzzer options.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD

#        name    binary                      committed corpus        dict                   options
table=(
  "review tests/fuzz/fuzz_review tests/fuzz/corpus      tests/fuzz/review.dict -max_len=16384 -timeout=20"
  "yaml   tests/render/fuzz_yaml tests/render/corpus    -                      -max_len=4096 -timeout=10"
  "http   tests/fuzz/fuzz_http   tests/fuzz/http-corpus tests/fuzz/http.dict   -max_len=4096 -timeout=10"
  "jparse tests/fuzz/fuzz_jparse tests/fuzz/jparse-corpus tests/fuzz/jparse.dict -max_len=8192 -timeout=10"
)

seconds=60 runs=-1 merge=0 want=()
while [ $# -gt 0 ]; do
  case "$1" in
    -t) seconds=$2; shift 2 ;;
    -r) runs=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) want+=("$1"); shift ;;
  esac
done

known=$(printf '%s\n' "${table[@]}" | awk '{print $1}')
for w in "${want[@]}"; do
  grep -qx "$w" <<<"$known" || { echo "fuzz.sh: no harness '$w' (have: $(echo $known))" >&2; exit 2; }
done

cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DWH_FUZZ=ON >/dev/null
status=0
for row in "${table[@]}"; do
  read -r name bin corpus dict opts <<<"$row"
  if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$name"; then
    continue
  fi
  cmake --build build-fuzz -j2 --target "$(basename "$bin")" >/dev/null
  grown=build-fuzz/corpus/$name artifacts=build-fuzz/artifacts/$name
  mkdir -p "$grown" "$artifacts"
  args=($opts -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/")
  [ "$dict" != - ] && args+=(-dict="$dict")
  if [ $merge = 1 ]; then
    echo "== $name: merging $grown into $corpus"
    # Edges only (no counters or comparisons) and a set cover: the smallest
    # set of inputs that reaches what the grown corpus reaches.
    tmp=$(mktemp -d)
    "build-fuzz/$bin" -set_cover_merge=1 -use_counters=0 -use_cmp=0 "${args[@]}" "$tmp" \
      "$corpus" "$grown" 2>&1 | grep MERGE-OUTER | tail -n 1
    for f in "$tmp"/*; do
      [ -e "$f" ] && ! cmp -s "$f" "$corpus/$(basename "$f")" && cp -n "$f" "$corpus/" || true
    done
    rm -rf "$tmp"
    continue
  fi
  echo "== $name: ${seconds}s or $runs runs (log build-fuzz/$name.log)"
  if "build-fuzz/$bin" "${args[@]}" -max_total_time="$seconds" -runs="$runs" \
      "$grown" "$corpus" >"build-fuzz/$name.log" 2>&1; then
    grep -E '^#[0-9]+ +DONE|stat::number_of_executed_units' "build-fuzz/$name.log" | tail -n 2
  else
    status=1
    grep -E 'ERROR|check failed|Test unit written' "build-fuzz/$name.log" | head -n 5
    echo "== $name FAILED: see build-fuzz/$name.log and $artifacts/"
  fi
done
exit $status
