#!/usr/bin/env bash
# Several GPUs copying at once, against one GPU alone, all in one call: run by
# `scripts/gpu-check.sh OUT_DIR multi` on a host with two or more GPUs, after its build and the
# engine's tests. Each GPU copies the reference batch (configs/streampetr.json, CPU->GPU and
# GPU->CPU, hot and step) as:
#   alone     mtc-bench --devices 0: one GPU in the process (the yardstick);
#   together  --devices 0,...,N-1: one thread per GPU in one process, each GPU's copies on a
#             worker pool of its own;
#   shared    together with MTC_WORKER_THREADS=4N: as many workers, in one pool that every GPU
#             shares (as before the pools were per device);
#   spin      together with MTC_WORKER_SPIN_US=2000: idle workers spin 2 ms before sleeping
#             instead of 200 us (tells wake-ups between a GPU's copies from other costs);
#   procs     N processes, one per GPU (--devices k), started together: what a process shares
#             against what the host shares.
# The five run in turn, REPS times (default: MTC_MULTI_REPS, else 4), so that the host's
# changes of state fall on all of them; only the engine is measured (the ratios are its own,
# and `to` would take most of the time). Writes multi.md (scripts/multi_gpu_summary.py: per-GPU
# medians and ratios to alone) and multi-reports.tar.gz (every report) to OUT_DIR.
#
#   scripts/gpu-check-multi.sh OUT_DIR MTC_BENCH [REPS]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/gpu-check-multi.sh OUT_DIR MTC_BENCH [REPS]}"
bench="${2:?usage: scripts/gpu-check-multi.sh OUT_DIR MTC_BENCH [REPS]}"
reps="${3:-${MTC_MULTI_REPS:-4}}"
python="${MTC_PYTHON:-python3}"
gpus=$(nvidia-smi --list-gpus | wc -l)
if (( gpus < 2 )); then
  echo "multi: this host has $gpus GPU(s); the comparison needs two or more"
  exit 2
fi
all=$(seq -s, 0 $((gpus - 1)))
args=(--config configs/streampetr.json --direction h2d,d2h --pattern hot,step --strategy engine
      --processes 1 --max-rounds 10 --quiet)
reports="$(mktemp -d)"
status=0
pairs=()
run() {  # LABEL FILE [ENV=VALUE ...] -- MTC-BENCH ARGS
  local label="$1" file="$reports/$2"
  shift 2
  local envs=()
  while [[ "$1" != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$bench" "${args[@]}" "$@" --json "$file" > "$file.log" 2>&1 || {
    status=1
    echo "multi: $label failed:"
    tail -5 "$file.log"
  }
  pairs+=("$label=$file")
}
for rep in $(seq 1 "$reps"); do
  echo "=== repetition $rep/$reps ($(date -u +%T))"
  run alone "alone-$rep.json" -- --devices 0
  run together "together-$rep.json" -- --devices "$all"
  run shared "shared-$rep.json" MTC_WORKER_THREADS=$((4 * gpus)) -- --devices "$all"
  run spin "spin-$rep.json" MTC_WORKER_SPIN_US=2000 -- --devices "$all"
  pids=()
  for g in $(seq 0 $((gpus - 1))); do
    "$bench" "${args[@]}" --devices "$g" --json "$reports/procs-$rep-gpu$g.json" \
      > "$reports/procs-$rep-gpu$g.log" 2>&1 &
    pids+=($!)
  done
  for g in $(seq 0 $((gpus - 1))); do
    if wait "${pids[$g]}"; then
      pairs+=("procs=$reports/procs-$rep-gpu$g.json")
    else
      status=1
      echo "multi: the process of GPU $g failed:"
      tail -5 "$reports/procs-$rep-gpu$g.log"
    fi
  done
done
"$python" scripts/multi_gpu_summary.py "${pairs[@]}" --md "$out/multi.md" || status=1
tar -czf "$out/multi-reports.tar.gz" -C "$reports" . || status=1
exit $status
