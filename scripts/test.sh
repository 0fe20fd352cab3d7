#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with gcc and with
# clang (warnings are errors), runs every test under ctest, then runs the
# suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

echo "== gcc build + tests"
cmake -S . -B build -DCMAKE_C_COMPILER=gcc >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== clang build (warnings as errors)"
cmake -S . -B build-clang -DCMAKE_C_COMPILER=clang >/dev/null
cmake --build build-clang -j "$jobs"

echo "== ASan + UBSan build + tests"
cmake -S . -B build-asan -DCMAKE_C_COMPILER=gcc -DWH_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
