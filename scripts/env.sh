# Sourced by the scripts: where libtorch and the build live. Works on a CPU machine after
# scripts/setup.sh and on the GPU host (whose python3 already holds torch).
MTC_VENV="${MTC_VENV:-$HOME/.cache/mtc-bench/venv}"
if [[ -z "${MTC_PYTHON:-}" ]]; then
  if [[ -x "$MTC_VENV/bin/python" ]]; then MTC_PYTHON="$MTC_VENV/bin/python"; else MTC_PYTHON=python3; fi
fi
MTC_TORCH_PREFIX="$("$MTC_PYTHON" -c 'import torch;print(torch.utils.cmake_prefix_path)')"
MTC_BUILD_DIR="${MTC_BUILD_DIR:-build}"
export MTC_PYTHON MTC_TORCH_PREFIX MTC_BUILD_DIR
