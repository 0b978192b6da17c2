#!/usr/bin/env bash
# Runs one GoogleTest binary (with any further arguments) for scripts/gpu-check.sh and prints its
# output less the lines of tests that passed ("[ RUN ]", "[ OK ]"), exiting with the binary's
# status. GoogleTest's brief mode would print nothing of a test that is running, so a test that
# crashed the binary left no name in the log; here the whole output is kept until the binary
# ends, and one that ended without its "[ PASSED ]" line gets a last line naming the test it
# stopped in: "stopped (exit 139) in Suite.Test", or "stopped (exit 1) after the last test
# (Suite.Test)" when that test had finished, or "stopped (exit 2) before any test".
#
#   scripts/run-gtest-suite.sh BINARY [GTEST ARGS...]
set -uo pipefail
binary="${1:?usage: scripts/run-gtest-suite.sh BINARY [GTEST ARGS...]}"
shift
raw="$(mktemp)"
trap 'rm -f "$raw"' EXIT
# Line-buffered: whatever the binary printed before a crash is in the file.
stdbuf -oL "$binary" "$@" > "$raw" 2>&1
rc=$?
grep -vE '^\[ +(RUN|OK) +\] ' "$raw"
if ! grep -qE '^\[  PASSED  \] [0-9]+ tests?\.$' "$raw"; then
  last=$(sed -nE 's/^\[ RUN      \] (.*)$/\1/p' "$raw" | tail -1)
  if [[ -z "$last" ]]; then
    echo "stopped (exit $rc) before any test"
  elif awk -v name="$last" '/^\[ *(OK|FAILED|SKIPPED) *\] / {
         sub(/^\[[^]]*\] /, ""); sub(/ \([0-9]+ ms\)$/, ""); if ($0 == name) ended = 1 }
       END { exit !ended }' "$raw"; then
    echo "stopped (exit $rc) after the last test ($last)"
  else
    echo "stopped (exit $rc) in $last"
  fi
fi
exit $rc
