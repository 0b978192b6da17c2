#!/usr/bin/env bash
# scripts/run-gtest-suite.sh on stand-ins that print what a GoogleTest binary prints: a passing
# run keeps its summary and drops the passed tests' lines; a crash names the test it stopped in,
# after or before the tests too; the binary's exit status comes through.
#   tests/scripts/run_gtest_suite_test.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
expect() {  # what, got, wanted
  if [[ "$2" == "$3" ]]; then echo "ok: $1"; else echo "FAILED: $1: got '$2', wanted '$3'"; failures=$((failures + 1)); fi
}
stand_in() {  # name, then the script's body: a fake test binary
  printf '#!/usr/bin/env bash\n%s\n' "$2" > "$tmp/$1"
  chmod +x "$tmp/$1"
}
run() {  # stand-in name: its filtered output in $tmp/out, its status echoed
  bash "$root/scripts/run-gtest-suite.sh" "$tmp/$1" --gtest_filter='*' > "$tmp/out" 2>> "$tmp/err"
  echo $?
}
header='echo "[==========] Running 2 tests from 1 test suite."
echo "[ RUN      ] Suite.First"
echo "[       OK ] Suite.First (3 ms)"'

stand_in passes "$header"'
echo "[ RUN      ] Suite/Param.Second/1"
echo "[       OK ] Suite/Param.Second/1 (0 ms)"
echo "[==========] 2 tests from 1 test suite ran. (5 ms total)"
echo "[  PASSED  ] 2 tests."'
expect "a passing run exits 0" "$(run passes)" 0
expect "its passed tests' lines are left out" "$(grep -c 'RUN\|OK \]' "$tmp/out")" 0
expect "its summary stays" "$(tail -1 "$tmp/out")" "[  PASSED  ] 2 tests."

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

stand_in exits_early 'echo "cannot load a library" >&2; exit 127'
expect "an exit before any test" "$(run exits_early)" 127
expect "it says so" "$(tail -1 "$tmp/out")" "stopped (exit 127) before any test"

(( failures == 0 )) || { echo "$failures check(s) FAILED"; exit 1; }
echo "all run-gtest-suite checks passed"
