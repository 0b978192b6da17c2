#!/usr/bin/env bash
# Where a copy's CUDA calls and waits go: each FILTER's micro-benchmarks in a process of their
# own under Nsight Systems (CUDA API, NVTX and OS runtime tracing), one repetition, and the
# summaries of `nsys stats` as tables (scripts/nsys_summary.py). Run by
# `scripts/gpu-check.sh OUT_DIR nsys FILTER [FILTER...]` after its build and the engine's tests.
# Let each FILTER match one case: the sums are the process's, set-up and untimed copies included
# (a case with a gap runs 10 copies untimed, then 100), and tracing lengthens every call.
# Needs nsys (Nsight Systems, which the GPU host ships inside Nsight Compute) and the libraries it
# lacks there, libdw1 and libelf1, as Debian packages in the tree's .carry/debs (git-ignored;
# `apt-get download libdw1 libelf1` there). Files: nsys.md, nsys-csv.tar.gz (every
# CSV summary, and the GPU trace of each process).
#
#   scripts/gpu-check-nsys.sh OUT_DIR BUILD_DIR FILTER [FILTER...]
set -uo pipefail
usage="usage: scripts/gpu-check-nsys.sh OUT_DIR BUILD_DIR FILTER [FILTER...]"
(( $# >= 3 )) || { echo "$usage" >&2; exit 2; }
out="$(realpath -m "$1")" build="$(realpath -m "$2")"
shift 2
cd "$(dirname "$0")/.." || exit 2
python="${MTC_PYTHON:-python3}"
# The cases share 6 minutes, so that a filter too broad or a hang ends the check with a message
# inside a GPU host's 10-minute call (the build and tests take ~2), the tables made so far kept.
limit=$(( 360 / $# ))
source scripts/nsys-env.sh
find_nsys || { echo "nsys: $nsys_problem" | tee "$out/nsys.md" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unpack_nsys_libs "$work/libs"
status=0
: > "$out/nsys.md"
i=0
for filter in "$@"; do
  i=$((i + 1))
  echo "=== nsys: $filter"
  printf '### %s\n\n' "$filter" >> "$out/nsys.md"
  if ! timeout "$limit" "$nsys" profile -t cuda,nvtx,osrt -o "$work/case-$i" -f true \
      "$build/mtc_engine_bench" --benchmark_filter="$filter" --benchmark_repetitions=1 \
      > "$work/case-$i.log" 2>&1; then
    echo "nsys profile failed (or ran past ${limit} s) for $filter; its last lines:" | tee -a "$out/nsys.md"
    tail -5 "$work/case-$i.log" | tee -a "$out/nsys.md"
    echo >> "$out/nsys.md"
    status=1
    continue
  fi
  # One call, CSV only: a second `nsys stats` on the same report printed a usage error on the
  # GPU host (2026-11-29).
  if ! timeout "$limit" "$nsys" stats -r nvtx_sum,cuda_api_sum,osrt_sum,cuda_gpu_trace --format csv \
      -o "$work/case-$i" "$work/case-$i.nsys-rep" > "$work/stats-$i.log" 2>&1; then
    echo "nsys stats failed for $filter; its last lines:" | tee -a "$out/nsys.md"
    tail -5 "$work/stats-$i.log" | tee -a "$out/nsys.md"
    echo >> "$out/nsys.md"
    status=1
    continue
  fi
  # The case's own line from the benchmark's output: its time under tracing.
  grep -E "^BM_" "$work/case-$i.log" | head -3 | sed 's/^/    /' >> "$out/nsys.md"
  echo >> "$out/nsys.md"
  "$python" scripts/nsys_summary.py --no-title "$work"/case-"$i"_{nvtx_sum,cuda_api_sum,osrt_sum}.csv \
    | tee -a "$out/nsys.md" || status=1
done
if compgen -G "$work/*.csv" > /dev/null; then
  (cd "$work" && tar czf "$out/nsys-csv.tar.gz" ./*.csv) || status=1
fi
exit $status
