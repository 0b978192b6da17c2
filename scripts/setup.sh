#!/usr/bin/env bash
# Installs what building mtc-bench needs on a fresh Debian/Ubuntu CPU machine:
# the -dev packages (CLI11, nlohmann/json, fmt, GoogleTest, Google Benchmark, ninja), clang
# with libFuzzer (for scripts/fuzz.sh), clang-format (scripts/format.sh), ccache (repeated builds, see scripts/env.sh) and a Python venv holding libtorch from the `torch`
# package (CUDA 13 build, matching the toolkit), numpy, jsonschema, and what the Python
# module's build and tests need (setuptools, pytest), and ruff (scripts/lint-python.sh).
# Idempotent: it skips what is already there. The CUDA toolkit (nvcc) must already be installed.
set -euo pipefail

TORCH_VERSION="${MTC_TORCH_VERSION:-2.11.0}"
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"

packages=(build-essential cmake ninja-build python3-venv libcli11-dev nlohmann-json3-dev libfmt-dev
          libgtest-dev libgmock-dev libbenchmark-dev clang clang-format ccache)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
# libFuzzer's runtime (scripts/fuzz.sh): the package libclang-rt-dev on Debian 12, part of
# clang's own packages on older releases; a name ending in ? is installed where it exists.
fuzzer_present() { command -v clang >/dev/null && [[ -f "$(clang -print-runtime-dir)/libclang_rt.fuzzer-$(uname -m).a" ]]; }
fuzzer_present || missing+=("libclang-rt-dev?")
if ((${#missing[@]})); then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  wanted=()
  for p in "${missing[@]}"; do
    if [[ "$p" == *"?" ]]; then
      apt-cache show "${p%"?"}" >/dev/null 2>&1 && wanted+=("${p%"?"}")
    else
      wanted+=("$p")
    fi
  done
  if ((${#wanted[@]})); then
    echo "setup: installing ${wanted[*]}" >&2
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${wanted[@]}"
  fi
fi

command -v nvcc >/dev/null || { echo "setup: nvcc not found; install the CUDA 13 toolkit" >&2; exit 1; }

if ! "$MTC_VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
  echo "setup: installing torch==$TORCH_VERSION into $MTC_VENV (about 4 GB, a few minutes)" >&2
  python3 -m venv "$MTC_VENV"
  "$MTC_VENV/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" numpy jsonschema matplotlib
fi
# matplotlib: scripts/plot.py.
"$MTC_VENV/bin/python" -c "import jsonschema, numpy, matplotlib" 2>/dev/null ||
  "$MTC_VENV/bin/pip" install -q --disable-pip-version-check numpy jsonschema matplotlib
# The Python module's build (setuptools with its own bdist_wheel; torch caps it below 82) and tests.
"$MTC_VENV/bin/python" -c "import pytest, setuptools, sys; sys.exit(tuple(map(int, setuptools.__version__.split('.')[:2])) < (70, 1))" 2>/dev/null ||
  "$MTC_VENV/bin/pip" install -q --disable-pip-version-check "setuptools>=70.1,<82" pytest
# The Python linter, pinned: a new release's new rules must not turn CI red on their own.
RUFF_VERSION=0.8.6
[[ "$("$MTC_VENV/bin/ruff" --version 2>/dev/null)" == "ruff $RUFF_VERSION" ]] ||
  "$MTC_VENV/bin/pip" install -q --disable-pip-version-check "ruff==$RUFF_VERSION"
echo "setup: ok (torch $("$MTC_VENV/bin/python" -c 'import torch;print(torch.__version__)') in $MTC_VENV)" >&2
