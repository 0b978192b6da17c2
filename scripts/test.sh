#!/usr/bin/env bash
# Builds everything and runs the test suites, then smoke-tests the main job: on a machine
# without a GPU the GPU tests skip (saying so) and mtc-bench runs the CPU->CPU direction; the
# report it writes and every shipped config are validated against their JSON Schemas.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build.sh

echo "=== unit tests"
ctest --test-dir "$MTC_BUILD_DIR" --output-on-failure -j "${MTC_JOBS:-$(nproc)}" --timeout 600

echo "=== a separate project against the installed engine"
bash scripts/test-consumer.sh

echo "=== shipped configs against configs/spec.schema.json"
"$MTC_PYTHON" scripts/check-configs.py

echo "=== smoke run of the main job"
smoke="$MTC_BUILD_DIR/smoke"
mkdir -p "$smoke"
"$MTC_BUILD_DIR/mtc-bench" --config configs/streampetr.json --min-time 0.05 --min-samples 5 --warmup 1 \
  --json "$smoke/report.json" --md "$smoke/report.md"
"$MTC_PYTHON" scripts/check-report.py "$smoke/report.json"
echo "=== all checks passed"
