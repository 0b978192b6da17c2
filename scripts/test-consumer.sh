#!/usr/bin/env bash
# Installs the engine from the build folder, then configures, builds and runs a separate
# project against it (tests/consumer) the way a user's project would, with TORCH_CUDA_ARCH_LIST
# unset: the installed mtcConfig.cmake must work on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
work="$(cd "$MTC_BUILD_DIR" && pwd)/consumer-test"
rm -rf "$work"
cmake --install "$MTC_BUILD_DIR" --prefix "$work/prefix" >/dev/null
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
env -u TORCH_CUDA_ARCH_LIST cmake -S tests/consumer -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix;$MTC_TORCH_PREFIX" >"$work.log" 2>&1 || { cat "$work.log"; exit 1; }
cmake --build "$work/build" >>"$work.log" 2>&1 || { cat "$work.log"; exit 1; }
"$work/build/consumer"
