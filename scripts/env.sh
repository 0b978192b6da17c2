# Sourced by the scripts: where libtorch and the build live. Works on a CPU machine after
# scripts/setup.sh and on the GPU host (whose python3 already holds torch).
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
if [[ -z "${MTC_PYTHON:-}" ]]; then
  if [[ -x "$MTC_VENV/bin/python" ]]; then MTC_PYTHON="$MTC_VENV/bin/python"; else MTC_PYTHON=python3; fi
fi
MTC_TORCH_PREFIX="$("$MTC_PYTHON" -c 'import torch;print(torch.utils.cmake_prefix_path)')"
MTC_BUILD_DIR="${MTC_BUILD_DIR:-build}"
export MTC_PYTHON MTC_TORCH_PREFIX MTC_BUILD_DIR
# ccache, where installed (scripts/setup.sh installs it; MTC_CCACHE=0 turns it off): the
# sanitizer builds and perf-ci's second build of the same sources then compile only what
# differs. Paths under the repository are hashed relative to the build folder, so a worktree
# with its build folder inside (as perf-ci.sh makes them) hits what this tree compiled.
if [[ "${MTC_CCACHE:-1}" != 0 ]] && command -v ccache > /dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}" CCACHE_NOHASHDIR=1
fi
