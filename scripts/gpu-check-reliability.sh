#!/usr/bin/env bash
# The engine's reliability checks on the GPU host, run by `scripts/gpu-check.sh OUT_DIR MODE`
# (or directly: scripts/gpu-check-reliability.sh OUT_DIR reliability|sanitize). Both build only
# what they run, in $MTC_BUILD_DIR (default build-gpu), and write at most eight files to OUT_DIR.
#
# "reliability" (about 2 minutes after a 3-minute build on one H200): the randomized differential
#   test at 2,500 cases per route (10,000 on the GPU routes of one GPU, 15,000 with two), the
#   soak at 1,000 copies per thread, the fault and unsupported-input tests, and
#   mtc_memory_steadiness over 100,000 copies each way. Files: build.log, differential.log,
#   soak.log, faults.log, steadiness-h2d.md, steadiness-d2h.md. A test process that dies of a
#   signal writes its stack into its log (scripts/crash_backtrace.c), and a failed step prints
#   its log's last lines and that stack, resolved.
# "sanitize": every GPU test of the engine (death tests aside: they crash the device on
#   purpose) under compute-sanitizer's memcheck, racecheck and synccheck, with small sizes;
#   any error the tool reports, or a failed test, fails the mode. memcheck runs with
#   PYTORCH_NO_CUDA_MEMORY_CACHING=1, so every device allocation is its own and an access past
#   one is seen (the memory-fraction test skips then). API errors are not reported: the fault
#   tests provoke them. Files: build.log, memcheck.log, racecheck.log, synccheck.log.
#
# Each step runs under a time limit (a hang fails the step, it does not stall the host):
# MTC_STEP_TIMEOUT (300 s) for reliability, MTC_SANITIZE_TIMEOUT (150 s per tool) for sanitize.
# MTC_DIFFERENTIAL_CASES, MTC_SOAK_COPIES and MTC_SANITIZE_FILTER override the sizes and the
# sanitized tests; MTC_SANITIZE_TOOLS (default "memcheck racecheck synccheck") the tools, to finish
# one that an earlier run's time limit cut short without paying for the others again.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out="${1:?usage: scripts/gpu-check-reliability.sh OUT_DIR reliability|sanitize}"
mode="${2:?usage: scripts/gpu-check-reliability.sh OUT_DIR reliability|sanitize}"
mkdir -p "$out"
export MTC_BUILD_DIR="${MTC_BUILD_DIR:-build-gpu}" MTC_PYTHON="${MTC_PYTHON:-python3}"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
tests="$MTC_BUILD_DIR/tests/engine/mtc_engine_tests"
status=0
step() { echo "=== $* ($(date -u +%T))"; }
# In reliability mode a test process that dies of a signal writes its stack into its log
# (scripts/crash_backtrace.c, preloaded; not under compute-sanitizer, which handles signals
# itself): a differential run on 2026-11-26 died once, and its log stopped at the test's first
# line.
preload=""
# Resolves the "object(+offset)" frames of a crash in LOG (function, and line where the build
# has debug information).
resolve_frames() {
  grep -oE '^[^ (]+\(\+0x[0-9a-f]+\)' "$1" | head -40 | while read -r frame; do
    local object="${frame%%(*}" offset="${frame#*(+}"
    echo "  $frame: $(addr2line -f -C -i -e "$object" "${offset%)}" 2>/dev/null | paste -sd' ' | cut -c1-240)"
  done
}
# Runs "$@" under `timeout`, line-buffered into LOG (a crash or a hang leaves the test's name
# there), and says how it ended; after a failure, the log's last lines and a crash's stack.
run_logged() {
  local log="$1" limit="$2"
  shift 2
  local start=$SECONDS
  env ${preload:+LD_PRELOAD="$preload"} timeout --signal=ABRT --kill-after=10 "$limit" \
    stdbuf -oL "$@" >> "$log" 2>&1
  local rc=$?
  case $rc in
    0) echo "ok ($((SECONDS - start)) s)" ;;
    124 | 134 | 137) echo "FAILED: rc $rc after $((SECONDS - start)) s (time limit $limit s, or aborted)"; status=1 ;;
    *) echo "FAILED: rc $rc after $((SECONDS - start)) s"; status=1 ;;
  esac
  if (( rc != 0 )); then
    echo "last lines of $(basename "$log"):"
    grep -v "^\[ *\(OK\|RUN\) *\]" "$log" | tail -8 | cut -c1-240
    grep "watchdog:" "$log" | cut -c1-400
    # After a time limit or a watchdog the stack is the aborted thread's, not where a hang is.
    grep -q "fatal signal" "$log" && resolve_frames "$log"
  fi
  return $rc
}

case "$mode" in
  reliability) targets="mtc_engine_tests mtc_memory_steadiness" ;;
  sanitize) targets="mtc_engine_tests" ;;
  *) echo "unknown mode '$mode' (reliability or sanitize)" >&2; exit 2 ;;
esac
# Checked before the build: a typo costs no GPU time.
tools="${MTC_SANITIZE_TOOLS:-memcheck racecheck synccheck}"
if [[ "$mode" == sanitize ]]; then
  for tool in $tools; do
    [[ "$tool" =~ ^(memcheck|racecheck|synccheck)$ ]] ||
      { echo "MTC_SANITIZE_TOOLS: unknown tool '$tool' (memcheck, racecheck, synccheck)"; exit 2; }
  done
  [[ -n "${tools// /}" ]] || { echo "MTC_SANITIZE_TOOLS is empty: nothing would be checked"; exit 2; }
