#!/usr/bin/env bash
# format.sh [--check]: formats the C sources (src/ include/ tests/ bench/)
# in place with clang-format and the repository's .clang-format; with
# --check it changes nothing, lists the files that formatting would change
# and exits 1 if there are any. clang-format comes from scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac
command -v clang-format >/dev/null || { echo "format.sh: no clang-format (run scripts/setup.sh)" >&2; exit 2; }
mapfile -t files < <(find src include tests bench -type f -name '*.[ch]' | sort)
((${#files[@]})) || { echo "format.sh: no C file under src include tests bench" >&2; exit 2; }
if ((check == 0)); then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --style=file "$f" | cmp -s - "$f"; then
    echo "format.sh: $f is not formatted (scripts/format.sh fixes it)"
    bad=1
  fi
done
exit "$bad"
