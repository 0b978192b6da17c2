// What the engine's micro-benchmark files share: whether a GPU is there, the per-tensor .to()
// baseline, and the median of a benchmark's iterations as a counter.
#pragma once

#include <ATen/core/ivalue.h>
#include <benchmark/benchmark.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "mtc/copier.h"

namespace mtc::microbench {

bool has_gpu();

// A competent user's per-tensor baseline: a recursive map calling .to() on every leaf.
c10::IValue map_to(const c10::IValue& v, const c10::Device& device);

// Eight distinct reference batches of `repeat` (reference_batch.h), each built anew (so
// cache-cold when its turn comes, as a training loop's next batch is), on the CPU or copied to
// the GPU; made once per process.
const std::vector<c10::IValue>& rotation(int repeat, bool on_gpu);

// The tensor leaves of a structure, in pre-order.
std::vector<at::Tensor> tensor_leaves(const c10::IValue& v);

// Seconds on the steady clock since `t0`.
double seconds_since(std::chrono::steady_clock::time_point t0);

// The yardstick of large copies: one cudaMemcpy of `bytes` from pinned host memory to GPU 0, the
// median of seven, in GB/s.
double pinned_copy_gbps(int64_t bytes);

// Google Benchmark reports the mean of the iterations; mtc-bench reports medians. The median
// of the iterations as a counter makes the two comparable (a few slow iterations, such as a
// worker that had gone to sleep, move the mean, not the median). Reorders `seconds`.
double median_of(std::vector<double>& seconds);
void report_median(benchmark::State& state, std::vector<double>& seconds);

// Spins on the clock for `duration`, touching no memory: a gap in which the thread stays awake
// and evicts nothing itself.
void spin_gap(std::chrono::microseconds duration);

// A training step's busy gap: the calling thread reads and writes 32 MiB a cache line at a
// time for `duration`, displacing what the last copy left in the caches while staying on the
// CPU (mtc-bench's `--gap-mode busy` does the same).
void busy_gap(std::chrono::microseconds duration);

// Where the copies' time went, as the engine measured it (CopyStats) plus how long start_copy
// kept the caller: summed over a benchmark's copies, reported as means per copy (start_us,
// queued_us, traverse_us, submit_us, outputs_us, allocate_us, driver_us, walk_threads). One per
// thread; merge() adds another's.
class StatsSum {
 public:
  void add(const mtc::CopyStats& stats, double start_seconds);
  void merge(const StatsSum& other);
  void report(benchmark::State& state) const;

 private:
  mtc::CopyStats sum_;
  double start_seconds_ = 0;
  int64_t copies_ = 0;
};

}  // namespace mtc::microbench
