#!/usr/bin/env bash
# Runs a command under the sampling profiler of scripts/cpu_sampler.c (for hosts without perf) and
# appends the summary of its samples (scripts/cpu_profile_summary.py) and the last lines of the
# command's output (its own figures, measured under the sampler) to OUT_MD.
#
#   scripts/profile.sh OUT_MD [--title TEXT] [--focus REGEX] [--top N] -- COMMAND [ARGS...]
#
# MTC_SAMPLE_US (default 1000) and MTC_SAMPLE_DELAY_S (default 0: from the start; CPU seconds)
# pass through to the sampler. Of the processes the command starts, the one with the most samples
# is summarized. Exit status: the command's, or 2 for a usage error or a sampler that did not
# build or wrote nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/profile.sh OUT_MD [--title TEXT] [--focus REGEX] [--top N] -- COMMAND [ARGS...]"
out_md="${1:?$usage}"
shift
summary_args=()
while (( $# )) && [[ "$1" != -- ]]; do
  case "$1" in
    --title|--focus|--top) (( $# >= 2 )) || { echo "$usage" >&2; exit 2; }; summary_args+=("$1" "$2"); shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
(( $# >= 2 )) || { echo "$usage" >&2; exit 2; }
shift
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! "${CC:-cc}" -O2 -Wall -shared -fPIC -o "$work/cpu_sampler.so" scripts/cpu_sampler.c; then
  echo "profile.sh: scripts/cpu_sampler.c did not build" >&2
  exit 2
fi
MTC_SAMPLE_OUT="$work/raw" LD_PRELOAD="$work/cpu_sampler.so${LD_PRELOAD:+:$LD_PRELOAD}" "$@" \
  > "$work/output.txt" 2>&1
rc=$?
tail -5 "$work/output.txt"
largest="$(ls -S "$work"/raw.* 2> /dev/null | grep -v partial | head -1)"
if [[ -z "$largest" ]]; then
  echo "profile.sh: the command wrote no profile (did it exit through exit()?)" >&2
  exit 2
fi
{
  "${MTC_PYTHON:-python3}" scripts/cpu_profile_summary.py "$largest" "${summary_args[@]}"
  echo
  echo "Command (exit $rc): \`$*\`; the last lines of its output:"
  echo
  echo '```'
  tail -40 "$work/output.txt"
  echo '```'
  echo
} >> "$out_md" || exit 2
exit $rc
