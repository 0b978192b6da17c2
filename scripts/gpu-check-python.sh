#!/usr/bin/env bash
# The Python module's GPU check, run by `scripts/gpu-check.sh OUT_DIR python` on the GPU host:
# install the module into python3's environment, run tests/python (GPU tests included) and
# scripts/bench_python.py (with the arguments after OUT_DIR). Writes four files to OUT_DIR:
# python-build.log, pytest.log, bench_python.md, bench_python.json.
#
# The host has no network: pytest (and optionally numpy) come from wheels downloaded on a CPU
# machine into .carry/wheels (`pip download -d .carry/wheels pytest`), unpacked onto PYTHONPATH
# when python3 lacks them. Without pip, the module is built with CMake and put on PYTHONPATH.
# The original package is timed beside mtc (bench_python.py --original) when its source folder
# was put at .carry/original/multi_tensor_copier (a copy of that folder of its repository; it is
# built with scripts/build_original.py, its log appended to python-build.log).
# MTC_PYTHON_TESTS=0 leaves the tests out (an A/B or a profile of a tree whose tests passed on
# this kind of host already: about 4 of the call's minutes); the last line then says so.
# With MTC_AB_BASE=DIR (a source tree, e.g. `git archive` of the commit before a change), DIR's
# module is built and installed as mtc_base (scripts/install_module_as.py) and timed beside this
# tree's, interleaved in one process (bench_python.py --baseline): an A/B of the module, each of
# its runs with the process confined to 8 CPUs drawn for it (--ab-cpus N among the arguments
# changes that).
# With MTC_ENGINE_STEP=1, mtc_engine_bench is built too and times the C++ engine's step after a
# sleep and after a busy gap (BM_EngineCopy 399 and 1423, five repetitions) into a fifth file,
# engine_step.json; scripts/module_vs_engine.py appends the module's step over the engine's, with
# and without the module's closing synchronize, to bench_python.md.
# With MTC_PYTHON_PROFILE=1, the module's calls are then profiled (scripts/profile.sh; the host has
# no perf) with scripts/bench_python_overhead.py on the GPU (without torch's yardstick beside the
# calls, which would crowd the main thread's samples), back to back and as a training step's
# (a 2 ms sleep, 8 batches in turn), into another file, profile-python.md: the samples with mtc::
# on their stack, those in the GIL's functions, and those in a handle's drop, in every thread.
# MTC_PROFILE_RAW=1 also keeps both raw profiles (profile-python-*.raw.gz, two more files).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/gpu-check-python.sh OUT_DIR [BENCH_PYTHON ARGS...]}"
bench_args=("${@:2}")
mkdir -p "$out"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" MTC_JOBS="${MTC_JOBS:-$(nproc)}"
export MTC_PYTHON_BUILD_DIR="${MTC_PYTHON_BUILD_DIR:-build-gpu-python}"
status=0
installed=1  # 0 once the module's build, install or import fails: nothing then runs against it
step() { echo "=== $* ($(date -u +%T))"; }

