#!/usr/bin/env bash
# Several GPUs at once, in one process and in one process per GPU, every copy released at the
# same moment in both: what one process shares, told apart from what the host shares. Run by
# `scripts/gpu-check.sh OUT_DIR lockstep` on a host with two or more GPUs, after its build and
# the engine's tests.
#   - in one process: mtc_engine_bench's BM_MultiGpuCopy, a thread per GPU (a worker pool per
#     GPU), CPU->GPU and GPU->CPU: every GPU against GPU 0 alone (modes 0 and 2), and every GPU
#     or one alone drawn at random for each iteration (mode 4) or run of 32 (mode 5), mode 5 also
#     in training steps with a sleeping and a busy gap (variants 5 and 6), and the walk of a
#     CPU->GPU copy alone (BM_MultiGpuParts, in runs of 32); five repetitions in random
#     interleaving;
#   - one process per GPU: mtc_lockstep_copies, CUDA_VISIBLE_DEVICES=g each, every GPU at once or
#     one GPU alone, drawn at random for each run of MTC_LOCKSTEP_RUN iterations (default 32: each
#     kind a steady loop, as a training loop's): ITERATIONS iterations (default 2000) of the hot
#     pattern, half as many training steps with each gap (2 ms each, outside the clock), and the
#     walk alone in the hot pattern (does the walk's growth come from the process or the host?).
# Both with every GPU of the host, then (on a host with more than two) with GPUs 0 and 1. The
# host's CPU topology (sockets, cores, threads per core) heads the lines: it says whether threads
# of several GPUs can share a core.
# MTC_LOCKSTEP_FILTER replaces the in-process benchmarks' filter (other modes, spins, variants).
# MTC_LOCKSTEP_PATTERNS (default "hot step-sleep step-busy") picks the processes' patterns, and
# MTC_LOCKSTEP_PLACEMENTS (default "any") where they run: "any" wherever the scheduler puts them,
# "slice" each GPU's process confined (taskset) to its own equal slice of the host's CPUs, as
# BM_MultiGpuCopy's variant 10 confines each GPU's thread and workers in one process.
# MTC_LOCKSTEP_PRELOAD (a shared library's path, say jemalloc's) is preloaded into every benchmark
# process, in one process and per GPU alike; the output's first lines name it.
# Appends its lines to OUT_DIR/engine_bench.md and writes lockstep.json (every rank's times).
#
#   scripts/gpu-check-lockstep.sh OUT_DIR BUILD_DIR [ITERATIONS]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/gpu-check-lockstep.sh OUT_DIR BUILD_DIR [ITERATIONS]}"
build="${2:?usage: scripts/gpu-check-lockstep.sh OUT_DIR BUILD_DIR [ITERATIONS]}"
iterations="${3:-2000}"
run="${MTC_LOCKSTEP_RUN:-32}"  # iterations per draw of who copies: steady loops of each kind
python="${MTC_PYTHON:-python3}"
gpus=$(nvidia-smi --list-gpus | wc -l)
if (( gpus < 2 )); then
  echo "lockstep: this host has $gpus GPU(s); the comparison needs two or more"
  exit 2
fi
status=0
times="$(mktemp -d)"
cpu_slice() {  # GPU $1's share of the CPUs this script may run on, in $2 equal slices
  "$python" -c 'import os, sys
cpus, (g, n) = sorted(os.sched_getaffinity(0)), map(int, sys.argv[1:])
print(",".join(map(str, cpus[len(cpus) * g // n:len(cpus) * (g + 1) // n])))' "$1" "$2"
}
preload=()
malloc="the C library's"
if [[ -n "${MTC_LOCKSTEP_PRELOAD:-}" ]]; then
  [[ -r "$MTC_LOCKSTEP_PRELOAD" ]] || { echo "lockstep: cannot read MTC_LOCKSTEP_PRELOAD=$MTC_LOCKSTEP_PRELOAD" >&2; exit 2; }
  preload=(env "LD_PRELOAD=$MTC_LOCKSTEP_PRELOAD")
  malloc="LD_PRELOAD=$MTC_LOCKSTEP_PRELOAD"
fi
{
  echo "--- malloc: $malloc"
  echo "--- CPU topology"
  lscpu | grep -E '^(Model name|Socket|Core|Thread|CPU\(s\)|NUMA node)' | sed 's/  */ /g'
} | tee -a "$out/engine_bench.md"
# Every GPU of the host, then the first two on a host with more (a 2-GPU figure from the same call).
counts=("$gpus")
(( gpus > 2 )) && counts+=(2)
for n in "${counts[@]}"; do
  visible=$(seq -s, 0 $((n - 1)))
  echo "--- $n GPUs ($visible)" | tee -a "$out/engine_bench.md"
  CUDA_VISIBLE_DEVICES=$visible "${preload[@]}" "$build/mtc_engine_bench" --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true \
    --benchmark_filter="${MTC_LOCKSTEP_FILTER:-BM_MultiGpuCopy/[01]/([0245]/200/0|5/200/[56])/|BM_MultiGpuParts/0/2/[03]/}" \
    --benchmark_out="$times/in-process.json" --benchmark_out_format=json > /dev/null 2>&1 || status=1
  "$python" scripts/summarize-microbench.py "$times/in-process.json" | tee -a "$out/engine_bench.md"
  rm -f "$times/in-process.json"
  for placement in ${MTC_LOCKSTEP_PLACEMENTS:-any}; do
    for pattern in ${MTC_LOCKSTEP_PATTERNS:-hot step-sleep step-busy}; do
      count=$([[ $pattern == hot ]] && echo "$iterations" || echo $((iterations / 2)))
      directions=(h2d d2h)
      [[ $pattern == hot ]] && directions+=(walk)
      for direction in "${directions[@]}"; do
        key="$n-$direction-$pattern"
        [[ $placement == any ]] || key="${placement}_$key"
        name="/mtc-lockstep-$$-$key"
        rm -f "/dev/shm${name}"
        pids=()
        for g in $(seq 0 $((n - 1))); do
          confine=()
          [[ $placement == slice ]] && confine=(taskset -c "$(cpu_slice "$g" "$n")")
          CUDA_VISIBLE_DEVICES=$g timeout 300 "${confine[@]}" "${preload[@]}" \
            "$build/mtc_lockstep_copies" "$g" "$n" \
            "$name" "$direction" "$count" "$times/$key-$g.json" "$run" "$pattern" &
          pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid" || status=1; done
        rm -f "/dev/shm${name}"
        case $direction in
          h2d) label="CPU->GPU $pattern" ;;
          d2h) label="GPU->CPU $pattern" ;;
          *) label="CPU->GPU copy's walk alone (no CUDA call), $pattern" ;;
        esac
        [[ $placement == any ]] || label="$label, each process on its CPU slice"
        "$python" scripts/lockstep_summary.py "$label" "$times/$key"-*.json \
          | tee -a "$out/engine_bench.md" || status=1
      done
    done
  done
done
"$python" - "$times" "$out/lockstep.json" <<'PY'
import json, pathlib, sys
runs = {p.stem: json.loads(p.read_text()) for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json"))}
pathlib.Path(sys.argv[2]).write_text(json.dumps(runs))
PY
rm -rf "$times"
exit $status
