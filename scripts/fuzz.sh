#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz and runs each for a
# bounded time (default 60 s), starting from the seed corpus committed in tests/fuzz/corpus.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      targets: fuzz_config fuzz_npy fuzz_saved_batch fuzz_report
# A crash, a leak, an exception other than ConfigError (and UsageError from
# fuzz_report's comparison) or an input slower than 10 s fails the
# script; the input that did it is saved under build-fuzz/artifacts/TARGET/ (reproduce with
# build-fuzz/tests/fuzz/TARGET FILE). New inputs found go to build-fuzz/corpus/TARGET, not into
# the repository: copy the interesting ones to tests/fuzz/corpus/TARGET by hand. Each target's
# whole log is kept in build-fuzz/logs/TARGET.log; on a finding its error lines are printed first.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz_config fuzz_npy fuzz_saved_batch fuzz_report)
build_dir="${MTC_FUZZ_BUILD_DIR:-build-fuzz}"
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (Debian: apt-get install clang)" >&2; exit 1; }

flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
start=$(date +%s)
# Warnings fail the build when MTC_WERROR=ON (CI), as in every other build.
MTC_BUILD_DIR="$build_dir" MTC_BUILD_TYPE=RelWithDebInfo MTC_TARGETS="${targets[*]}" bash scripts/build.sh \
  -DCMAKE_CXX_COMPILER=clang++ -DMTC_BUILD_FUZZERS=ON -DMTC_BUILD_TESTS=OFF \
  -DMTC_BUILD_MICROBENCH=OFF -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
built=$(date +%s)
echo "=== fuzz: built in $((built - start)) s"

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp"
for target in "${targets[@]}"; do
  corpus="$build_dir/corpus/$target"
  artifacts="$build_dir/artifacts/$target/"
  mkdir -p "$corpus" "$artifacts"
  echo "=== fuzz: $target for $seconds s"
  # -rss_limit_mb: libtorch alone takes ~1 GB; an input that needs several more is a finding.
  # The whole log is kept; on a finding its first error lines are shown too, since the last 25
  # lines hold only the stack's outer frames and not what went wrong.
  log="$build_dir/logs/$target.log"
  mkdir -p "$(dirname "$log")"
  status=0
  "$build_dir/tests/fuzz/$target" "$corpus" "tests/fuzz/corpus/$target" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts" \
    $([[ -f "tests/fuzz/$target.dict" ]] && echo "-dict=tests/fuzz/$target.dict") >"$log" 2>&1 || status=$?
  if ((status != 0)); then
    echo "=== fuzz: $target found something (exit $status); what went wrong, then the log's end ($log):"
    grep -m 12 -E "ERROR|what\(\)|terminate called|runtime error|SUMMARY|Test unit written" "$log" || true
    echo "..."
  fi
  tail -n 25 "$log"
  ((status == 0)) || exit "$status"
done
echo "=== fuzz: no findings (build $((built - start)) s, runs $(($(date +%s) - built)) s)"
