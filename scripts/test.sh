#!/usr/bin/env bash
# Builds everything and runs the test suites, then smoke-tests the main job: on a machine
# without a GPU the GPU tests skip (saying so) and mtc-bench runs the CPU->CPU direction; the
# report it writes and every shipped config are validated against their JSON Schemas, the
# documentation's links and paths, the layering of src/ and the shell scripts' syntax are
# checked; then the plots are drawn, the CI performance job (scripts/perf-ci.sh) runs end to end
# in its CPU smoke mode, and the Python module is installed into the venv and its tests run (the
# GPU ones skip, saying so).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build.sh

echo "=== unit tests"
ctest --test-dir "$MTC_BUILD_DIR" --output-on-failure -j "${MTC_JOBS:-$(nproc)}" --timeout 600

echo "=== the revision a build names (cmake/MtcGitRevision.cmake, mtc-bench --version)"
bash tests/scripts/revision_test.sh "$MTC_BUILD_DIR/mtc-bench"

echo "=== a separate project against the installed engine"
bash scripts/test-consumer.sh

echo "=== shipped configs against configs/spec.schema.json"
"$MTC_PYTHON" scripts/check-configs.py

echo "=== links and paths in README.md, docs/ and the other READMEs"
"$MTC_PYTHON" tests/scripts/doc_links_test.py

echo "=== the layering of src/: no folder includes one above it"
"$MTC_PYTHON" tests/scripts/layering_test.py

echo "=== every shell script parses (bash -n): the GPU host's scripts run nowhere else"
for script in scripts/*.sh tests/scripts/*.sh .ci/run; do bash -n "$script"; done

echo "=== scripts/run-gtest-suite.sh (the GPU host's test stage) on stand-in test binaries"
bash tests/scripts/run_gtest_suite_test.sh

echo "=== scripts/perf-ci.sh refuses bad settings before it builds"
bash tests/scripts/perf_ci_settings_test.sh

echo "=== scripts/multi_gpu_summary.py on synthetic reports"
"$MTC_PYTHON" tests/scripts/multi_gpu_summary_test.py

echo "=== scripts/summarize-microbench.py on a synthetic benchmark file"
"$MTC_PYTHON" tests/scripts/summarize_microbench_test.py

echo "=== scripts/module_vs_engine.py on synthetic reports"
"$MTC_PYTHON" tests/scripts/module_vs_engine_test.py

echo "=== the Python module's GPU check (scripts/gpu-check-python.sh) with stand-ins: a failed install"
"$MTC_PYTHON" tests/scripts/gpu_check_python_test.py

echo "=== scripts/process_cpus.py: a process's threads confined to CPUs drawn per run"
"$MTC_PYTHON" tests/scripts/process_cpus_test.py

echo "=== scripts/microbench_env_ab.py on synthetic benchmark files"
"$MTC_PYTHON" tests/scripts/microbench_env_ab_test.py

echo "=== the Nsight Systems check (scripts/gpu-check-nsys.sh) with stand-ins, and its summary"
"$MTC_PYTHON" tests/scripts/nsys_check_test.py

echo "=== the busy-neighbours check (scripts/gpu-check-neighbours.sh) with stand-ins, and its summary"
"$MTC_PYTHON" tests/scripts/neighbours_test.py

echo "=== the sampling profiler (scripts/profile.sh) on a program of known shares, and its summary"
"$MTC_PYTHON" tests/scripts/cpu_profile_test.py
"$MTC_PYTHON" tests/scripts/cpu_profile_coverage_test.py

echo "=== mtc_lockstep_copies (processes that meet for every copy) and scripts/lockstep_summary.py"
"$MTC_PYTHON" tests/scripts/lockstep_test.py "$MTC_BUILD_DIR/mtc_lockstep_copies"

echo "=== smoke run of the main job"
smoke="$MTC_BUILD_DIR/smoke"
mkdir -p "$smoke"
"$MTC_BUILD_DIR/mtc-bench" --config configs/streampetr.json --min-time 0.05 --min-samples 5 --warmup 1 \
  --json "$smoke/report.json" --md "$smoke/report.md"
"$MTC_PYTHON" scripts/check-report.py "$smoke/report.json"

echo "=== plots of the synthetic reports and of a comparison"
"$MTC_PYTHON" tests/scripts/plot_test.py "$MTC_BUILD_DIR/mtc-bench"

echo "=== the CI performance job in smoke mode: HEAD against this tree, h2h, both modes"
# The candidate reuses this build; the baseline (HEAD) builds in its own worktree, its engine as a
# loadable library for the in-process mode and its mtc-bench for the processes mode (ccache
# serves what this build compiled). Without git history (a tarball), this tree is both sides.
perf="$MTC_BUILD_DIR/perf-ci"
base=HEAD
git rev-parse --quiet --verify HEAD > /dev/null 2>&1 || base=.
# Outside smoke mode, a machine without a GPU ends the job at once: it must not judge CPU copies.
if ! compgen -G '/dev/nvidia[0-9]*' > /dev/null; then
  rc=0
  env -u MTC_PERF_SMOKE -u MTC_PERF_MODE MTC_PERF_WORK="$perf" bash scripts/perf-ci.sh "$base" \
    2> "$perf.no-gpu.err" || rc=$?
  grep -q "no GPU on this machine" "$perf.no-gpu.err" && (( rc == 2 )) ||
    { echo "perf-ci without a GPU: expected exit 2 and its message, got $rc:"; cat "$perf.no-gpu.err"; exit 1; }
  echo "perf-ci outside smoke mode without a GPU: exit 2 before any build, as it should"
fi
for mode in in-process processes; do
  start=$(date +%s)
  MTC_PERF_MODE=$mode MTC_PERF_SMOKE=1 MTC_PERF_FAIL_ON=none MTC_PERF_CANDIDATE_BUILD="$MTC_BUILD_DIR" \
    MTC_PERF_WORK="$perf" MTC_PERF_OUT="$perf/out-$mode" MTC_PERF_JOB=ci-smoke bash scripts/perf-ci.sh "$base"
  echo "perf-ci smoke ($mode) took $(( $(date +%s) - start )) s"
  "$MTC_PYTHON" - "$perf/out-$mode/compare.json" "$mode" << 'EOF'
import json, sys
doc, mode = json.load(open(sys.argv[1])), sys.argv[2]
method = {"in-process": "in_process", "processes": "paired"}[mode]
assert doc["method"] == method, (doc["method"], doc["notes"])
rounds = {"in-process": 6, "processes": 3}[mode]  # in-process: 3 rounds in each of 2 processes
assert doc["cases"] and all(c["rounds"] == rounds for c in doc["cases"]), f"every case paired over {rounds} rounds"
if mode == "in-process":
    assert all(c["strategy"] == "engine@cand" and c["baseline_strategy"] == "engine@base" for c in doc["cases"])
else:
    assert doc["ab_job"] == "ci-smoke"
print(f'perf-ci smoke ({mode}): {len(doc["cases"])} cases compared, {doc["counts"]}, '
      f'could see {doc["detectable"] * 100:.1f} %')
EOF
done

echo "=== Python module: pip install --no-build-isolation ., then its tests"
start=$(date +%s)
"$MTC_PYTHON" -m pip install -q --no-build-isolation --no-deps --disable-pip-version-check .
echo "install took $(( $(date +%s) - start )) s"
"$MTC_PYTHON" -m pytest -q -rs -p no:cacheprovider tests/python
"$MTC_PYTHON" scripts/bench_python.py --warmup 1 --runs 2 --iters 3 --json "$smoke/bench_python.json" > /dev/null
echo "=== all checks passed"
