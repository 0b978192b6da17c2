// Google Benchmark binary for the engine's steps (the walk, plan, staging fill, output
// creation) and for whole copies beside the per-tensor .to() baseline, so each step's cost can
// be tracked over time. Argument = batch multiplier: 1 -> 528 tensors, 8 -> 4,224 tensors.
#include <ATen/ops/empty.h>
#include <benchmark/benchmark.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <initializer_list>
#include <limits>
#include <map>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_support.h"
#include "detail/copy_job.h"
#include "detail/dict_stash.h"
#include "detail/key_interner.h"
#include "detail/leaf_router.h"
#include "detail/outputs.h"
#include "detail/pack_plan.h"
#include "detail/pinned_pool_set.h"
#include "detail/staging.h"
#include "detail/structure.h"
#include "detail/version_pool.h"
#include "detail/worker_pool_set.h"
#include "mtc/copier.h"
#include "reference_batch.h"

namespace {

using Clock = std::chrono::steady_clock;
using mtc::microbench::has_gpu;
using mtc::microbench::map_to;
using mtc::microbench::report_median;

const c10::IValue& batch(int repeat, bool shared_keys = false, bool any_values = false) {
  static std::map<std::tuple<int, bool, bool>, c10::IValue> cache;
  const std::tuple<int, bool, bool> key{repeat, shared_keys, any_values};
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, mtc::microbench::make_reference_batch(repeat, shared_keys, any_values))
             .first;
  return it->second;
}

std::vector<at::Tensor> leaves_of(int repeat) {
  return mtc::microbench::tensor_leaves(batch(repeat));
}

std::vector<mtc::detail::PackCandidate> candidates(const std::vector<at::Tensor>& leaves) {
  std::vector<mtc::detail::PackCandidate> out;
  for (size_t i = 0; i < leaves.size(); ++i)
    out.push_back({static_cast<int64_t>(i), static_cast<int64_t>(leaves[i].nbytes()),
                   static_cast<int64_t>(leaves[i].element_size())});
  return out;
}

// The engine's walk with its own policy: new containers, packing plan and packed output views
// (to a CUDA target: no CUDA call happens in the walk, so this runs without a GPU too), or for a
// CPU target new containers around the same tensors. Second argument: 1 CUDA, 0 CPU target.
void BM_Walk(benchmark::State& state) {
  const c10::IValue& data = batch(static_cast<int>(state.range(0)));
  const c10::Device target = state.range(1) ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  const mtc::CopyOptions options;
  for (auto _ : state) {
    mtc::CopyStats stats;
    mtc::detail::LeafRouter router(target, options, stats);
    c10::IValue result;
    mtc::detail::StructureCopier<mtc::detail::LeafRouter>(router).copy(data, result);
    benchmark::DoNotOptimize(result);
  }
}