fi

{
  step "machine"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  nproc
  step "build: $targets"
  # shellcheck disable=SC2086
  MTC_TARGETS="$targets" bash scripts/build.sh -DMTC_WERROR=ON ${MTC_CMAKE_ARGS:-} || status=1
} > "$out/build.log" 2>&1
tail -3 "$out/build.log"
(( status == 0 )) || { step "build failed: see build.log"; exit 1; }

if [[ "$mode" == reliability ]]; then
  limit="${MTC_STEP_TIMEOUT:-300}"
  if "${CC:-cc}" -shared -fPIC -O1 -o /tmp/mtc-crash-backtrace.so scripts/crash_backtrace.c 2> /dev/null; then
    preload=/tmp/mtc-crash-backtrace.so
  else
    echo "note: scripts/crash_backtrace.c did not build: a crash will leave no stack"
  fi
  step "differential test, ${MTC_DIFFERENTIAL_CASES:-2500} cases per route"
  # Its watchdog names each route's case and aborts before the step's time limit would.
  MTC_DIFFERENTIAL_CASES="${MTC_DIFFERENTIAL_CASES:-2500}" MTC_DIFFERENTIAL_SECONDS=$((limit - 20)) \
    run_logged "$out/differential.log" "$limit" "$tests" --gtest_filter='CopierDifferential.*'
  grep -E "cases|Failure|seed [0-9]+|FAILED" "$out/differential.log" | head -20

  step "soak, ${MTC_SOAK_COPIES:-1000} copies per thread"
  MTC_SOAK_COPIES="${MTC_SOAK_COPIES:-1000}" MTC_SOAK_SECONDS="$limit" \
    run_logged "$out/soak.log" "$limit" "$tests" --gtest_filter='CopierSoak.*'
  grep -E "soak:|Failure|watchdog|FAILED" "$out/soak.log" | head -20

  step "faults and unsupported inputs"
  run_logged "$out/faults.log" "$limit" "$tests" \
    --gtest_filter='*Fault*:*UnsupportedInput*:*ErrorPropagation*:*HandleLifetime*:*PinnedPoolGpu*'
  grep -E "^\[  (PASSED|FAILED) |tests ran|CUDA calls failed|polls failed|found the pool full|watchdog" "$out/faults.log" | head -40

  for direction in h2d d2h; do
    step "memory steadiness, 100,000 copies $direction"
    run_logged "$out/steadiness-$direction.md" "$limit" \
      "$MTC_BUILD_DIR/mtc_memory_steadiness" 100000 10000 "$direction"
    cat "$out/steadiness-$direction.md"
  done
  step "done (status $status)"
  exit $status
fi

# sanitize
sanitizer="$(command -v compute-sanitizer || true)"
for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [[ -z "$sanitizer" && -x "$candidate" ]] && sanitizer="$candidate"
done
[[ -n "$sanitizer" ]] || { echo "compute-sanitizer not found: nothing checked"; exit 1; }
# The GPU tests, by their suites' names (tests/README.md), and two that take GPU routes on a GPU.
gpu_tests='*Gpu.*:*GpuTest.*:CopierDifferential.*:CopierSoak.*'
filter="${MTC_SANITIZE_FILTER:-$gpu_tests}"
[[ "$filter" == *-* ]] || filter="$filter-*DeathTest*"
export MTC_DIFFERENTIAL_CASES="${MTC_DIFFERENTIAL_CASES:-20}" MTC_SOAK_COPIES="${MTC_SOAK_COPIES:-10}"
# The tools slow the host side many times over: tests that time device work against host work
# (a sleep kernel meant to outlast start_copy) read this and drop their timing expectations.
export MTC_UNDER_SANITIZER=1
for tool in $tools; do
  step "compute-sanitizer --tool $tool" | tee "$out/$tool.log"
  extra_env=()
  [[ "$tool" == memcheck ]] && extra_env=(PYTORCH_NO_CUDA_MEMORY_CACHING=1)
  # racecheck looks at shared memory only (the gather kernel, which the other tests launch);
  # under it the soak's 80 copies took over a minute on an H100 and proved nothing more, and
  # the fault tests' failed CUDA calls made the tool report an internal error of its own
  # ("failed to track a kernel launch"), not a hazard. memcheck and synccheck run both.
  tool_filter="$filter"
  [[ "$tool" == racecheck ]] && tool_filter="$filter:CopierSoak.*:*Fault*"
  run_logged "$out/$tool.log" "${MTC_SANITIZE_TIMEOUT:-150}" env "${extra_env[@]}" \
    "$sanitizer" --tool "$tool" --error-exitcode 99 --report-api-errors no --print-limit 50 \
    "$tests" --gtest_brief=1 --gtest_filter="$tool_filter"
  if grep -q "Device not supported" "$out/$tool.log"; then
    echo "compute-sanitizer cannot attach to this GPU here (Device not supported: a gVisor runtime?)"
  fi
  grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)|tests ran|Invalid|Race|Barrier|out of bounds" "$out/$tool.log" | head -12
done
step "done (status $status)"
exit $status
