#!/usr/bin/env bash
# Builds everything and runs the test suites, then smoke-tests the main job: on a machine
# without a GPU the GPU tests skip (saying so) and mtc-bench runs the CPU->CPU direction; the
# report it writes and every shipped config are validated against their JSON Schemas; then the
# plots are drawn, and the Python module is installed into the venv and its tests run (the GPU ones skip, saying so).
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

echo "=== plots of the synthetic reports and of a comparison"
"$MTC_PYTHON" tests/scripts/plot_test.py "$MTC_BUILD_DIR/mtc-bench"


echo "=== Python module: pip install --no-build-isolation ., then its tests"
start=$(date +%s)
"$MTC_PYTHON" -m pip install -q --no-build-isolation --no-deps --disable-pip-version-check .
echo "install took $(( $(date +%s) - start )) s"
"$MTC_PYTHON" -m pytest -q -rs -p no:cacheprovider tests/python
"$MTC_PYTHON" scripts/bench_python.py --warmup 1 --runs 2 --iters 3 --json "$smoke/bench_python.json" > /dev/null
echo "=== all checks passed"
