#!/usr/bin/env bash
# scripts/perf-ci.sh refuses a bad setting at once, exit 2 and a line naming it, before it checks
# out or builds anything: a bad MTC_PERF_ROUND_TIME failed the first run minutes of builds later
# (exit 3, "a build or run failed"), a bad MTC_PERF_FAIL_ON only the last compare.
#   tests/scripts/perf_ci_settings_test.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
refused() {  # setting, what the line says
  local out status
  out="$(env "$1" MTC_PERF_SMOKE=1 MTC_PERF_WORK="$work" timeout 60 bash "$root/scripts/perf-ci.sh" HEAD 2>&1)"
  status=$?
  if [[ $status -eq 2 && "$out" == *"$2"* && ! -e "$work/baseline" ]]; then
    echo "ok: $1"
  else
    echo "FAILED: $1: exit $status, wanted 2 with '$2' and nothing checked out; got: ${out:0:300}"
    failures=$((failures + 1))
  fi
}
refused MTC_PERF_ROUND_TIME=abc "MTC_PERF_ROUND_TIME must be seconds above 0 and at most 86400, not 'abc'"
refused MTC_PERF_ROUND_TIME=0 "MTC_PERF_ROUND_TIME must be seconds above 0"
refused MTC_PERF_ROUND_TIME=1e9 "MTC_PERF_ROUND_TIME must be seconds above 0"
refused MTC_PERF_FAIL_ON=sometimes "MTC_PERF_FAIL_ON must be slower, faster, any or none, not 'sometimes'"
refused MTC_PERF_ROUNDS=0 "MTC_PERF_ROUNDS must be a positive integer"
refused MTC_PERF_MODE=fast "MTC_PERF_MODE must be in-process or processes"
[[ $failures -eq 0 ]] || { echo "$failures failed"; exit 1; }
