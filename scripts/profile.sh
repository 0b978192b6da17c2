#!/usr/bin/env bash
# Runs a command under the sampling profiler of scripts/cpu_sampler.c (for hosts without perf) and
# appends the summary of its samples (scripts/cpu_profile_summary.py) and the last lines of the
# command's output (its own figures, measured under the sampler) to OUT_MD.
#
#   scripts/profile.sh OUT_MD [--title TEXT] [--focus REGEX]... [--callers-of REGEX]... [--top N]
#                     [--raw FILE.gz] -- COMMAND [ARGS...]
#
# Each --focus gives a summary of its own, of the samples with a function matching REGEX on their
# stack (e.g. 'mtc::', or the functions that take the GIL); without one, of every sample. Each
# --callers-of adds a table of who calls the functions matching REGEX (e.g. the allocator). --raw
# also keeps the raw profile (the sampler's format, gzipped) for other questions later.
#
# MTC_SAMPLE_US (default 1000) and MTC_SAMPLE_DELAY_S (default 0: from the start; CPU seconds) pass
# through to the sampler. The kernel checks the sampler's timer on its tick, so the samples come
# less often than a short MTC_SAMPLE_US asks: one per 4 ms of a single thread's CPU time on the CPU
# machines (MTC_SAMPLE_US=100), one per 5.6-7.7 ms of the engine's micro-benchmarks' CPU time
# (several threads) on an H200 host (MTC_SAMPLE_US=250; 2026-12-03). MTC_SAMPLE_CLOCK=perf
# samples each thread by a high-resolution clock of its own instead (scripts/cpu_sampler.c): on the
# 2-core CPU machine, 2,399 samples of a thread's 2.4 s at MTC_SAMPLE_US=1000, against 529 by the
# tick (2026-12-06). Each summary says how often they came ("One sample per N us of the process's
# CPU time") and by which clock. Of the processes the command starts, the one with the most
# samples is summarized. Exit status: the command's, or 2 for a usage error or
# a sampler that did not build or wrote nothing.
set -uo pipefail
usage="usage: scripts/profile.sh OUT_MD [--title TEXT] [--focus REGEX]... [--callers-of REGEX]... [--top N] [--raw FILE.gz] -- COMMAND [ARGS...]"
(( $# )) || { echo "$usage" >&2; exit 2; }
# The command runs where profile.sh was started; OUT_MD is taken from there too.
out_md="$(realpath -m "$1")"
shift
here="$(cd "$(dirname "$0")/.." && pwd)"
summary_args=() focuses=() title="CPU profile" raw_out=""
while (( $# )) && [[ "$1" != -- ]]; do
  (( $# >= 2 )) || { echo "$usage" >&2; exit 2; }
  case "$1" in
    --top | --callers-of) summary_args+=("$1" "$2") ;;
    --focus) focuses+=("$2") ;;
    --title) title="$2" ;;
    --raw) raw_out="$(realpath -m "$2")" ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift 2
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
for focus in "${focuses[@]}"; do summary_args+=(--focus "$focus"); done
"${MTC_PYTHON:-python3}" "$here/scripts/cpu_profile_summary.py" "$busiest" "${summary_args[@]}" \
  --title "$title" > "$work/summary.md" || exit 2
(( ${#focuses[@]} == 0 )) || echo >> "$work/summary.md"
if [[ -n "$raw_out" ]]; then
  gzip -c "$busiest" > "$raw_out" || exit 2
fi
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
