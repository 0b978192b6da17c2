// The pinned pool's footprint over a long run: 10,000 copies of the reference batch to the GPU,
// back to back, from an empty pool. Counters: pool_bytes (its size at the end), peak_in_flight
// (the most staging in flight at once), pool_over_peak (their ratio; the target is <= 1.25),
// grew_after_1000 (bytes the pool grew by after the first 1,000 copies; levelled off: 0) and
// slab_allocations_after_1000 (pinned allocations after them; levelled off: 0).
#include <benchmark/benchmark.h>

#include "bench_support.h"
#include "mtc/copier.h"
#include "reference_batch.h"

namespace {

constexpr int64_t kCopies = 10000;
constexpr int64_t kWarmup = 1000;

void BM_PinnedPoolFootprint(benchmark::State& state) {
  if (!mtc::microbench::has_gpu()) return state.SkipWithError("no CUDA device");
  static const c10::IValue batch = mtc::microbench::make_reference_batch(1);
  mtc::release_idle_pinned_memory();
  mtc::reset_pinned_pool_peaks();
  mtc::PinnedPoolStats warm;
  int64_t copies = 0;
  for (auto _ : state) {
    c10::IValue out = mtc::start_copy(batch, c10::Device(c10::kCUDA, 0)).get();
    benchmark::DoNotOptimize(out);
    if (++copies == kWarmup) warm = mtc::pinned_pool_stats();
  }
  const mtc::PinnedPoolStats end = mtc::pinned_pool_stats();
  state.counters["pool_bytes"] = static_cast<double>(end.reserved_bytes);
  state.counters["peak_pool_bytes"] = static_cast<double>(end.peak_reserved_bytes);
  state.counters["peak_in_flight"] = static_cast<double>(end.peak_in_use_bytes);
  state.counters["pool_over_peak"] =
      end.peak_in_use_bytes > 0
          ? static_cast<double>(end.reserved_bytes) / static_cast<double>(end.peak_in_use_bytes)
          : 0;
  state.counters["grew_after_1000"] = static_cast<double>(end.reserved_bytes - warm.reserved_bytes);
  state.counters["slab_allocations_after_1000"] =
      static_cast<double>(end.slab_allocations - warm.slab_allocations);
}

}  // namespace

BENCHMARK(BM_PinnedPoolFootprint)->Iterations(kCopies)->Unit(benchmark::kMicrosecond);
