#!/usr/bin/env bash
# Builds the CPU test suites under a sanitizer and runs them; any report fails the script.
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer (every report fatal):
#                              the engine, workload, runner and compare suites, in build-asan,
#                              compiled with clang (MTC_ASAN_CXX), so CI builds the CPU suites
#                              with a second compiler, warnings as errors when MTC_WERROR=ON
#   scripts/sanitize.sh tsan   ThreadSanitizer: the engine suite (the worker pool, pinned pool,
#                              TensorImpl pool, completion and the concurrent copies), in build-tsan
# GPU tests skip on a machine without a GPU, as in scripts/test.sh. Suppressions, each with
# its reason, are in tests/sanitizers/. MTC_SANITIZE_BUILD_DIR overrides the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-asan}"
root="$PWD"
case "$kind" in
  asan)
    flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    suites=(tests/engine/mtc_engine_tests tests/workload/mtc_workload_tests tests/bench/mtc_bench_tests
            tests/compare/mtc_compare_tests)
    compiler=(-DCMAKE_CXX_COMPILER="${MTC_ASAN_CXX:-clang++}")
    export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
    export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
    ;;
  tsan)
    flags="-fsanitize=thread"
    compiler=()
    suites=(tests/engine/mtc_engine_tests)
    # libtorch's own intra-op threads (OpenMP, in the tests' tensor fills) synchronize inside
    # uninstrumented libgomp, which ThreadSanitizer cannot see: every parallel fill would be
    # reported. The engine does not use them (its concurrency is its own worker pool), so the
    # tests run them inline.
    export OMP_NUM_THREADS=1
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/sanitizers/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
    ;;
  *)
    echo "usage: scripts/sanitize.sh [asan|tsan]" >&2
    exit 2
    ;;
esac
build_dir="${MTC_SANITIZE_BUILD_DIR:-build-$kind}"
targets=""
for suite in "${suites[@]}"; do targets+=" $(basename "$suite")"; done

start=$(date +%s)
echo "=== $kind: building$targets in $build_dir"
# -O1 keeps the stacks readable and the build cheaper than -O2; -g1 (line tables) is enough for
# symbolized reports, full debug info of the torch headers would double the build time.
MTC_BUILD_DIR="$build_dir" MTC_BUILD_TYPE=RelWithDebInfo MTC_TARGETS="$targets" bash scripts/build.sh \
  "${compiler[@]}" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags"
built=$(date +%s)
echo "=== $kind: built in $((built - start)) s"

# The test binaries directly, one process per suite: ctest would load libtorch once per test.
for suite in "${suites[@]}"; do
  echo "=== $kind: $suite"
  "$build_dir/$suite" --gtest_brief=1
done
echo "=== $kind: all suites clean (build $((built - start)) s, tests $(($(date +%s) - built)) s)"
