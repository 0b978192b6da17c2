#!/usr/bin/env bash
# Run 1 (2026-11-29 late): CUDA API, NVTX and OS runtime sums of single micro-benchmark cases under
# Nsight Systems, after scripts/gpu-check.sh had built build-gpu; run from the repository root as
#   bash run-1-nsys-steps.sh OUT_DIR FILTER... (nsys needs .carry/debs: libdw1, libelf1)
# Its second `nsys stats` printed a usage error; the CSV exports of the first are the results.
out="$1"; shift
nsys=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
libs=/tmp/nsys-libs
for d in .carry/debs/*.deb; do dpkg -x "$d" "$libs"; done
export LD_LIBRARY_PATH="$libs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
i=0
for filter in "$@"; do
  i=$((i+1))
  echo "##### $filter" >> "$out/nsys.txt"
  "$nsys" profile -t cuda,nvtx,osrt -o /tmp/p-$i -f true build-gpu/mtc_engine_bench \
    --benchmark_filter="$filter" --benchmark_repetitions=1 >> "$out/nsys.txt" 2>&1
  "$nsys" stats -r nvtx_sum,cuda_api_sum,osrt_sum,cuda_gpu_trace --format csv -o /tmp/s-$i /tmp/p-$i.nsys-rep > /dev/null 2>&1
  "$nsys" stats -r nvtx_sum,cuda_api_sum,osrt_sum /tmp/p-$i.nsys-rep >> "$out/nsys.txt" 2>&1
  ls /tmp/s-$i* >> "$out/nsys.txt"
done
tar czf "$out/nsys-csv.tar.gz" /tmp/s-* 2>/dev/null
