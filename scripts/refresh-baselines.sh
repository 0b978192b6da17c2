#!/usr/bin/env bash
# Measures the shipped CI cases (configs/ci/cases) on this machine's GPU and stores the reports
# as its stored baseline: OUT_ROOT/<gpu-model>/<config>-<n>.json, with the model's name as a
# folder ("NVIDIA H100 80GB HBM3" -> h100-80gb-hbm3). Run it on the GPU host on the current main.
#
#   scripts/refresh-baselines.sh [OUT_ROOT]      # default: results/baselines
#
# The runs use the full rounds (not --quick): a stored baseline is measured once and compared
# against many times. Builds mtc-bench into $MTC_BUILD_DIR (default build-gpu) first; extra
# CMake options come from MTC_CMAKE_ARGS. Compare a later run against it with
#   mtc-bench compare results/baselines/<gpu-model> REPORT.json
# which sees reports from another day or host and compares same-run ratios only (the speedups
# over `to` and `memcpy_batch`), with thresholds from their measured spread between hosts.
set -euo pipefail
cd "$(dirname "$0")/.."
root="${1:-results/baselines}"
export MTC_BUILD_DIR="${MTC_BUILD_DIR:-build-gpu}" MTC_PYTHON="${MTC_PYTHON:-python3}"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"

gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)" ||
  { echo "refresh-baselines: no GPU (nvidia-smi failed): stored baselines are per GPU model" >&2; exit 2; }
[[ -n "$gpu" ]] || { echo "refresh-baselines: nvidia-smi lists no GPU" >&2; exit 2; }
model="$(echo "$gpu" | sed -e 's/^NVIDIA //' | tr '[:upper:]' '[:lower:]' | sed -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^-//' -e 's/-$//')"
folder="$root/$model"

# shellcheck disable=SC2086
MTC_TARGETS=mtc-bench bash scripts/build.sh -DMTC_BUILD_TESTS=OFF -DMTC_BUILD_MICROBENCH=OFF ${MTC_CMAKE_ARGS:-} \
  > /tmp/refresh-baselines-build.log 2>&1 || { tail -40 /tmp/refresh-baselines-build.log >&2; exit 3; }

mkdir -p "$folder"
rm -f "$folder"/*.json
n=0
while read -r config options; do
  [[ -z "$config" || "$config" == \#* ]] && continue
  report="$folder/${config%.json}-$n.json"
  # shellcheck disable=SC2086
  "$MTC_BUILD_DIR/mtc-bench" --config "configs/$config" $options --quiet --json "$report"
  echo "refresh-baselines: $gpu: wrote $report"
  n=$((n + 1))
done < configs/ci/cases
