#!/usr/bin/env bash
# Configures and builds everything into $MTC_BUILD_DIR (default: build), or only the targets
# named in $MTC_TARGETS (space-separated). Extra arguments go to the CMake configure step, for
# example -DMTC_ENABLE_NVTX=OFF. MTC_WERROR=ON makes warnings in the project's code errors (CI
# and the GPU check set it; a user's build leaves it off, so a newer compiler's new warning
# cannot break it). MTC_KEEP_GOING=1 builds on past a failed file, to see every error at once.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$MTC_BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE="${MTC_BUILD_TYPE:-Release}" \
  -DCMAKE_PREFIX_PATH="$MTC_TORCH_PREFIX" ${MTC_WERROR:+-DMTC_WERROR="$MTC_WERROR"} "$@"
targets=()
for t in ${MTC_TARGETS:-}; do targets+=(--target "$t"); done
keep_going=()
[[ "${MTC_KEEP_GOING:-0}" == 1 ]] && keep_going=(-- -k 0)
cmake --build "$MTC_BUILD_DIR" -j "${MTC_JOBS:-$(nproc)}" "${targets[@]}" "${keep_going[@]}"
