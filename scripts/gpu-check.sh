#!/usr/bin/env bash
# The whole GPU check, run on the GPU host: build (warnings are errors), every test suite (the
# GPU tests included), the main benchmark and (when nsys can write reports) a short Nsight
# Systems capture. Reports go to the folder given as the first argument.
#
#   scripts/gpu-check.sh OUT_DIR [quick|bench|engine|multi|lockstep|python|reliability|sanitize]
#   scripts/gpu-check.sh OUT_DIR repeat N [MTC-BENCH ARGS...]
#   scripts/gpu-check.sh OUT_DIR ab N [CANDIDATE_DIR]
#   scripts/gpu-check.sh OUT_DIR python [BENCH_PYTHON ARGS...]
#   scripts/gpu-check.sh OUT_DIR microbench FILTER
#   scripts/gpu-check.sh OUT_DIR envab NAME=VALUE FILTER [PAIRS]
#   scripts/gpu-check.sh OUT_DIR topology [ROUND_TRIPS]
#   scripts/gpu-check.sh OUT_DIR neighbours FILTER [ROUNDS]
#   scripts/gpu-check.sh OUT_DIR profile FILTER [FILTER...]
#   scripts/gpu-check.sh OUT_DIR nsys FILTER [FILTER...]
#
# A failed build stops the script at once with exit 1 and its first errors (every error is in
# build.log: the build goes on past a failed file). The test stage runs every suite the mode
# promises (engine, workload, bench, compare; only engine in the modes that say "the engine's
# tests": bench, engine, multi, lockstep, microbench, envab, neighbours, profile, nsys): a suite that
# was not built, crashed or failed fails the check. The last line says what ran, e.g.
# "engine 205 (+6 skipped), workload 165, bench 224 (+11 skipped), compare 54: all passed".
#
# full (no mode): the suites, then the main benchmark, the same CPU->GPU cases with glibc's
#   malloc tuned, two GPUs at once with GPU->GPU across them (on a host with two), and the
#   profile.
# "quick" (about 3.5 minutes on 16 cores, build included): the suites and one `mtc-bench --quick`
#   run of h2d and d2h (and d2d across two GPUs on a host with two; h2h never: it needs no GPU).
# "bench": the engine's tests and the CPU->GPU copy benchmarks (the engine's micro-benchmarks of
#   whole copies and the walk, and mtc-bench's h2d cases): a fast check of an engine change.
# "engine": the engine's tests and the micro-benchmarks of a training loop's patterns (hot, after
#   an idle gap, fresh batches, the previous result freed inside the copy; both directions), of
#   the free of a result by another thread than the one that built it and by the same one, of
#   large pageable tensors by fill threads against one pinned copy, of the mixed batch and of the
#   pinned pool's footprint over 10,000 copies, then mtc-bench on configs/mixed.json.
# "multi" (a host with two or more GPUs): the engine's tests (the multi-GPU ones included), then
#   scripts/gpu-check-multi.sh: every GPU copying at once against one GPU alone, in one process
#   (a worker pool per GPU; one pool shared by all; workers that spin 2 ms), and one process per
#   GPU (multi.md, multi-reports.tar.gz).
# "lockstep" (a host with two or more GPUs): the engine's tests, then
#   scripts/gpu-check-lockstep.sh: every GPU at once against its own time alone (and GPU 0's),
#   in one process (a thread per GPU) and in one process per GPU, every copy released at the same
#   moment in both, hot and in training steps (engine_bench.md, lockstep.json).
# "repeat" builds mtc-bench only and runs it N times (at most 7) one process after another, by
#   default on configs/streampetr.json, writing run-I.json for each (scripts/repeatability.py
#   compares them) and run-1.md beside the first (a run to commit as a report needs both).
# "ab" runs N jobs of the in-process A/B (scripts/perf-trust.sh over scripts/perf-ci.sh): this
#   tree's engine as the baseline library against this tree's mtc-bench (an A/A job), or against
#   the mtc-bench of CANDIDATE_DIR (a copy of the tree with a change to measure). MTC_AB_BASE=DIR
#   makes the source folder DIR the baseline instead of this tree (this tree with a change is then
#   the candidate). Files: build.log, trust.md, trust.json. MTC_PERF_* settings pass through (e.g.
#   MTC_PERF_COMPARE_ARGS).
# "microbench" builds the engine's tests and mtc_engine_bench only, runs the engine's tests, then
#   the micro-benchmarks matching FILTER (a Google Benchmark regex), five repetitions each
#   (MTC_MICROBENCH_REPETITIONS, 1 to 99, for a question five cannot answer) in
#   random interleaving, so that variants of one question see the same moments of the host:
#   tests.log, engine_bench.json and engine_bench.md (a fast check of an engine change with the
#   benchmarks that measure it).
# "envab" builds and tests as "microbench" does, then runs the micro-benchmarks matching FILTER
#   in PAIRS pairs of processes (default 4, at most 6), without and then with the environment
#   setting NAME=VALUE, and compares the two sides process by process
#   (scripts/gpu-check-envab.sh says how): env_ab.md, env_ab.json.
# "python" installs the Python module into python3's environment (pip install
#   --no-build-isolation; without pip, a CMake build on PYTHONPATH), runs its tests (GPU ones
#   included) and scripts/bench_python.py, with the arguments after "python" (e.g. --methods);
#   MTC_AB_BASE=DIR times DIR's module beside this tree's in one process (--baseline);
#   MTC_ENGINE_STEP=1 also times the C++ engine's step and sets the module's beside it;
#   MTC_PYTHON_TESTS=0 leaves pytest out. A failed install of the module stops it (exit 1).
# "reliability" runs the engine's differential test at 10,000 GPU cases, the soak, the fault
#   tests and the memory-steadiness run; "sanitize" runs the engine's GPU tests under
#   compute-sanitizer (memcheck, racecheck, synccheck): both are scripts/gpu-check-reliability.sh,
#   whose header says what each runs and writes.
# "topology" builds nothing of the project: it compiles scripts/host_topology_probe.c and writes
#   topology.txt, the CPUs as the VM reports them and as the probe finds them (a cache line's
#   round trip between every pair of CPUs, cache latency from each), in about a minute on 64 CPUs.
# "neighbours" builds and tests as "microbench" does, then runs the micro-benchmarks matching
#   FILTER beside busy threads of several kinds (scripts/gpu-check-neighbours.sh): neighbours.md.
# "profile" builds and tests as "microbench" does, then runs the micro-benchmarks matching each
#   FILTER in a process of its own under the sampling profiler (scripts/profile.sh; the host has
#   no perf): profile-engine.md, where the CPU time of each went, the caller's and the workers',
#   and which functions call the allocator (MTC_PROFILE_REPETITIONS repetitions, default 10; MTC_PROFILE_RAW=1 also keeps each raw
#   profile, profile-engine-N.raw.gz: at most five FILTERs then).
#   The Python module's calls are profiled by the python mode with MTC_PYTHON_PROFILE=1.
# "nsys" builds and tests as "microbench" does, then runs each FILTER (at most five, one case each)
#   under Nsight Systems: scripts/gpu-check-nsys.sh says what it writes and what it needs.
# At most eight files are written to OUT_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/gpu-check.sh OUT_DIR [MODE [ARGS...]], the modes as in the header}"
mode="${2:-full}"
mkdir -p "$out"
export MTC_BUILD_DIR="${MTC_BUILD_DIR:-build-gpu}" MTC_PYTHON="${MTC_PYTHON:-python3}"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
status=0
step() { echo "=== $* ($(date -u +%T))"; }

