#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/setup.sh test: the
# build's packages, the test and benchmark tools), builds with gcc (default
# RelWithDebInfo) and with clang (Release), warnings as errors, runs every
# test under ctest in both, then again under AddressSanitizer +
# UndefinedBehaviorSanitizer, and the tests that run threads (ctest label
# "threads") under ThreadSanitizer. The cluster suite (label "cluster": a
# real control plane, docs/cluster.md) runs once, in the gcc build, beside
# the later stages.
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'echo "test.sh: FAILED (exit $?): $BASH_COMMAND; the output above names the check or test;" \
  "rerun that step alone (ctest --test-dir DIR -R NAME --output-on-failure)" >&2' ERR
bash scripts/setup.sh test
jobs=$(nproc)

# The cluster suite's Go builds (tests/cluster/build.sh: kube-apiserver,
# etcd, the controllers and operators; docs/cluster.md) are a fresh
# machine's longest step: about 45 minutes of CPU cold, seconds warm. They
# run in the background at the lowest priority while the C builds and tests
# below run, so they take only the CPU those leave idle. The cluster suite,
# mostly waiting on its API server and controllers, then runs in the
# background too, beside the later C stages, as soon as both the Go builds
# and the gcc build are done (run_cluster_suite); the end of this script
# waits for it. Both are killed if this script ends first.
mkdir -p build
rm -f build/cluster-go-build.rc build/cluster-suite.rc
go_log=$PWD/build/cluster-go-build.log
go_t0=$(date +%s)
setsid nice -n 19 bash -c 'bash tests/cluster/build.sh; echo $? >build/cluster-go-build.rc' \
  >"$go_log" 2>&1 &
go_pid=$!
cluster_pid=
# On any exit: the background jobs killed, then every cluster the suite
# brought up stopped (the ctest fixture cluster.down never runs when its
# ctest is killed, and the cluster's daemons are not in the job's process
# group), so no etcd or API server outlives a failed run.
stop_background() {
  local d
  kill -- -"$go_pid" 2>/dev/null || true
  [ -z "$cluster_pid" ] || kill -- -"$cluster_pid" 2>/dev/null || true
  for d in build/tests/cluster/state build/tests/cluster/state-*; do
    [ -d "$d/pids" ] || continue
    WH_CLUSTER_DIR=$PWD/$d bash scripts/cluster.sh down --keep-logs >/dev/null 2>&1 || true
  done
}
trap stop_background EXIT

# The cluster suite in the gcc build, once the Go builds have written their
# exit status: its output to build/cluster-suite.log, its status to
# build/cluster-suite.rc, how long it waited for the Go builds to its first line.
run_cluster_suite() {
  local t0 t1 rc=0
  t0=$(date +%s)
  while [ ! -f build/cluster-go-build.rc ]; do
    if ! kill -0 "$go_pid" 2>/dev/null && [ ! -f build/cluster-go-build.rc ]; then
      echo "test.sh: FAILED: the Go builds ended without an exit status (killed?); build/cluster-go-build.log"
      echo 1 >build/cluster-suite.rc
      return
    fi
    sleep 2
  done
  t1=$(date +%s)
  echo "cluster suite: Go builds $((t1 - go_t0)) s in the background, $((t1 - t0)) s of it waited for after the gcc stage"
  if [ "$(cat build/cluster-go-build.rc)" != 0 ]; then
    echo "test.sh: FAILED: tests/cluster/build.sh exited $(cat build/cluster-go-build.rc) (build/cluster-go-build.log);" \
      "rerun it alone: bash tests/cluster/build.sh"
    echo 1 >build/cluster-suite.rc
    return
  fi
  ctest --test-dir build --output-on-failure -L '^cluster$' || rc=$?
  echo "cluster suite (up, cases, down): $(($(date +%s) - t1)) s"
  echo "$rc" >build/cluster-suite.rc
}

echo "== source checks (banned calls, exported names, include comments, lengths, layout)"
python3 scripts/checksrc.py .
bash scripts/format.sh --check

