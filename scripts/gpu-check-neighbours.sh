#!/usr/bin/env bash
# What busy neighbours cost the engine on this host: the micro-benchmarks matching FILTER, on
# GPU 0, run alone ("none") and beside THREADS threads of scripts/busy_cpus.c of each kind (pause
# spin-waits as the engine's idle workers make; tpause waits where the CPU has WAITPKG;
# arithmetic; memory writes). On a host of several GPUs also beside the engine's hot copy on
# every other GPU, a process each: "copies" starts them seconds before the measurement, so that
# they copy through it (do other GPUs' copies cost a GPU's copy more than as many busy threads?);
# "starts" starts them again and again, each making its CUDA context and pools, copying a moment
# and ending (ranks of a job that start while others copy). The kinds come in a new random order
# each round, so that every kind sees the same stretch of the host's time. Called by
# scripts/gpu-check.sh (mode "neighbours") after its build and the engine's tests.
#
#   scripts/gpu-check-neighbours.sh OUT_DIR FILTER [ROUNDS]     (default 4 rounds)
#   MTC_NEIGHBOUR_THREADS (default: half the CPUs)
#   MTC_NEIGHBOUR_KINDS (default: "none pause alu memory copies starts tpause"; those the host
#   cannot have are left out)
#
# Writes OUT_DIR/neighbours.md and neighbours.json (scripts/neighbours_summary.py says what they
# hold: per benchmark and kind the ratios to the round's run alone; per kind the CPU time that
# the hypervisor took and that the VM kept busy).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/gpu-check-neighbours.sh OUT_DIR FILTER [ROUNDS]}"
filter="${2:?usage: scripts/gpu-check-neighbours.sh OUT_DIR FILTER [ROUNDS]}"
rounds="${3:-4}"
threads="${MTC_NEIGHBOUR_THREADS:-$(( $(nproc) / 2 ))}"
bench="${MTC_BUILD_DIR:-build-gpu}/mtc_engine_bench"
[[ $rounds =~ ^[1-9][0-9]?$ ]] || { echo "neighbours: ROUNDS must be 1 to 99 (got '$rounds')" >&2; exit 2; }
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "neighbours: MTC_NEIGHBOUR_THREADS must be a count (got '$threads')" >&2; exit 2; }
[[ -x $bench ]] || { echo "neighbours: $bench is not built" >&2; exit 2; }
work=$(mktemp -d)
neighbours=()
stop_neighbours() {
  local pid
  for pid in "${neighbours[@]}"; do
    kill -- -"$pid" 2> /dev/null || kill "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
  done
  neighbours=()
}
# Nothing outlives the check: an interrupted run stops its neighbours too.
trap 'stop_neighbours; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

flags=(-O2 -pthread)
"${CC:-cc}" -mwaitpkg -E -x c /dev/null > /dev/null 2>&1 && flags+=(-mwaitpkg)
"${CC:-cc}" "${flags[@]}" -o "$work/busy_cpus" scripts/busy_cpus.c || exit 1
read -r -a wanted <<< "${MTC_NEIGHBOUR_KINDS:-none pause alu memory copies starts tpause}"
gpus=$(nvidia-smi --list-gpus 2> /dev/null | wc -l)
kinds=()
for kind in "${wanted[@]}"; do
  case $kind in
    none | pause | alu | memory) kinds+=("$kind") ;;
    copies | starts) if (( gpus >= 2 )); then kinds+=("$kind"); else echo "$kind left out: one GPU"; fi ;;
    tpause)
      if "$work/busy_cpus" 1 1 tpause 2> "$work/tpause.err"; then
        kinds+=(tpause)
      else
        echo "tpause left out: $(cat "$work/tpause.err")"
      fi
      ;;
    *) echo "MTC_NEIGHBOUR_KINDS: unknown kind '$kind'" >&2; exit 2 ;;
  esac
done
# Every other GPU's hot copy, each in a process and session of its own, so that one kill stops
# a neighbour with all it started. The case's own minimum time (0.3 s a repetition) governs it
# whatever --benchmark_min_time says: "copies" repeats it (one process, until killed or 10
# minutes), "starts" runs it once per process, process after process.
copy_filter='BM_EngineCopy<Direction::kHostToDevice>/1/7/'
start_copies() {
  local g
  for g in $(seq 1 $(( gpus - 1 ))); do
    CUDA_VISIBLE_DEVICES=$g setsid timeout 600 bash -c \
      'while :; do "$0" --benchmark_filter="$1" --benchmark_repetitions="$2" > /dev/null 2>&1; done' \
      "$bench" "$copy_filter" "$1" &
    neighbours+=($!)
  done
}
for round in $(seq 1 "$rounds"); do
  for kind in $(printf '%s\n' "${kinds[@]}" | shuf); do
    if [[ $kind == copies ]]; then
      start_copies 2000
      sleep 8  # their CUDA start and warm-up: the measurement sees them copying
    elif [[ $kind == starts ]]; then
      start_copies 1
      sleep 1
    elif [[ $kind != none ]]; then
      "$work/busy_cpus" "$threads" 600 "$kind" &
      neighbours+=($!)
      sleep 0.3
    fi
    head -1 /proc/stat > "$work/$round-$kind.stat"
    # The warm-up keeps a fresh process's first copies (its pools and streams made) out of the
    # figures: without it, runs beside processes starting on other GPUs fitted first copies of
    # 0.35-0.7 s
    # (results/notes/2026-11-28-morning.md).
    CUDA_VISIBLE_DEVICES=0 "$bench" --benchmark_filter="$filter" --benchmark_repetitions=2 \
      --benchmark_min_warmup_time=0.1 \
      --benchmark_out="$work/$round-$kind.json" --benchmark_out_format=json > "$work/bench.log" 2>&1
    bench_status=$?
    head -1 /proc/stat >> "$work/$round-$kind.stat"
    stop_neighbours
    if (( bench_status != 0 )); then
      echo "round $round, $kind: mtc_engine_bench failed ($bench_status); its last lines:"
      tail -5 "$work/bench.log"
      exit 1
    fi
  done
  echo "round $round of $rounds done ($(date -u +%T))"
done

"${MTC_PYTHON:-python3}" scripts/neighbours_summary.py "$work" "$threads" "$out/neighbours.md" \
  "$out/neighbours.json" "${kinds[@]}"