// The walk of BM_Walk (CUDA target) split across `threads` threads other than the caller's, each
// walking a consecutive group of root elements with its own router: how well the walk itself
// scales, apart from wake-ups, submissions and the device. Each thread times its own walk; an
// iteration is the slowest thread's. Flags: 1: each thread frees its previous result itself
// (otherwise the caller frees it, as a training loop would); 2: every input dict shares its key
// objects with the others (otherwise each has keys of its own; the outputs' keys are the walking
// thread's either way since key_interner.h, before which they were the input's); 4: dicts typed
// Dict[str, Any] (a type without a reference count) instead of Dict[str, Tensor]; 8: to the CPU
// (new containers only, the tensors are returned as they are).
void BM_WalkThreads(benchmark::State& state) {
  const int flags = static_cast<int>(state.range(2));
  const bool free_on_walker = flags & 1;
  const c10::IValue& data = batch(static_cast<int>(state.range(0)), flags & 2, flags & 4);
  const int threads = static_cast<int>(state.range(1));
  const c10::Device target = flags & 8 ? c10::Device(c10::kCPU) : c10::Device(c10::kCUDA, 0);
  const mtc::CopyOptions options;
  using Copier = mtc::detail::StructureCopier<mtc::detail::LeafRouter>;
  const std::vector<const c10::IValue*> elements = Copier::elements_of(data);
  const size_t n = elements.size();
  std::vector<c10::IValue> built(n);
  std::vector<double> took(static_cast<size_t>(threads));
  std::atomic<int64_t> generation{0};
  std::atomic<int> done{0};
  std::atomic<bool> quit{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const size_t first = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
      const size_t last = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
      for (int64_t seen = 0;;) {
        int64_t g;
        while ((g = generation.load(std::memory_order_acquire)) == seen && !quit.load()) {
        }
        if (quit.load()) return;
        seen = g;
        if (free_on_walker)
          for (size_t i = first; i < last; ++i) built[i] = c10::IValue();
        const auto t0 = Clock::now();
        mtc::CopyStats stats;
        mtc::detail::LeafRouter router(target, options, stats);
        Copier copier(router);
        for (size_t i = first; i < last; ++i)
          built[i] = copier.copy_element(*elements[i], static_cast<uint32_t>(i));
        took[static_cast<size_t>(t)] = std::chrono::duration<double>(Clock::now() - t0).count();
        done.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  for (auto _ : state) {
    if (!free_on_walker)
      for (auto& b : built) b = c10::IValue();
    done.store(0);
    generation.fetch_add(1, std::memory_order_acq_rel);
    while (done.load(std::memory_order_acquire) < threads) {
    }
    state.SetIterationTime(*std::max_element(took.begin(), took.end()));
  }
  quit.store(true);
  for (auto& t : pool) t.join();
}

void BM_Plan(benchmark::State& state) {
  const auto c = candidates(leaves_of(static_cast<int>(state.range(0))));
  for (auto _ : state) benchmark::DoNotOptimize(mtc::detail::plan_packing(c, 16, 32 << 20));
}

void BM_StagingFill(benchmark::State& state) {
  const auto leaves = leaves_of(static_cast<int>(state.range(0)));
  const auto plan = mtc::detail::plan_packing(candidates(leaves), 16, 32 << 20);
  std::vector<mtc::detail::StagingCopy> copies;
  for (const auto& item : plan.items)
    copies.push_back({leaves[item.leaf].const_data_ptr(), item.offset, item.bytes});
  const int64_t bytes = plan.chunks.at(0).bytes;
  // Pinned when a GPU is there (what the engine fills), plain host memory otherwise.
  std::vector<std::byte> plain;
  mtc::detail::PinnedBlock block;
  std::byte* dst = nullptr;
  if (has_gpu()) {
    block = mtc::detail::PinnedPoolSet::instance().for_device(0).acquire(bytes);
    dst = block.data;
  } else {
    plain.resize(static_cast<size_t>(bytes));
    dst = plain.data();
  }
  for (auto _ : state) {
    mtc::detail::fill_staging(copies, dst);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  mtc::detail::PinnedPool::give_back(block);
}

// Output views alone (part of the walk): a TensorImpl per packed tensor on a shared storage.
void BM_CreateOutputs(benchmark::State& state) {
  const auto leaves = leaves_of(static_cast<int>(state.range(0)));
  const auto plan = mtc::detail::plan_packing(candidates(leaves), 16, 32 << 20);
  const auto device = has_gpu() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  const at::Tensor chunk =
      at::empty({plan.chunks.at(0).bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  std::vector<at::Tensor> outputs(leaves.size());
  for (auto _ : state) {
    for (const auto& item : plan.items)
      outputs[item.leaf] = mtc::detail::make_view(chunk.storage(), item.offset, leaves[item.leaf]);
    benchmark::DoNotOptimize(outputs.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(plan.items.size()));
}

c10::IValue source(int repeat, bool on_gpu) {
  static std::map<int, c10::IValue> gpu;
  if (!on_gpu) return batch(repeat);
  auto it = gpu.find(repeat);
  if (it == gpu.end())
    it = gpu.emplace(repeat, map_to(batch(repeat), c10::Device(c10::kCUDA, 0))).first;
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
  // Bit 128: a different batch each copy, from a rotation of eight.
  const std::vector<c10::IValue> inputs =
      state.range(1) & 128
          ? mtc::microbench::rotation(static_cast<int>(state.range(0)), !h2d)
          : std::vector<c10::IValue>{source(static_cast<int>(state.range(0)), !h2d)};
  // Bit 256: the previous copy's result is freed on the caller right after start_copy, inside
  // the timed copy (a training step drops the last batch when the next one arrives); otherwise
  // it is freed after the clock stopped.
  const bool free_previous_in_copy = state.range(1) & 256;
  // Bit 65536 (with 256): it is freed after get() returned, still inside the timed copy, as
  // mtc-bench's step pattern frees it (`batch = copy(next)`), instead of while the workers walk.
  const bool free_after_get = state.range(1) & 65536;
  const c10::Device target = h2d ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  mtc::CopyOptions options;
  options.pack_cpu_tensors = state.range(1) & 1;
  options.use_pinned_staging = state.range(1) & 2;
  options.use_background_thread = state.range(1) & 4;
  // Bit 8: leave the engine idle for 5 ms before each copy, so its workers have gone to sleep
  // (a training step's one copy), instead of back-to-back copies that find them spinning; with
  // bit 1024 the caller spends the gap busy over 32 MiB (a forward pass) instead of sleeping.
  const bool idle_gap = state.range(1) & 8;
  const bool busy = state.range(1) & 1024;
  // Bit 32768: the caller spins on the clock through the gap, touching no memory (awake, and
  // evicting nothing itself).
  const bool spin = !busy && (state.range(1) & 32768);
  // Bit 2048: a gap of 200 us instead of 5 ms, a little longer than a worker's spin: a tight
  // loop whose caller has work of its own between copies (as a loop in Python does).
  const auto gap =
      state.range(1) & 2048 ? std::chrono::microseconds(200) : std::chrono::microseconds(5000);
  // Bit 16: never split the walk across the pool (one thread walks), to compare with the split;
  // bit 32: at most one walking thread per 256 leaves instead of 128 (fewer helpers).
  // Bit 16384: one per 64 leaves instead (more helpers, as many as the pool has).
  const int64_t leaves_per_part = state.range(1) & 32      ? 256
                                  : state.range(1) & 16384 ? 64
                                                           : mtc::detail::kDefaultLeavesPerPart;
  mtc::detail::set_parallel_walk(state.range(1) & 16 ? std::numeric_limits<int64_t>::max()
                                                     : mtc::detail::kDefaultParallelWalkLeaves,
                                 leaves_per_part);
  // Bit 64: idle workers spin 2 ms instead of 200 us before sleeping, so back-to-back copies
  // always find them awake (to tell wake-up costs from walking costs).
  if (state.range(1) & 64)
    mtc::detail::WorkerPoolSet::instance().set_spin(std::chrono::milliseconds(2));
  // Bit 8192: idle workers spin 10 ms, through a step's whole gap: whether a worker that slept
  // comes back slower than one that stayed on its core.
  if (state.range(1) & 8192)
    mtc::detail::WorkerPoolSet::instance().set_spin(std::chrono::milliseconds(10));
  // Bit 512: sleeping workers do not wake ahead of the next copy (worker_pool.h).
  mtc::detail::WorkerPoolSet::instance().set_anticipate(!(state.range(1) & 512));
  // Bit 4096: output version counters allocated and freed as torch does (version_pool.h).
  mtc::detail::version_pool::set_enabled(!(state.range(1) & 4096));
  // Bit 131072: output dicts share the input's key objects, as before key_interner.h.
  mtc::detail::key_interner::set_enabled(!(state.range(1) & 131072));
  // Output dicts made ahead by idle workers (dict_stash.h): bit 262144 on, bit 1048576 off,
  // whatever MTC_DICT_STASH says (read above, with the pools); neither, as the process has it (on
  // by default). The case ends with the process's setting back.
  const bool stash_setting = mtc::detail::dict_stash::enabled();
  if (state.range(1) & 262144) mtc::detail::dict_stash::set_enabled(true);
  if (state.range(1) & 1048576) mtc::detail::dict_stash::set_enabled(false);
  std::vector<double> seconds;
  mtc::microbench::StatsSum stats;
  c10::IValue previous;
  size_t turn = 0;
  // One copy as a training loop makes it; returns its time and adds its steps to `stats`.
  auto copy = [&] {
    if (idle_gap && busy) mtc::microbench::busy_gap(gap);
    if (idle_gap && spin) mtc::microbench::spin_gap(gap);
    if (idle_gap && !busy && !spin) std::this_thread::sleep_for(gap);
    const c10::IValue& data = inputs[turn++ % inputs.size()];
    const auto t0 = Clock::now();
    mtc::CopyHandle handle = mtc::start_copy(data, target, options);
    const auto t1 = Clock::now();
    if (free_previous_in_copy && !free_after_get) previous = c10::IValue();
    c10::IValue out = handle.get();
    if (free_previous_in_copy && free_after_get) previous = c10::IValue();
    const auto t2 = Clock::now();
    if (free_previous_in_copy) previous = std::move(out);
    stats.add(handle.stats(), std::chrono::duration<double>(t1 - t0).count());
    return std::chrono::duration<double>(t2 - t0).count();
  };
  // A loop with gaps first runs a few copies untimed: the pool forecasts the next copy only
  // after eight regular intervals (worker_pool.h), and the case before this one left an odd one.
  if (idle_gap) {
    for (int i = 0; i < 10; ++i) copy();
    stats = mtc::microbench::StatsSum();
  }
  const mtc::detail::WorkerPool& pool = mtc::detail::worker_pool_for(target);
  const int64_t early_wakes = pool.anticipated_wakes();
  for (auto _ : state) {
    seconds.push_back(copy());
    state.SetIterationTime(seconds.back());
  }
  // Workers that woke ahead of a copy, per copy (0 when none did; up to the pool's size).
  state.counters["early_wakes"] = static_cast<double>(pool.anticipated_wakes() - early_wakes) /
                                  static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  stats.report(state);
  report_median(state, seconds);
  mtc::detail::set_parallel_walk(mtc::detail::kDefaultParallelWalkLeaves);
  mtc::detail::WorkerPoolSet::instance().set_spin(mtc::detail::WorkerPool::kDefaultSpin);
  mtc::detail::WorkerPoolSet::instance().set_anticipate(true);
  mtc::detail::version_pool::set_enabled(true);
  mtc::detail::key_interner::set_enabled(true);
  mtc::detail::dict_stash::set_enabled(stash_setting);
}

// Arguments: {batch multiplier, option bits: 1 pack, 2 pinned staging, 4 background thread,
// 8 idle gap before each copy, 16 walk never split, 32 one walking thread per 256 leaves,
// 64 workers spin 2 ms, 128 a fresh batch each copy (rotation of 8), 256 previous result freed
// inside the copy, 512 workers never wake ahead of a copy, 1024 the gap busy, 2048 the gap 200 us
// instead of 5 ms, 4096 no version_pool, 8192 workers spin 10 ms, 16384 one walking thread per 64
// leaves, 32768 the caller spins through the gap, 65536 with 256: freed after get() instead,
// 131072 output dicts share the input's keys, 262144 output dicts made ahead (in the notes of
// 2026-11-29 and before, cases without this bit had none; now they follow MTC_DICT_STASH, on by
// default), 524288 unused (with 262144 it made them as soon as a worker was idle, until
// 2026-11-29), 1048576 none made ahead}. 399 =
// 7 + 8 + 128 + 256 is a training loop's step: a fresh batch after an idle gap, the last one
// dropped meanwhile; 1423 the same step after a busy gap; 911 and 1935 those without waking ahead;
// 2447, 2959, 3471 and 3983 the four with the short gap. Cases without a gap run until their copies
// took 0.3 s.
void engine_args(benchmark::internal::Benchmark* b) {
  for (int repeat : {1, 8}) b->Args({repeat, 7})->Args({repeat, 4103});
  b->Args({1, 71});
  b->Args({1, 391});
  b->Args({1, 23})->Args({8, 23})->Args({1, 39});
  b->Args({1, 6})->Args({1, 5})->Args({1, 3});
  // Who builds the outputs in a training loop's step (gap 0 and the full step): the walk split
  // on the pool (391, 399), on one worker (+16), split by the caller (-4), all on the caller.
  b->Args({1, 19})->Args({1, 407})->Args({1, 387})->Args({1, 403});
  b->Args({1, 16391});    // hot with a walking thread per 64 leaves
  b->Args({1, 131079});   // hot with the input's keys in the output dicts
  b->Args({1, 262151});   // hot with output dicts made ahead
  b->Args({1, 1048583});  // hot without output dicts made ahead
  b->UseManualTime()->MinTime(0.3)->Unit(benchmark::kMicrosecond);
}

// Cases with a gap before each copy run a fixed number of copies: 0.3 s of copies of ~300 us
// would take 1,000 gaps, 5 s a repetition with the 5 ms gap.
constexpr int64_t kCopiesAfterAGap = 100;
void gap_args(benchmark::internal::Benchmark* b, std::initializer_list<int64_t> flags) {
  for (const int64_t f : flags) b->Args({1, f});
  b->UseManualTime()->Iterations(kCopiesAfterAGap)->Unit(benchmark::kMicrosecond);
}
void h2d_gap_args(benchmark::internal::Benchmark* b) {
  gap_args(b, {15,    527,   31,    135,   399,    911,    1423,   1935,   415,     395,    411,
               2447,  2959,  3471,  3983,  4495,   5519,   8591,   9615,   16783,   17807,  33167,
               41359, 33163, 65935, 66959, 131471, 132495, 262543, 263567, 1048975, 1049999});
}
void d2h_gap_args(benchmark::internal::Benchmark* b) {
  gap_args(b, {135, 399, 911, 1423, 1935, 415, 411, 4495, 5519, 8591, 9615, 16783, 65935, 66959,
               131471, 262543, 263567, 1048975, 1049999});
}

}  // namespace

BENCHMARK(BM_Walk)->Args({1, 1})->Args({8, 1})->Args({1, 0})->Args({8, 0})->Unit(
    benchmark::kMicrosecond);
// Flags 2 and 4 made no difference on their own (results/NOTES.md, 2026-11-22, before the outputs'
// keys were the walking thread's), so they are not combined; the full GPU check runs every
// registered case five times.
BENCHMARK(BM_WalkThreads)
    ->ArgsProduct({{1, 8}, {1, 2, 4}, {0, 1, 2, 4, 8, 9}})
    ->UseManualTime()
    ->MinTime(0.2)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Plan)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StagingFill)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CreateOutputs)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EngineCopy<Direction::kHostToDevice>)->Apply(engine_args);
BENCHMARK(BM_EngineCopy<Direction::kHostToDevice>)->Apply(h2d_gap_args);
BENCHMARK(BM_EngineCopy<Direction::kDeviceToHost>)->Apply(d2h_gap_args);
BENCHMARK(BM_EngineCopy<Direction::kDeviceToHost>)
    ->Args({1, 7})
    ->Args({1, 262151})   // hot with output dicts made ahead
    ->Args({1, 1048583})  // hot without output dicts made ahead
    ->Args({1, 4103})
    ->Args({8, 7})
    ->Args({8, 4103})
    ->Args({1, 19})
    ->UseManualTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);
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