echo "== gcc build + tests"
cmake -S . -B build -DCMAKE_C_COMPILER=gcc >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs" -LE '^cluster$'
setsid bash -c "$(declare -f run_cluster_suite); go_t0=$go_t0 go_pid=$go_pid; run_cluster_suite" \
  >build/cluster-suite.log 2>&1 &
cluster_pid=$!

# The portable twins of the SIMD paths (b64.c, buf.c, jparse.c), which the
# CPUs here never take: the unit tests only, in a build of their own.
echo "== portable build (-DWH_PORTABLE=ON: no SIMD paths) + unit tests"
cmake -S . -B build-portable -DCMAKE_C_COMPILER=gcc -DWH_PORTABLE=ON >/dev/null
cmake --build build-portable -j "$jobs" --target wh_unit_tests
ctest --test-dir build-portable --output-on-failure -j "$jobs" -R '^unit\.' -E '^unit\.test_jparse_portable\.'

# Release (-O3 -DNDEBUG) is what packagers build and not the default
# RelWithDebInfo: optimiser-only warnings (format-truncation, ...) and
# behaviour without assert() show here. WH_FUZZ=ON adds the libFuzzer harnesses
# and their short runs (fuzz.short.*, tests/fuzz/CMakeLists.txt).
echo "== clang Release build + tests (warnings as errors)"
cmake -S . -B build-clang-release -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release -DWH_FUZZ=ON >/dev/null
cmake --build build-clang-release -j "$jobs"
ctest --test-dir build-clang-release --output-on-failure -j "$jobs" -LE '^cluster$'

echo "== ASan + UBSan build + tests"
cmake -S . -B build-asan -DCMAKE_C_COMPILER=gcc -DWH_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE '^cluster$'

# ThreadSanitizer (~5-10x slower) on the tests labelled "threads" only: the
# server integration tests (the server binary itself is the TSan build), the
# kube client/cache/ledger tests, the multi-replica claims tests
# (kube.replicas.*) and unit.test_ledger.*. Each process writes
# its reports to tsan/report.<pid> (log_path) instead of stderr, since the
# Python tests swallow the server's stderr; any report fails the run, and
# halt_on_error also makes the racing process exit 66. tests/tsan.supp holds
# the suppressions, each with its reason.
echo "== TSan build + tests labelled threads"
cmake -S . -B build-tsan -DCMAKE_C_COMPILER=gcc -DWH_TSAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-tsan -j "$jobs"
rm -rf build-tsan/tsan && mkdir -p build-tsan/tsan
tsan_status=0
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp:log_path=$PWD/build-tsan/tsan/report" \
  ctest --test-dir build-tsan -L threads --output-on-failure -j "$jobs" || tsan_status=$?
if compgen -G "build-tsan/tsan/report*" >/dev/null; then
  cat build-tsan/tsan/report*
  echo "ThreadSanitizer reported the above (reports in build-tsan/tsan/)" >&2
  exit 1
fi
if ((tsan_status)); then exit "$tsan_status"; fi

# The cluster suite (docs/cluster.md), started in the background after the
# gcc stage (run_cluster_suite above): a real kube-apiserver, etcd and
# kube-controller-manager, the operators, the webhook installed from the
# chart. Its cases share one cluster and run one at a time.
echo "== cluster suite (ctest -L cluster, in the background since the gcc stage)"
t0=$(date +%s)
wait "$cluster_pid" || true
echo "(waited $(($(date +%s) - t0)) s for it after the C stages)"
echo "-- Go builds (tests/cluster/build.sh):"
cat "$go_log"
echo "-- cluster suite:"
cat build/cluster-suite.log
rc=$(cat build/cluster-suite.rc 2>/dev/null || echo 1)
if [ "$rc" != 0 ]; then
  echo "test.sh: FAILED: the cluster suite (output above); rerun it alone:" \
    "ctest --test-dir build -L cluster --output-on-failure" >&2
  exit 1
fi
