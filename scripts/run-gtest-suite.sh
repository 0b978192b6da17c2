#!/usr/bin/env bash
# Runs one GoogleTest binary (with any further arguments) for scripts/gpu-check.sh and prints its
# output less the lines of passing tests and GoogleTest's banners ("[ RUN ]", "[ OK ]",
# "[----------]", blank lines), exiting with the binary's status. GoogleTest's brief mode would
# print nothing of a test that is running, so a test that crashed the binary left no name in the
# log. Here the binary's whole output goes to RAW_FILE as it runs (what is left there if this
# script is killed, at a time limit say), and is filtered once the binary ends; RAW_FILE is then
# removed. A binary that ended without its "[ PASSED ]" line gets a last line naming the test it
# stopped in: "stopped (exit 139) in Suite.Test", or "stopped (exit 1) after the last test
# (Suite.Test)" when that test had finished, or "stopped (exit 2) before any test"; one killed by
# a signal after its summary, "stopped (exit 139) after its summary".
#
#   scripts/run-gtest-suite.sh RAW_FILE BINARY [GTEST ARGS...]
set -uo pipefail
usage="usage: scripts/run-gtest-suite.sh RAW_FILE BINARY [GTEST ARGS...]"
raw="${1:?$usage}"
binary="${2:?$usage}"
shift 2
# Line-buffered: whatever the binary printed before a crash is in the file.
stdbuf -oL "$binary" "$@" > "$raw" 2>&1
rc=$?
grep -avE '^\[ +(RUN|OK) +\] |^\[-+\]|^$' "$raw"
if ! grep -aqE '^\[  PASSED  \] [0-9]+ tests?\.$' "$raw"; then
  last=$(sed -nE 's/^\[ RUN      \] (.*)$/\1/p' "$raw" | tail -1)
  if [[ -z "$last" ]]; then
    echo "stopped (exit $rc) before any test"
  elif awk -v name="$last" '/^\[ *(OK|FAILED|SKIPPED) *\] / {
         sub(/^\[[^]]*\] /, ""); sub(/ \([0-9]+ ms\)$/, ""); sub(/, where .*$/, "")
         if ($0 == name) ended = 1 }
       END { exit !ended }' "$raw"; then
    echo "stopped (exit $rc) after the last test ($last)"
  else
    echo "stopped (exit $rc) in $last"
  fi
elif (( rc >= 128 )); then
  echo "stopped (exit $rc) after its summary"
fi
rm -f "$raw"
exit $rc
