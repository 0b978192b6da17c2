#!/usr/bin/env bash
# Configures and builds everything into $MTC_BUILD_DIR (default: build), or only the targets
# named in $MTC_TARGETS (space-separated). Extra arguments go to the CMake configure step, for
# example -DMTC_ENABLE_NVTX=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$MTC_BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE="${MTC_BUILD_TYPE:-Release}" \
  -DCMAKE_PREFIX_PATH="$MTC_TORCH_PREFIX" "$@"
targets=()
for t in ${MTC_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$MTC_BUILD_DIR" -j "${MTC_JOBS:-$(nproc)}" "${targets[@]}"
