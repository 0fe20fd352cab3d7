#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with gcc (default
# RelWithDebInfo) and with clang (Release), warnings as errors, runs every
# test under ctest in both, then again under AddressSanitizer +
# UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

echo "== gcc build + tests"
cmake -S . -B build -DCMAKE_C_COMPILER=gcc >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

# Release (-O3 -DNDEBUG) is what packagers build and not the default
# RelWithDebInfo: optimiser-only warnings (format-truncation, ...) and
# behaviour without assert() show here.
echo "== clang Release build + tests (warnings as errors)"
cmake -S . -B build-clang-release -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-clang-release -j "$jobs"
ctest --test-dir build-clang-release --output-on-failure -j "$jobs"

echo "== ASan + UBSan build + tests"
cmake -S . -B build-asan -DCMAKE_C_COMPILER=gcc -DWH_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
