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
usage="usage: scripts/profile.sh OUT_MD [--title TEXT] [--focus REGEX] [--top N] -- COMMAND [ARGS...]"
(( $# )) || { echo "$usage" >&2; exit 2; }
# The command runs where profile.sh was started; OUT_MD is taken from there too.
out_md="$(realpath -m "$1")"
shift
here="$(cd "$(dirname "$0")/.." && pwd)"
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
if ! "${CC:-cc}" -O2 -Wall -shared -fPIC -o "$work/cpu_sampler.so" "$here/scripts/cpu_sampler.c"; then
  echo "profile.sh: scripts/cpu_sampler.c did not build" >&2
  exit 2
fi
MTC_SAMPLE_OUT="$work/raw" LD_PRELOAD="$work/cpu_sampler.so${LD_PRELOAD:+:$LD_PRELOAD}" "$@" \
  > "$work/output.txt" 2>&1
rc=$?
tail -5 "$work/output.txt"
# The process with the most samples (the sampler's first line counts them); a file still named
# .partial is one whose process died while writing it.
busiest="" most=-1
for raw in "$work"/raw.*; do
  [[ -f "$raw" && "$raw" != *.partial ]] || continue
  read -r _ _ count _ < "$raw"
  [[ "$count" =~ ^[0-9]+$ ]] && (( count > most )) && busiest="$raw" most=$count
done
if [[ -z "$busiest" ]]; then
  echo "profile.sh: the command wrote no profile (did it exit through exit()?)" >&2
  exit 2
fi
"${MTC_PYTHON:-python3}" "$here/scripts/cpu_profile_summary.py" "$busiest" "${summary_args[@]}" \
  > "$work/summary.md" || exit 2
{
  cat "$work/summary.md"
  echo
  echo "Command (exit $rc): \`$*\`; the last lines of its output:"
  echo
  echo '```'
  tail -40 "$work/output.txt"
  echo '```'
  echo
} >> "$out_md" || exit 2
exit $rc
