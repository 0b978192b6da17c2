#!/usr/bin/env bash
# scripts/run-gtest-suite.sh on stand-ins that print what a GoogleTest binary prints: a passing
# run keeps its summary and its skips and drops the passed tests' lines and the banners; a failure
# stays; a crash names the test it stopped in, after or before the tests or after the summary
# too; the binary's exit status comes through; its output is line-buffered and its raw file goes.
#   tests/scripts/run_gtest_suite_test.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
ulimit -c 0  # the crashing stand-ins leave no core file
failures=0
expect() {  # what, got, wanted
  if [[ "$2" == "$3" ]]; then echo "ok: $1"; else echo "FAILED: $1: got '$2', wanted '$3'"; failures=$((failures + 1)); fi
}
stand_in() {  # name, then the script's body: a fake test binary
  printf '#!/usr/bin/env bash\n%s\n' "$2" > "$tmp/$1"
  chmod +x "$tmp/$1"
}
run() {  # stand-in name: its filtered output in $tmp/out, its status echoed
  bash "$root/scripts/run-gtest-suite.sh" "$tmp/raw" "$tmp/$1" --gtest_filter='*' > "$tmp/out" 2>> "$tmp/err"
  echo $?
}
header='echo "Running main() from gtest_main.cc"
echo "[==========] Running 3 tests from 1 test suite."
echo "[----------] 3 tests from Suite"
echo "[ RUN      ] Suite.First"
echo "[       OK ] Suite.First (3 ms)"
echo ""'

stand_in passes "$header"'
echo "[ RUN      ] Suite.Skips"
echo "file.cpp:7: Skipped"
echo "[  SKIPPED ] Suite.Skips (0 ms)"
echo "[ RUN      ] Suite/Param.Second/1"
echo "[       OK ] Suite/Param.Second/1 (0 ms)"
echo "[----------] 3 tests from Suite (5 ms total)"
echo "[==========] 3 tests from 1 test suite ran. (5 ms total)"
echo "[  PASSED  ] 2 tests."
echo "[  SKIPPED ] 1 test, listed below:"
echo "[  SKIPPED ] Suite.Skips"
echo "stdout buffering: ${_STDBUF_O:-none}"'
expect "a passing run exits 0" "$(run passes)" 0
expect "its passed tests' lines and banners are left out" "$(grep -c 'RUN\|OK \]\|\[---\|^$' "$tmp/out")" 0
expect "its summary stays" "$(grep -c '^\[  PASSED  \] 2 tests\.$' "$tmp/out")" 1
expect "its skips stay" "$(grep -c 'SKIPPED\|Skipped' "$tmp/out")" 4
expect "the binary's output is line-buffered" "$(tail -1 "$tmp/out")" "stdout buffering: L"
expect "the raw file is removed" "$([[ -e "$tmp/raw" ]] && echo kept || echo removed)" removed

stand_in fails "$header"'
echo "[ RUN      ] Suite.Second"
echo "file.cpp:12: Failure"
echo "[  FAILED  ] Suite.Second (1 ms)"
echo "[==========] 2 tests from 1 test suite ran. (5 ms total)"
echo "[  PASSED  ] 1 test."
echo "[  FAILED  ] 1 test, listed below:"
echo "[  FAILED  ] Suite.Second"
exit 1'
expect "a failing run exits 1" "$(run fails)" 1
expect "its failure stays" "$(grep -c 'Failure\|FAILED' "$tmp/out")" 4
expect "no stop line when the binary ran to its end" "$(grep -c '^stopped' "$tmp/out")" 0

stand_in crashes "$header"'
echo "[ RUN      ] Suite/Param.Second/1"
echo "half a line of the test" >&2
kill -SEGV $$'
expect "a crash's status comes through" "$(run crashes)" 139
expect "a crash names its test" "$(tail -1 "$tmp/out")" "stopped (exit 139) in Suite/Param.Second/1"
expect "what the test printed stays" "$(grep -c 'half a line' "$tmp/out")" 1

stand_in exits_late "$header"'
exit 3'
expect "an exit after a test" "$(run exits_late)" 3
expect "it names the last test as finished" "$(tail -1 "$tmp/out")" \
  "stopped (exit 3) after the last test (Suite.First)"

stand_in fails_then_exits "$header"'
echo "[ RUN      ] Suite/Param.Third/2"
echo "file.cpp:20: Failure"
echo "[  FAILED  ] Suite/Param.Third/2, where GetParam() = 4 (2 ms)"
exit 4'
expect "an exit after a failed parameterized test" "$(run fails_then_exits)" 4
expect "it names that test as finished" "$(tail -1 "$tmp/out")" \
  "stopped (exit 4) after the last test (Suite/Param.Third/2)"

stand_in crashes_after_summary "$header"'
echo "[==========] 1 test from 1 test suite ran. (3 ms total)"
echo "[  PASSED  ] 1 test."
kill -SEGV $$'
expect "a crash after the summary" "$(run crashes_after_summary)" 139
expect "it says so" "$(tail -1 "$tmp/out")" "stopped (exit 139) after its summary"

stand_in exits_early 'echo "cannot load a library" >&2; exit 127'
expect "an exit before any test" "$(run exits_early)" 127
expect "it says so" "$(tail -1 "$tmp/out")" "stopped (exit 127) before any test"

(( failures == 0 )) || { echo "$failures check(s) FAILED"; exit 1; }
echo "all run-gtest-suite checks passed"
