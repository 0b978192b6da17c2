// Google Benchmark binary of the engine: whole copies beside the per-tensor .to() baseline here
// (the copy's own steps in engine_steps_bench.cpp, other questions in the other *_bench.cpp files
// linked into it), so each cost can be tracked over time. Argument = batch multiplier: 1 -> 528
// tensors, 8 -> 4,224 tensors; BM_EngineCopy's second argument, its option bits, is named bit by
// bit in engine_bench_args.h, and its lists of cases are in engine_bench_args.cpp.
#include <benchmark/benchmark.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "detail/copy_job.h"
#include "detail/device_block_stash.h"
#include "detail/dict_shelf.h"
#include "detail/dict_stash.h"
#include "detail/driver_warmup.h"
#include "detail/key_interner.h"
#include "detail/outputs.h"
#include "detail/prefetch.h"
#include "detail/structure.h"
#include "detail/version_pool.h"
#include "detail/worker_pool.h"
#include "detail/worker_pool_set.h"
#include "engine_bench_args.h"
#include "mtc/copier.h"
#include "offered_outputs.h"
#include "reference_batch.h"

namespace {

using Clock = std::chrono::steady_clock;
using mtc::microbench::has_gpu;
using mtc::microbench::map_to;
using mtc::microbench::report_median;

using mtc::microbench::d2h_args;
using mtc::microbench::d2h_gap_args;
using mtc::microbench::engine_args;
using mtc::microbench::h2d_gap_args;
using mtc::microbench::kKeptResults;
// The option bits by their names alone (engine_bench_args.h), as the case lists write them.
using namespace mtc::microbench::engine_bits;

c10::IValue source(int repeat, bool on_gpu) {
  static std::map<int, c10::IValue> gpu;
  if (!on_gpu) return mtc::microbench::shared_reference_batch(repeat);
  auto it = gpu.find(repeat);
  if (it == gpu.end())
    it = gpu.emplace(repeat, map_to(mtc::microbench::shared_reference_batch(repeat),
                                    c10::Device(c10::kCUDA, 0)))
             .first;
  return it->second;
}

enum class Direction { kHostToDevice, kDeviceToHost };

template <Direction dir>
void BM_PerTensorTo(benchmark::State& state) {
  if (!has_gpu()) return state.SkipWithError("no CUDA device");
  const bool h2d = dir == Direction::kHostToDevice;
  const c10::IValue data = source(static_cast<int>(state.range(0)), !h2d);
  const c10::Device target = h2d ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  std::vector<double> seconds;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    c10::IValue out = map_to(data, target);
    cudaDeviceSynchronize();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    state.SetIterationTime(seconds.back());
  }
  report_median(state, seconds);
}

