#!/usr/bin/env bash
# The engine's micro-benchmarks matching FILTER in PAIRS pairs of processes, without and then
# with the environment setting NAME=VALUE, three repetitions each in random interleaving, the
# sides compared process by process (scripts/microbench_env_ab.py): for settings a process reads
# once at its start (GLIBC_TUNABLES, MTC_WORKER_THREADS), which no benchmark can switch inside one
# process. Called by scripts/gpu-check.sh (mode "envab") after its build and the engine's tests,
# which check the arguments before the build.
#
#   scripts/gpu-check-envab.sh OUT_DIR BUILD_DIR NAME=VALUE FILTER PAIRS
#
# Writes OUT_DIR/env_ab.md and env_ab.json. The processes share 6 minutes, so that a filter
# matching cases too long for them ends the check with a message inside a GPU host's 10-minute
# call (the build and tests take ~2) instead of past it: a process that runs past its share ends
# the check (exit 1).
set -uo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/gpu-check-envab.sh OUT_DIR BUILD_DIR NAME=VALUE FILTER PAIRS"
out="${1:?$usage}" build="${2:?$usage}" setting="${3:?$usage}" filter="${4:?$usage}" pairs="${5:?$usage}"
python="${MTC_PYTHON:-python3}"
runs="$(mktemp -d)"
trap 'rm -rf "$runs"' EXIT
files=()
limit=$(( 360 / (2 * pairs) ))
for i in $(seq 1 "$pairs"); do
  for side in without with; do
    files+=("$runs/$side-$i.json")
    with=()
    [[ "$side" == with ]] && with=("$setting")
    timeout "$limit" env "${with[@]}" "$build/mtc_engine_bench" --benchmark_repetitions=3 \
      --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
      --benchmark_filter="$filter" --benchmark_out="${files[-1]}" --benchmark_out_format=json \
      > /dev/null 2>&1
    rc=$?
    if (( rc == 124 )); then
      echo "envab: a process ran past its $limit s (6 minutes over $(( 2 * pairs ))); match fewer or shorter cases"
    elif (( rc != 0 )); then
      echo "envab: mtc_engine_bench exited $rc ($side $setting, process pair $i)"
    fi
    (( rc == 0 )) || exit 1
  done
done
"$python" scripts/microbench_env_ab.py "$setting" "$out/env_ab.md" "$out/env_ab.json" "${files[@]}"