{
  step "machine"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)'
  step "install the module"
  start=$(date +%s)
  if python3 -m pip --version; then
    python3 -m pip install --no-build-isolation --no-deps --disable-pip-version-check . || installed=0
  else
    echo "no pip in python3's environment: building with CMake onto PYTHONPATH instead"
    cmake -S . -B "$MTC_PYTHON_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
      -DPython_EXECUTABLE="$(command -v python3)" -DMTC_BUILD_PYTHON=ON -DMTC_BUILD_BENCH=OFF \
      -DMTC_BUILD_TESTS=OFF -DMTC_BUILD_MICROBENCH=OFF &&
      cmake --build "$MTC_PYTHON_BUILD_DIR" -j "$MTC_JOBS" --target mtc_python || installed=0
    export PYTHONPATH="$PWD/$MTC_PYTHON_BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
  fi
  echo "install took $(( $(date +%s) - start )) s"
  for module in pytest numpy; do
    python3 -c "import $module" 2>/dev/null && continue
    if compgen -G ".carry/wheels/*.whl" > /dev/null; then
      echo "$module missing: unpacking .carry/wheels onto PYTHONPATH"
      for wheel in .carry/wheels/*.whl; do python3 -m zipfile -e "$wheel" /tmp/mtc-pylibs; done
      export PYTHONPATH="/tmp/mtc-pylibs${PYTHONPATH:+:$PYTHONPATH}"
      break
    fi
  done
  # Run from outside the tree, so `import mtc` finds the installed module, not src/python.
  (cd /tmp && python3 -c 'import mtc; print("mtc", mtc.__version__, "from", mtc.__file__)') || installed=0
} > "$out/python-build.log" 2>&1  # a group, not a subshell: its PYTHONPATH stays
tail -4 "$out/python-build.log"
if (( installed == 0 )); then
  # An older mtc installed earlier would still import: tests and timings would be of it.
  echo "python: the module did NOT build or install (python-build.log): nothing run"
  exit 1
fi

step "pytest tests/python" | tee "$out/pytest.log"
ran=()  # what ran, for the last line
if [[ "${MTC_PYTHON_TESTS:-1}" == 0 ]]; then
  echo "not run: MTC_PYTHON_TESTS=0" | tee -a "$out/pytest.log"
  ran+=("pytest NOT RUN (MTC_PYTHON_TESTS=0)")
elif python3 -c "import pytest" 2>/dev/null; then
  python3 -m pytest -v -rs -p no:cacheprovider tests/python >> "$out/pytest.log" 2>&1 || status=1
  tail -25 "$out/pytest.log"
  # pytest's own last line, e.g. "==== 357 passed, 2 skipped, 1 warning in 230.26s ====".
  counts="$(tail -1 "$out/pytest.log" | sed -E 's/^=+ //; s/ in [0-9.]+s.*$//')"
  ran+=("pytest ${counts:-(no summary line: see pytest.log)}")
else
  echo "pytest is not installed and .carry/wheels has no wheel of it: tests not run" | tee -a "$out/pytest.log"
  ran+=("pytest NOT RUN (not installed)")
  status=1
fi

original_src=.carry/original/multi_tensor_copier
original_args=()
if [[ -d "$original_src" ]]; then
  step "build the original package from $original_src" | tee -a "$out/python-build.log"
  if python3 scripts/build_original.py "$original_src" /tmp/mtc-original >> "$out/python-build.log" 2>&1; then
    export PYTHONPATH="/tmp/mtc-original${PYTHONPATH:+:$PYTHONPATH}"
    original_args=(--original)
    tail -1 "$out/python-build.log"
  else
    echo "the original package did not build (python-build.log): timing mtc without it"
    grep -m 10 -E "error|build_original" "$out/python-build.log"
    status=1
  fi
else
  echo "no $original_src: the original package is not timed"
fi

baseline_args=()
if [[ -n "${MTC_AB_BASE:-}" ]]; then
  step "build the baseline module from $MTC_AB_BASE" | tee -a "$out/python-build.log"
  if python3 scripts/install_module_as.py "$MTC_AB_BASE" /tmp/mtc-baseline mtc_base >> "$out/python-build.log" 2>&1; then
    export PYTHONPATH="/tmp/mtc-baseline${PYTHONPATH:+:$PYTHONPATH}"
    baseline_args=(--baseline mtc_base)
    tail -1 "$out/python-build.log"
  else
    echo "the baseline module did not build or import (python-build.log): no A/B"
    tail -3 "$out/python-build.log"
    status=1
  fi
fi

step "bench_python.py ${original_args[*]} ${baseline_args[*]} ${bench_args[*]}"
rm -f "$out/bench_python.json" "$out/bench_python.md"  # this run's reports only: a verdict is read from them
python3 scripts/bench_python.py "${original_args[@]}" "${baseline_args[@]}" "${bench_args[@]}" \
  --md "$out/bench_python.md" --json "$out/bench_python.json"
bench_status=$?
if (( bench_status == 0 )); then
  ran+=("bench_python${original_args:+ with the original}${baseline_args:+ with the baseline build}")
elif (( bench_status == 1 && ${#baseline_args[@]} > 0 )) &&
  python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])).get("exit_code") != 1)' \
    "$out/bench_python.json" 2> /dev/null; then
  # --fail-on (SLOWER by default): a finding of the A/B, its reports whole.
  ran+=("bench_python with the baseline build: a verdict matched --fail-on (exit 1: bench_python.md)")
  status=1
else
  ran+=("bench_python FAILED (exit $bench_status)")
  status=1
fi
if [[ "${MTC_ENGINE_STEP:-0}" == 1 ]]; then
  # The C++ engine's step in the same call, beside the module's (scripts/module_vs_engine.py).
  step "the engine's step: mtc_engine_bench BM_EngineCopy 399 and 1423" | tee -a "$out/python-build.log"
  engine_build="${MTC_BUILD_DIR:-build-gpu}"  # gpu-check.sh's build folder
  # shellcheck disable=SC2086
  if MTC_TARGETS=mtc_engine_bench MTC_PYTHON=python3 MTC_BUILD_DIR="$engine_build" MTC_WERROR=ON \
      bash scripts/build.sh ${MTC_CMAKE_ARGS:-} >> "$out/python-build.log" 2>&1 &&
    "$engine_build/mtc_engine_bench" --benchmark_filter='BM_EngineCopy<Direction::kHostToDevice>/1/(399|1423)/' \
      --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
      --benchmark_out="$out/engine_step.json" --benchmark_out_format=json >> "$out/python-build.log" 2>&1 &&
    python3 scripts/module_vs_engine.py "$out/bench_python.json" "$out/engine_step.json" --md "$out/bench_python.md" \
      2>> "$out/python-build.log"; then
    ran+=("the engine's step beside the module's")
  else
    ran+=("the engine's step FAILED (python-build.log)")
    status=1
  fi
fi
if [[ "${MTC_PYTHON_PROFILE:-0}" == 1 ]]; then
  : > "$out/profile-python.md"
  # Where a thread takes or lets go of the GIL (exported, so named on a stripped python3): who
  # else takes it while the caller copies.
  gil='PyEval_RestoreThread|PyEval_SaveThread|PyEval_AcquireThread|PyGILState_Ensure|PyGILState_Release'
  for pattern in "back to back|--calls 50000" "step|--calls 6000 --gap-ms 2 --rotation 8"; do
    name="${pattern%%|*}"
    step "profile: bench_python_overhead.py, $name"
    raw=()
    [[ "${MTC_PROFILE_RAW:-0}" == 1 ]] && raw=(--raw "$out/profile-python-${name// /-}.raw.gz")
    # shellcheck disable=SC2086
    MTC_PYTHON=python3 bash scripts/profile.sh "$out/profile-python.md" "${raw[@]}" \
      --title "mtc from Python on the GPU, $name" --focus 'mtc::' --focus "$gil" \
      --focus 'AsyncCopyHandle::~AsyncCopyHandle' -- \
      python3 scripts/bench_python_overhead.py --device cuda --yardstick 0 ${pattern#*|} ||
      { status=1; ran+=("profile, $name, FAILED"); continue; }
    ran+=("profile, $name")
  done
fi
step "done (status $status)"
# The last line says what ran.
(IFS=";"; echo "python: ${ran[*]}" | sed 's/;/; /g')
exit $status