// Whole copies: start_copy until get() returned (data on the target). The counter start_us is
// how long start_copy kept the caller.
template <Direction dir>
void BM_EngineCopy(benchmark::State& state) {
  if (!has_gpu()) return state.SkipWithError("no CUDA device");
  const bool h2d = dir == Direction::kHostToDevice;
  const int64_t bits = state.range(1);
  // kFreshBatch: a different batch each copy, from a rotation of eight.
  const std::vector<c10::IValue> inputs =
      bits & kFreshBatch ? mtc::microbench::rotation(static_cast<int>(state.range(0)), !h2d)
                         : std::vector<c10::IValue>{source(static_cast<int>(state.range(0)), !h2d)};
  // kFreePrevious: the previous copy's result is freed on the caller right after start_copy, inside
  // the timed copy (a training step drops the last batch when the next one arrives); otherwise
  // it is freed after the clock stopped.
  const bool free_previous_in_copy = bits & kFreePrevious;
  // kFreeAfterGet (with kFreePrevious): it is freed after get() returned, still inside the timed
  // copy, as mtc-bench's step pattern frees it (`batch = copy(next)`), instead of while the workers
  // walk.
  const bool free_after_get = bits & kFreeAfterGet;
  // kReuseOutputs (with kFreePrevious): the previous result handed to the copy (offered_outputs.h),
  // its tensors made the new outputs, instead of freed.
  const bool offer_previous = free_previous_in_copy && (bits & kReuseOutputs);
  // kKeepResults (without kFreePrevious): each result freed kKeptResults copies later, outside
  // the clock, not right after its copy: the blocks the next walks reuse were freed long before,
  // their lines no longer in the freeing core's cache (does fetching those lines cost the walk?).
  const bool keep_results = !free_previous_in_copy && (bits & kKeepResults);
  std::deque<c10::IValue> kept;
  const c10::Device target = h2d ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  mtc::CopyOptions options;
  options.pack_cpu_tensors = bits & kPack;
  options.use_pinned_staging = bits & kPinnedStaging;
  options.use_background_thread = bits & kBackgroundThread;
  // kPinnedOutputs: GPU->CPU outputs in pinned memory, the DMA landing in them.
  options.pinned_host_outputs = bits & kPinnedOutputs;
  // kIdleGap: leave the engine idle for 5 ms before each copy, so its workers have gone to sleep
  // (a training step's one copy), instead of back-to-back copies that find them spinning; with
  // kBusyGap the caller spends the gap busy over 32 MiB (a forward pass) instead of sleeping.
  const bool idle_gap = bits & kIdleGap;
  const bool busy = bits & kBusyGap;
  // kSpinningCaller: the caller spins on the clock through the gap, touching no memory (awake, and
  // evicting nothing itself).
  const bool spin = !busy && (bits & kSpinningCaller);
  // kShortGap: a gap of 200 us instead of 5 ms, a little longer than a worker's spin: a tight
  // loop whose caller has work of its own between copies (as a loop in Python does).
  const auto gap =
      bits & kShortGap ? std::chrono::microseconds(200) : std::chrono::microseconds(5000);
  // kUnsplitWalk: never split the walk across the pool (one thread walks), to compare with the
  // split; kFewerWalkers: at most one walking thread per 256 leaves instead of 128 (fewer helpers).
  // kMoreWalkers: one per 64 leaves instead (more helpers, as many as the pool has).
  const int64_t leaves_per_part = bits & kFewerWalkers  ? 256
                                  : bits & kMoreWalkers ? 64
                                                        : mtc::detail::kDefaultLeavesPerPart;
  mtc::detail::set_parallel_walk(bits & kUnsplitWalk ? std::numeric_limits<int64_t>::max()
                                                     : mtc::detail::kDefaultParallelWalkLeaves,
                                 leaves_per_part);
  // kSpin2ms: idle workers spin 2 ms instead of 200 us before sleeping, so back-to-back copies
  // always find them awake (to tell wake-up costs from walking costs).
  if (bits & kSpin2ms)
    mtc::detail::WorkerPoolSet::instance().set_spin(std::chrono::milliseconds(2));
  // kSpin10ms: idle workers spin 10 ms, through a step's whole gap: whether a worker that slept
  // comes back slower than one that stayed on its core.
  if (bits & kSpin10ms)
    mtc::detail::WorkerPoolSet::instance().set_spin(std::chrono::milliseconds(10));
  // kNoWakeAhead: sleeping workers do not wake ahead of the next copy (worker_pool.h).
  mtc::detail::WorkerPoolSet::instance().set_anticipate(!(bits & kNoWakeAhead));
  // kNoVersionPool: output version counters allocated and freed as torch does (version_pool.h).
  mtc::detail::version_pool::set_enabled(!(bits & kNoVersionPool));
  // kInputKeys: output dicts share the input's key objects, as before key_interner.h.
  mtc::detail::key_interner::set_enabled(!(bits & kInputKeys));
  // Output dicts made ahead by idle workers (dict_stash.h): kDictsAhead on, kNoDictsAhead off,
  // whatever MTC_DICT_STASH says (read above, with the pools); neither, as the process has it (on
  // by default). The case ends with the process's setting back.
  const bool stash_setting = mtc::detail::dict_stash::enabled();
  if (bits & kDictsAhead) mtc::detail::dict_stash::set_enabled(true);
  if (bits & kNoDictsAhead) mtc::detail::dict_stash::set_enabled(false);
  // kPoolStream: the caller's current stream is one of torch's pool, not the default (legacy)
  // stream, which the driver orders against every other blocking stream of the device.
  std::optional<c10::cuda::CUDAStreamGuard> stream_guard;
  if (bits & kPoolStream) stream_guard.emplace(c10::cuda::getStreamFromPool(false, 0));
  // kNoDriverWarmup: the worker that wakes ahead of a copy does not warm the driver
  // (driver_warmup.h); without it, as the process has it (MTC_DRIVER_WARMUP, on by default), put
  // back at the end.
  const bool warmup_setting = mtc::detail::driver_warmup::enabled();
  if (bits & kNoDriverWarmup) mtc::detail::driver_warmup::set_enabled(false);
  // kNoPrefetch: the walk and the staging fill prefetch nothing (prefetch.h).
  mtc::detail::prefetch::set_enabled(!(bits & kNoPrefetch));
  // kNoWarmWorkerFirst: the worker that warmed the driver gets no first claim on the copy's job
  // (WorkerPool::set_warm_worker_first).
  mtc::detail::WorkerPool::set_warm_worker_first(!(bits & kNoWarmWorkerFirst));
  // kComputedShapes: outputs' shapes computed from their sizes, not copied from their inputs
  // (outputs.h, set_copied_shape).
  mtc::detail::set_copied_shape(!(bits & kComputedShapes));
  // kNoDeviceBlocksAhead: no device memory made after a copy for the next one
  // (device_block_stash.h).
  mtc::detail::device_block_stash::set_enabled(!(bits & kNoDeviceBlocksAhead));
  // kLateSplit: a split walk queues its helpers only after its first element, as if its pool
  // remembered no earlier split (copy_job.h, set_early_split).
  mtc::detail::set_early_split(!(bits & kLateSplit));
  // kNoFreeAhead: outputs freed without asking for the next ones' lines (outputs.h,
  // chain_for_free).
  mtc::detail::set_free_ahead(!(bits & kNoFreeAhead));
  // kNoShelf: no output dicts made by the dict-making thread (dict_shelf.h), the workers
  // making them in their idle time as before (dict_stash.h); without it, as the process has it
  // (MTC_DICT_SHELF, on by default), put back at the end.
  const bool shelf_setting = mtc::detail::dict_shelf::enabled();
  if (bits & kNoShelf) mtc::detail::dict_shelf::set_enabled(false);
  // kCopiedTypes: the walk copies each input container's element types through c10's accessors
  // instead of reading them in place (structure.h, set_types_in_place).
  mtc::detail::set_types_in_place(!(bits & kCopiedTypes));
  std::vector<double> seconds;
  mtc::microbench::StatsSum stats;
  c10::IValue previous;
  size_t turn = 0;
  // A step whose previous result becomes the new one's outputs: its containers freed before the
  // copy starts, and the tensors the engine took put back into the new result after get(), as
  // the caller must; a tensor it did not take dies inside the copy, as a freed result's would.
  // The storages the reused outputs left die with the handle, after the clock (kFreePrevious frees
  // the previous result's inside it): a bias in this case's favour. The handle's drop is timed
  // apart, its median the counter drop_us.
  std::vector<double> drops;
  // With kFreePrevious (and not kFreeAfterGet): how long the caller's free of the previous result
  // took, beside the walk; its median the counter free_us. Ending after the walk, it is the copy's
  // critical path.
  std::vector<double> frees;
  auto copy_offering_previous = [&](const c10::IValue& data, Clock::time_point t0) {
    mtc::microbench::OfferedOutputs offered = mtc::microbench::offer_outputs(std::move(previous));
    if (offered.tensors.empty()) offered.reuse.reset();  // the first copy: nothing to offer
    std::optional<mtc::CopyHandle> handle = mtc::start_copy(data, target, options, offered.reuse);
    const auto t1 = Clock::now();
    c10::IValue out = handle->get();
    if (offered.reuse) mtc::microbench::place_reused(out, offered);
    offered.tensors.clear();
    const auto t2 = Clock::now();
    previous = std::move(out);
    stats.add(handle->stats(), std::chrono::duration<double>(t1 - t0).count());
    const auto t3 = Clock::now();
    handle.reset();
    drops.push_back(std::chrono::duration<double>(Clock::now() - t3).count());
    return std::chrono::duration<double>(t2 - t0).count();
  };
  // One copy as a training loop makes it; returns its time and adds its steps to `stats`.
  auto copy = [&] {
    if (idle_gap && busy) mtc::microbench::busy_gap(gap);
    if (idle_gap && spin) mtc::microbench::spin_gap(gap);
    if (idle_gap && !busy && !spin) std::this_thread::sleep_for(gap);
    const c10::IValue& data = inputs[turn++ % inputs.size()];
    const auto t0 = Clock::now();
    if (offer_previous) return copy_offering_previous(data, t0);
    mtc::CopyHandle handle = mtc::start_copy(data, target, options);
    const auto t1 = Clock::now();
    if (free_previous_in_copy && !free_after_get) {
      previous = c10::IValue();
      frees.push_back(std::chrono::duration<double>(Clock::now() - t1).count());
    }
    c10::IValue out = handle.get();
    if (free_previous_in_copy && free_after_get) previous = c10::IValue();
    const auto t2 = Clock::now();
    if (free_previous_in_copy) previous = std::move(out);
    if (keep_results) {
      kept.push_back(std::move(out));
      if (kept.size() > kKeptResults) kept.pop_front();
    }
    stats.add(handle.stats(), std::chrono::duration<double>(t1 - t0).count());
    return std::chrono::duration<double>(t2 - t0).count();
  };
  // A loop with gaps first runs a few copies untimed: the pool forecasts the next copy only
  // after eight regular intervals (worker_pool.h), and the case before this one left an odd one.
  if (idle_gap) {
    for (int i = 0; i < 10; ++i) copy();
    stats = mtc::microbench::StatsSum();
    drops.clear();
    frees.clear();
  }
  const mtc::detail::WorkerPool& pool = mtc::detail::worker_pool_for(target);
  const int64_t early_wakes = pool.anticipated_wakes();
  const uint64_t dicts_served = mtc::detail::dict_stash::served_total();
  const uint64_t shelf_made = mtc::detail::dict_shelf::made_by_thread();
  const uint64_t shelf_cut = mtc::detail::dict_shelf::cut_short();
  for (auto _ : state) {
    seconds.push_back(copy());
    state.SetIterationTime(seconds.back());
  }
  // A count over the benchmark's copies, as a counter per copy.
  const auto per_copy = [&](auto count) {
    return static_cast<double>(count) /
           static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  };
  // Workers that woke ahead of a copy, per copy (0 when none did; up to the pool's size).
  state.counters["early_wakes"] = per_copy(pool.anticipated_wakes() - early_wakes);
  // Output dicts made ahead (by idle workers or the dict-making thread) that the walks took, per
  // copy.
  state.counters["dicts_ahead"] = per_copy(mtc::detail::dict_stash::served_total() - dicts_served);
  // Dicts the dict-making thread made, and the times a copy stopped it short (dict_shelf.h).
  state.counters["shelf_made"] = per_copy(mtc::detail::dict_shelf::made_by_thread() - shelf_made);
  state.counters["shelf_cut"] = per_copy(mtc::detail::dict_shelf::cut_short() - shelf_cut);
  stats.report(state);
  report_median(state, seconds);
  if (!drops.empty()) state.counters["drop_us"] = mtc::microbench::median_of(drops) * 1e6;
  if (!frees.empty()) state.counters["free_us"] = mtc::microbench::median_of(frees) * 1e6;
  mtc::detail::set_parallel_walk(mtc::detail::kDefaultParallelWalkLeaves);
  mtc::detail::WorkerPoolSet::instance().set_spin(mtc::detail::WorkerPool::kDefaultSpin);
  mtc::detail::WorkerPoolSet::instance().set_anticipate(true);
  mtc::detail::version_pool::set_enabled(true);
  mtc::detail::key_interner::set_enabled(true);
  mtc::detail::dict_stash::set_enabled(stash_setting);
  mtc::detail::dict_shelf::set_enabled(shelf_setting);
  mtc::detail::set_types_in_place(true);
  mtc::detail::driver_warmup::set_enabled(warmup_setting);
  mtc::detail::prefetch::set_enabled(true);
  mtc::detail::WorkerPool::set_warm_worker_first(true);
  mtc::detail::set_early_split(true);
  mtc::detail::set_copied_shape(true);
  mtc::detail::device_block_stash::set_enabled(true);
  mtc::detail::set_free_ahead(true);
}

}  // namespace

BENCHMARK(BM_EngineCopy<Direction::kHostToDevice>)->Apply(engine_args);
BENCHMARK(BM_EngineCopy<Direction::kHostToDevice>)->Apply(h2d_gap_args);
BENCHMARK(BM_EngineCopy<Direction::kDeviceToHost>)->Apply(d2h_gap_args);
BENCHMARK(BM_EngineCopy<Direction::kDeviceToHost>)->Apply(d2h_args);
BENCHMARK(BM_PerTensorTo<Direction::kHostToDevice>)
    ->Arg(1)
    ->Arg(8)
    ->UseManualTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PerTensorTo<Direction::kDeviceToHost>)
    ->Arg(1)
    ->UseManualTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