if [[ "$mode" == envab ]]; then
  usage="usage: scripts/gpu-check.sh OUT_DIR envab NAME=VALUE FILTER [PAIRS]"
  setting="${3:-}" env_filter="${4:-}" pairs="${5:-4}"
  [[ "$setting" =~ ^[A-Za-z_][A-Za-z0-9_]*= && -n "$env_filter" ]] || { echo "$usage" >&2; exit 2; }
  [[ "$pairs" =~ ^[1-6]$ ]] || { echo "envab: PAIRS must be 1 to 6 (got '$pairs')" >&2; exit 2; }
fi

if [[ "$mode" == microbench ]]; then
  # Checked before the build, so that a typo costs no GPU time.
  [[ "${MTC_MICROBENCH_REPETITIONS:-5}" =~ ^[1-9][0-9]?$ ]] || {
    echo "microbench: MTC_MICROBENCH_REPETITIONS must be 1 to 99 (got '$MTC_MICROBENCH_REPETITIONS')" >&2
    exit 2
  }
fi

if [[ ( "$mode" == ab || "$mode" == python ) && -n "${MTC_AB_BASE:-}" ]]; then
  # Checked before the build, as above; the candidate is then this tree, not another folder.
  [[ -d "$MTC_AB_BASE" ]] || { echo "$mode: MTC_AB_BASE is not a folder: $MTC_AB_BASE" >&2; exit 2; }
  [[ "$mode" == python ]] || (( $# <= 3 )) ||
    { echo "ab: with MTC_AB_BASE the candidate is this tree; give no CANDIDATE_DIR" >&2; exit 2; }
fi

# A typo in the mode costs no GPU time (it would run the full check).
modes="full quick bench engine multi lockstep python reliability sanitize repeat ab microbench envab topology neighbours profile nsys"
[[ " $modes " == *" $mode "* ]] || { echo "scripts/gpu-check.sh: unknown mode '$mode' (modes: $modes)" >&2; exit 2; }
(( $# >= 3 && $# <= 7 )) || [[ "$mode" != nsys ]] || { echo "usage: scripts/gpu-check.sh OUT_DIR nsys FILTER [FILTER...] (at most five)" >&2; exit 2; }
if [[ "$mode" == profile ]] && (( $# < 3 || ($# > 7 && ${MTC_PROFILE_RAW:-0} == 1) )); then
  echo "usage: scripts/gpu-check.sh OUT_DIR profile FILTER [FILTER...] (at most 5 with MTC_PROFILE_RAW=1)" >&2
  exit 2
fi

if [[ "$mode" == python ]]; then
  bash scripts/gpu-check-python.sh "$out" "${@:3}"
  exit $?
fi
if [[ "$mode" == topology ]]; then
  {
    step "machine"
    nvidia-smi --query-gpu=name --format=csv,noheader
    lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA|L[123])"
    step "GPUs"
    nvidia-smi topo -m
    step "probe"
    "${CC:-cc}" -O2 -Wall -pthread -o /tmp/mtc-host-topology-probe scripts/host_topology_probe.c &&
      /tmp/mtc-host-topology-probe ${3:-}
  } > "$out/topology.txt" 2>&1
  status=$?
  grep -A 50 "^histogram" "$out/topology.txt" | grep -v "^memory"
  exit $status
fi
if [[ "$mode" == reliability || "$mode" == sanitize ]]; then
  bash scripts/gpu-check-reliability.sh "$out" "$mode"
  exit $?
fi

{
  step "machine"
  nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
  nproc; "${CXX:-c++}" --version | head -1; nvcc --version | tail -2 | head -1
  python3 -c 'import torch;print("torch", torch.__version__)'
  step "build"
  # shellcheck disable=SC2086
  [[ "$mode" == bench || "$mode" == engine ]] && export MTC_TARGETS="mtc_engine_tests mtc_engine_bench mtc-bench"
  [[ "$mode" == multi ]] && export MTC_TARGETS="mtc_engine_tests mtc-bench"
  [[ "$mode" == lockstep ]] && export MTC_TARGETS="mtc_engine_tests mtc_engine_bench mtc_lockstep_copies"
  [[ "$mode" == repeat ]] && export MTC_TARGETS="mtc-bench"
  [[ "$mode" =~ ^(microbench|envab|neighbours|profile|nsys)$ ]] &&
    export MTC_TARGETS="mtc_engine_tests mtc_engine_bench"
  [[ "$mode" == ab ]] && export MTC_TARGETS="mtc-bench mtc_engine_plugin"
  # Keep going past a failed file: one call shows every error, not only the first. An A/B
  # against another tree builds nothing here: perf-ci builds both sides.
  if [[ "$mode" != ab || $# -lt 4 ]]; then
    MTC_WERROR=ON MTC_KEEP_GOING=1 bash scripts/build.sh ${MTC_CMAKE_ARGS:-} || status=1
  fi
} > "$out/build.log" 2>&1
if (( status != 0 )); then
  step "BUILD FAILED: the first errors (all of them in build.log)"
  grep -m 30 -E "error|FAILED:" "$out/build.log"
  exit 1
fi
tail -2 "$out/build.log"

if [[ "$mode" == repeat ]]; then
  count="${3:?usage: scripts/gpu-check.sh OUT_DIR repeat N [MTC-BENCH ARGS...]}"
  shift 3
  args=("$@")
  (( ${#args[@]} )) || args=(--config configs/streampetr.json)
  (( count <= 7 )) || { echo "repeat: at most 7 runs (8 files come back)"; exit 2; }
  for i in $(seq 1 "$count"); do
    step "run $i/$count: mtc-bench ${args[*]}"
    start=$(date +%s)
    md=()  # unless the arguments name a markdown file of their own
    [[ $i == 1 && " ${args[*]} " != *" --md "* && " ${args[*]} " != *" --md="* ]] &&
      md=(--md "$out/run-1.md")
    "$MTC_BUILD_DIR/mtc-bench" "${args[@]}" --quiet --json "$out/run-$i.json" "${md[@]}" \
      > "$out/last-run.txt" 2>&1 || status=1
    echo "wall time: $(( $(date +%s) - start )) s; $(grep -c warning "$out/last-run.txt") warnings"
    grep -E "warning|error" "$out/last-run.txt" | head -5
  done
  rm -f "$out/last-run.txt"
  step "done (status $status)"
  exit $status
fi

if [[ "$mode" == ab ]]; then
  count="${3:?usage: scripts/gpu-check.sh OUT_DIR ab N [CANDIDATE_DIR]}"
  candidate=("${@:4}")
  # This build is the candidate unless another tree is given (perf-ci builds that one).
  (( ${#candidate[@]} )) || export MTC_PERF_CANDIDATE_BUILD="$MTC_BUILD_DIR"
  base="${MTC_AB_BASE:-.}"
  step "in-process A/B: $count jobs, baseline ${MTC_AB_BASE:-this tree}, candidate ${candidate[*]:-this tree}"
  MTC_PERF_WORK="${MTC_PERF_WORK:-/tmp/perf-ci}" bash scripts/perf-trust.sh "$count" "$out" "$base" "${candidate[@]}" ||
    status=1
  step "done (status $status)"
  exit $status
fi

# Every suite the mode promises runs; one that was not built, crashed or failed is a failure,
# and the summary line names each with its count of passed tests.
suites=(engine workload bench compare)
[[ "$mode" =~ ^(bench|engine|multi|microbench|envab|lockstep|neighbours|profile|nsys)$ ]] && suites=(engine)
step "tests: ${suites[*]}" | tee "$out/tests.log"
summary=()
failed=()
for suite in "${suites[@]}"; do
  t="$MTC_BUILD_DIR/tests/$suite/mtc_${suite}_tests"
  if [[ ! -x "$t" ]]; then
    failed+=("$suite (not built)")
    continue
  fi
  echo "--- $t" >> "$out/tests.log"
  # The passed tests' lines left out; a test that crashes the binary is named. The raw output
  # stays in OUT_DIR while the suite runs (a hang leaves it there).
  bash scripts/run-gtest-suite.sh "$out/$suite.raw" "$t" > "$out/$suite.tmp" 2>&1
  rc=$?
  cat "$out/$suite.tmp" >> "$out/tests.log"
  passed=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\.$/\1/p' "$out/$suite.tmp")
  skipped=$(sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?(, listed below:|\.)$/\1/p' "$out/$suite.tmp" | head -1)
  rm -f "$out/$suite.tmp"
  if (( rc != 0 )) || [[ -z "$passed" ]]; then
    failed+=("$suite (exit $rc)")
  else
    summary+=("$suite ${passed}${skipped:+ (+$skipped skipped)}")
  fi
done
# Failures first, then the count of skipped tests of each suite (each skip is in tests.log).
grep -aE "^\[  FAILED  \]|Failure|^stopped" "$out/tests.log" | head -40
grep -aE "^\[  SKIPPED \] [0-9]+ tests?" "$out/tests.log"
suites_line="$(IFS=,; echo "${summary[*]}" | sed 's/,/, /g')"
if (( ${#failed[@]} )); then
  status=1
  suites_line="${suites_line:+$suites_line; }FAILED: $(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')"
else
  suites_line="$suites_line: all passed"
fi
echo "suites: $suites_line" | tee -a "$out/tests.log"
# The last line says what ran: the suites with their counts, and whether a later step failed.
finish() {
  step "done"
  local later=""
  (( status != 0 )) && (( ${#failed[@]} == 0 )) && later=" (tests); a later step FAILED, see above"
  echo "$suites_line$later"
  exit $status
}
gpus=$(nvidia-smi --list-gpus | wc -l)

# The engine's micro-benchmarks matching $1, five repetitions (further Google Benchmark flags
# after $2), into $out/$2.json and its summary appended to $out/engine_bench.md.
microbench() {
  local filter="$1" name="$2"
  shift 2
  "$MTC_BUILD_DIR/mtc_engine_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true "$@" \
    --benchmark_filter="$filter" --benchmark_out="$out/$name.json" --benchmark_out_format=json > /dev/null 2>&1 || status=1
  # A filter that matches nothing is no failure to Google Benchmark (exit 0, an empty file):
  # the check says so instead of passing on nothing.
  if ! "$MTC_PYTHON" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])).get("benchmarks") else 1)' \
      "$out/$name.json" 2> /dev/null; then
    echo "FAILED: no micro-benchmark results for '$filter' (none matched, or mtc_engine_bench wrote none)"
    status=1
    return
  fi
  "$MTC_PYTHON" scripts/summarize-microbench.py "$out/$name.json" | tee -a "$out/engine_bench.md" || status=1
}

if [[ "$mode" == microbench ]]; then
  filter="${3:?usage: scripts/gpu-check.sh OUT_DIR microbench FILTER}"
  step "engine micro-benchmarks matching $filter, interleaved"
  : > "$out/engine_bench.md"
  # glibc's memcpy changes how it stores above these sizes (the pinned upload's fill is memcpy).
  { echo "glibc's memcpy tunables:"
    /lib64/ld-linux-x86-64.so.2 --list-tunables 2> /dev/null |
      grep -E 'non_temporal_threshold|rep_movsb_threshold|rep_movsb_stop|shared_cache_size' ||
      echo "(not listed)"; } | tee -a "$out/engine_bench.md"
  microbench "$filter" engine_bench --benchmark_enable_random_interleaving=true \
    --benchmark_repetitions="${MTC_MICROBENCH_REPETITIONS:-5}"
  finish
fi

if [[ "$mode" == neighbours ]]; then
  filter="${3:?usage: scripts/gpu-check.sh OUT_DIR neighbours FILTER [ROUNDS]}"
  step "micro-benchmarks matching $filter beside busy neighbours"
  bash scripts/gpu-check-neighbours.sh "$out" "$filter" "${4:-4}" || status=1
  finish
fi

if [[ "$mode" == profile ]]; then
  : > "$out/profile-engine.md"
  profiled=0
  for filter in "${@:3}"; do
    step "profile: micro-benchmarks matching $filter"
    raw=()
    (( ++profiled )) && [[ "${MTC_PROFILE_RAW:-0}" == 1 ]] && raw=(--raw "$out/profile-engine-$profiled.raw.gz")
    # Who allocates: malloc's own callers are all operator new.
    bash scripts/profile.sh "$out/profile-engine.md" "${raw[@]}" --title "mtc_engine_bench $filter" \
      --focus 'mtc::' --callers-of '^(malloc|operator new\(\))$' -- "$MTC_BUILD_DIR/mtc_engine_bench" --benchmark_filter="$filter" \
      --benchmark_repetitions="${MTC_PROFILE_REPETITIONS:-10}" --benchmark_min_warmup_time=0.1 || status=1
  done
  finish
fi

if [[ "$mode" == nsys ]]; then
  bash scripts/gpu-check-nsys.sh "$out" "$MTC_BUILD_DIR" "${@:3}" || status=1
  finish
fi

if [[ "$mode" == envab ]]; then
  step "micro-benchmarks matching $env_filter: $pairs processes without and $pairs with $setting, in turn"
  bash scripts/gpu-check-envab.sh "$out" "$MTC_BUILD_DIR" "$setting" "$env_filter" "$pairs" || status=1
  finish
fi

if [[ "$mode" == lockstep ]]; then
  step "several GPUs at once, in one process and a process each, every copy released together"
  : > "$out/engine_bench.md"
  bash scripts/gpu-check-lockstep.sh "$out" "$MTC_BUILD_DIR" || status=1
  finish
fi

if [[ "$mode" == multi ]]; then
  step "several GPUs at once against one alone"
  bash scripts/gpu-check-multi.sh "$out" "$MTC_BUILD_DIR/mtc-bench" || status=1
  finish
fi

if [[ "$mode" == bench ]]; then
  step "engine micro-benchmarks, CPU->GPU"
  microbench 'BM_Walk/|BM_WalkThreads/1/[14]/[019]/|BM_CreateOutputs|BM_EngineCopy<Direction::kHostToDevice>/[18]/(7|15|23|31|39|71|3)/|BM_PerTensorTo<Direction::kHostToDevice>' engine_bench
  step "mtc-bench, CPU->GPU"
  "$MTC_BUILD_DIR/mtc-bench" --config configs/streampetr.json --direction h2d \
    --strategy to,memcpy_batch,engine --json "$out/streampetr-h2d.json" --md "$out/streampetr-h2d.md" \
    --quiet || status=1
  cat "$out/streampetr-h2d.md"
  finish
fi

if [[ "$mode" == engine ]]; then
  step "engine micro-benchmarks: training-loop patterns, bandwidth, mixed batch, pinned pool"
  microbench 'BM_EngineCopy<Direction::kHostToDevice>/[18]/(7|15|135|391|399|911|1423|1935)/|BM_EngineCopy<Direction::kDeviceToHost>/1/(7|135|399|911|1423|1935)/|BM_PerTensorTo|BM_LargePageableToDevice/([0-5]/0/0/0|0/0/0/[13])/0/|BM_LargePageableToDevicePerTensorTo|BM_MixedBatch|BM_PinnedPoolFootprint|BM_FreeResult' engine_bench
  step "large pageable tensors with 8 workers (MTC_WORKER_THREADS=8)"
  MTC_WORKER_THREADS=8 microbench 'BM_LargePageableToDevice/([09]/0/0/0|0/0/0/3)/0/' engine_bench_8workers
  step "mtc-bench, mixed batch"
  "$MTC_BUILD_DIR/mtc-bench" --config configs/mixed.json --strategy to,memcpy_batch,engine \
    --json "$out/mixed.json" --md "$out/mixed.md" --quiet || status=1
  cat "$out/mixed.md"
  finish
fi

if [[ "$mode" == quick ]]; then
  # A short run of every direction this host has (GPU->GPU across two GPUs when there are two).
  directions=h2d,d2h
  devices=0
  (( gpus >= 2 )) && directions=h2d,d2h,d2d && devices=0,1
  step "mtc-bench --quick, $directions on GPU $devices"
  timeout 120 "$MTC_BUILD_DIR/mtc-bench" --config configs/streampetr.json --quick --direction "$directions" \
    --devices "$devices" --json "$out/quick.json" --md "$out/quick.md" --quiet || status=1
  cat "$out/quick.md"
  finish
fi

if [[ -x "$MTC_BUILD_DIR/mtc-bench" ]]; then
  step "main benchmark"
  start=$(date +%s)
  "$MTC_BUILD_DIR/mtc-bench" --config configs/streampetr.json --json "$out/streampetr.json" \
    --md "$out/streampetr.md" --quiet || status=1
  echo "main benchmark wall time: $(( $(date +%s) - start )) s"
  # The same CPU->GPU cases with glibc's malloc tuned (more per-thread cached blocks, no heap
  # trimming between copies): how much of the engine's time is the allocator's. Console only.
  step "main benchmark, h2d, glibc malloc tuned"
  GLIBC_TUNABLES=glibc.malloc.tcache_count=1000:glibc.malloc.trim_threshold=268435456 \
    "$MTC_BUILD_DIR/mtc-bench" --config configs/streampetr.json --direction h2d --strategy to,engine --quiet || status=1
  if (( gpus >= 2 )); then
    step "two GPUs at once, and GPU->GPU across them"
    "$MTC_BUILD_DIR/mtc-bench" --config configs/streampetr.json --devices 0,1 --direction h2d,d2h,d2d \
      --json "$out/streampetr-2gpu.json" --quiet || status=1
  fi
  source scripts/nsys-env.sh
  if find_nsys && unpack_nsys_libs /tmp/nsys-libs; then
    step "nsys profile"
    "$nsys" profile -t cuda,nvtx,osrt --capture-range=cudaProfilerApi --capture-range-end=stop -o /tmp/mtc-profile -f true \
      "$MTC_BUILD_DIR/mtc-bench" --config configs/streampetr.json --profile --quiet > /dev/null 2>&1
    "$nsys" stats -r nvtx_sum,cuda_api_sum /tmp/mtc-profile.nsys-rep > "$out/nsys_stats.txt" 2>&1 || status=1
    head -60 "$out/nsys_stats.txt"
  fi
fi
finish
