// Several GPUs copying at the same moment from one process, a thread per GPU, with the engine's
// worker pools per device or one pool for all of them, and one GPU alone: the three in one
// process, so that random interleaving of the repetitions lets every design see the same host.
// (Labels run in separate processes, as scripts/gpu-check-multi.sh does, differ by what the host
// did meanwhile as much as by the design.)
#include <benchmark/benchmark.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "detail/cuda_check.h"
#include "detail/impl_pool.h"
#include "detail/version_pool.h"
#include "detail/worker_pool_set.h"
#include "loop_copies.h"
#include "mtc/copier.h"
#include "reference_batch.h"
#include "released_threads.h"

namespace {

using Clock = std::chrono::steady_clock;
using mtc::microbench::confine_this_thread;
using mtc::microbench::cpu_slice;
using mtc::microbench::map_to;
using mtc::microbench::median_of;
using mtc::microbench::process_cpus;
using mtc::microbench::ReleasedRun;
using mtc::microbench::report_released;
using mtc::microbench::run_released;

enum Mode : int64_t {
  kPoolPerDevice = 0,
  kOnePoolForAll = 1,
  kAlone = 2,
  kAloneOnTheBenchmarksThread = 3,
  kEveryGpuOrOneAlone = 4,
  kEveryGpuOrOneAloneInRuns = 5
};

// What else a benchmark changes, to tell causes apart in one process: nothing; the engine's pool
// of output TensorImpls off (impl_pool::set_enabled); the batch's dicts typed Dict[str, Any] (a
// type without a reference count, where every Dict[str, Tensor] copies TensorType's, one for
// the whole process); to the CPU (BM_MultiGpuParts's walk only: new containers around the same
// tensors, no output TensorImpl); workers that never wake ahead of a forecast copy
// (WorkerPoolSet::set_anticipate(false), as MTC_WORKER_ANTICIPATE=0); training steps instead of
// the hot pattern, with a sleeping or a busy gap (LoopPattern: the targets of several GPUs are
// stated for both patterns); the TensorImpl pool, and the version counters' pool that follows its
// shards, with one list for every GPU (7, impl_pool::set_sharded(false), as 7 meant at b840770;
// 8, a list for each GPU's pool, became the default and left); the outputs' version counters
// new and freed as torch does (version_pool::set_enabled(false)); each GPU's thread and its pool's
// workers confined to a slice of the process's CPUs of its own (released_threads.h's cpu_slice;
// 10), instead of the scheduler placing the threads of every GPU anywhere.
enum Variant : int64_t {
  kAsIs = 0,
  kNoImplPool = 1,
  kAnyValues = 2,
  kContainersOnly = 3,
  kNoEarlyWakes = 4,
  kStepSleep = 5,
  kStepBusy = 6,
  kImplPoolOneList = 7,
  kNoVersionPool = 9,
  kCpuSlicePerGpu = 10
};

mtc::microbench::LoopPattern pattern_of(Variant v) {
  if (v == kStepSleep) return mtc::microbench::LoopPattern::kStepSleep;
  if (v == kStepBusy) return mtc::microbench::LoopPattern::kStepBusy;
  return mtc::microbench::LoopPattern::kHot;
}

// Sets what a variant changes, and puts back what was there (the environment's settings, such as
// MTC_WORKER_ANTICIPATE=0, hold for the benchmarks that run after it).
struct VariantScope {
  explicit VariantScope(Variant v) : variant(v) {
    if (v == kNoImplPool) mtc::detail::impl_pool::set_enabled(false);
    if (v == kNoEarlyWakes) mtc::detail::WorkerPoolSet::instance().set_anticipate(false);
    if (v == kImplPoolOneList) mtc::detail::impl_pool::set_sharded(false);
    if (v == kNoVersionPool) mtc::detail::version_pool::set_enabled(false);
    if (v == kCpuSlicePerGpu) {
      const int gpus = c10::cuda::device_count();
      for (int g = 0; g < gpus; ++g)
        confined =
            mtc::detail::WorkerPoolSet::instance().for_device(g).set_cpus(cpu_slice(g, gpus)) &&
            confined;
    }
  }
  VariantScope(const VariantScope&) = delete;  // restores once
  VariantScope& operator=(const VariantScope&) = delete;
  ~VariantScope() {
    mtc::detail::impl_pool::set_enabled(pool_was_on);
    mtc::detail::impl_pool::set_sharded(sharded);
    mtc::detail::version_pool::set_enabled(counters_pooled);
    mtc::detail::WorkerPoolSet::instance().set_anticipate(anticipated);
    if (variant == kCpuSlicePerGpu) {
      for (int g = 0; g < c10::cuda::device_count(); ++g)
        mtc::detail::WorkerPoolSet::instance().for_device(g).set_cpus(process_cpus());
    }
  }
  Variant variant;
  bool confined = true;  // every pool's workers confined as the variant asks (or nothing asked)
  bool pool_was_on = mtc::detail::impl_pool::enabled();
  bool sharded = mtc::detail::impl_pool::sharded();
  bool counters_pooled = mtc::detail::version_pool::enabled();
  bool anticipated = mtc::detail::WorkerPoolSet::instance().anticipate();
};

// Each GPU's own reference batches: on the CPU for CPU->GPU, on that GPU for GPU->CPU (made once;
// `index` tells the batches of a rotation apart).
const c10::IValue& input_for(int gpu, bool h2d, bool any_values = false, int index = 0) {
  static std::map<std::tuple<int, bool, bool, int>, c10::IValue> inputs;
  auto it = inputs.find({gpu, h2d, any_values, index});
  if (it != inputs.end()) return it->second;
  c10::IValue made = mtc::microbench::make_reference_batch(1, false, any_values);
  if (!h2d) {
    const c10::cuda::CUDAGuard on(static_cast<c10::DeviceIndex>(gpu));
    made = map_to(made, c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(gpu)));
    c10::cuda::device_synchronize();  // this GPU's
  }
  return inputs.emplace(std::make_tuple(gpu, h2d, any_values, index), std::move(made))
      .first->second;
}

// GPU `gpu`'s copies in `variant`'s pattern: its own batches, as many as the pattern takes turns
// with.
mtc::microbench::LoopCopies loop_for(int gpu, bool h2d, Variant variant) {
  const mtc::microbench::LoopPattern pattern = pattern_of(variant);
  std::vector<c10::IValue> inputs;
  for (int i = 0; i < mtc::microbench::inputs_for(pattern); ++i)
    inputs.push_back(input_for(gpu, h2d, variant == kAnyValues, i));
  const auto device = static_cast<c10::DeviceIndex>(gpu);
  return mtc::microbench::LoopCopies(
      std::move(inputs), h2d ? c10::Device(c10::kCUDA, device) : c10::Device(c10::kCPU), pattern);
}

// The process's pools as one benchmark wants them (one pool for all or not, how long idle workers
// spin), back to what they were (MTC_WORKER_SPIN_US's spin, say) when it ends, however it ends.
struct PoolSettings {
  PoolSettings(bool one_pool_for_all, std::chrono::microseconds spin) {
    mtc::detail::WorkerPoolSet::instance().set_one_pool_for_all(one_pool_for_all);
    mtc::detail::WorkerPoolSet::instance().set_spin(spin);
  }
  PoolSettings(const PoolSettings&) = delete;  // restores once
  PoolSettings& operator=(const PoolSettings&) = delete;
  ~PoolSettings() {
    mtc::detail::WorkerPoolSet::instance().set_one_pool_for_all(false);
    mtc::detail::WorkerPoolSet::instance().set_spin(spin_before);
  }
  std::chrono::microseconds spin_before = mtc::detail::WorkerPoolSet::instance().spin();
};

// GPU 0's copies from the calling thread, timed as BM_MultiGpuCopy's threads time theirs.
void copy_on_this_thread(benchmark::State& state, mtc::microbench::LoopCopies& loop) {
  c10::cuda::set_device(0);
  std::vector<double> seconds;
  mtc::microbench::StatsSum stats;
  for (auto _ : state) {
    const mtc::microbench::LoopCopy copy = loop.copy();
    seconds.push_back(copy.seconds);
    state.SetIterationTime(copy.seconds);
    stats.add(copy.stats, copy.start_seconds);
  }
  stats.report(state);
  if (seconds.empty()) return;
  state.counters["gpu0_us"] = median_of(seconds) * 1e6;
  state.counters["slowest_us"] = state.counters["gpu0_us"];
}

// Arguments: {0 CPU->GPU, 1 GPU->CPU; mode: 0 a worker pool per GPU, 1 one pool for all GPUs,
// 2 GPU 0 alone (from a thread released as the others are), 3 GPU 0 alone from the benchmark's
// own thread (as BM_EngineCopy: on 2026-11-26 mode 2's GPU->CPU copy took 248 us there against
// BM_EngineCopy's 171, unexplained), 4 a worker pool per GPU, each iteration at random every GPU
// or one GPU alone (each GPU against its own time alone, at nearby moments: gpuK_alone_us), 5
// the same in runs of 32 iterations (each kind a steady back-to-back loop, as in modes 0 and 2);
// how long idle workers spin, in us: 200 (the default), 2000 (a worker that walked its part early
// then no longer sleeps before the next copy; on four GPUs the cycle outlasts 200 us) or 0; a
// Variant (kAsIs for modes 0-3 at 200 and 2000 us, and 0 and 2 at 0 us; CPU->GPU with a pool per
// GPU and alone at 200 us also with the TensorImpl pool off and with Dict[str, Any] batches;
// modes 0 and 2 at 0 and 200 us without early wakes; mode 5 also at 0 and 2000 us, and at 200 us
// in training steps with either gap, with the TensorImpl pool's shards on and, CPU->GPU, with
// the TensorImpl pool off)}. Each iteration
// releases every GPU's thread at once (run_released) and each times its copy from start_copy until
// get() returned (LoopCopies: in the hot pattern the handle and the result are dropped after the
// clock, as in BM_EngineCopy; a step's gap comes before the clock starts; each GPU's loop first
// runs three copies untimed, a loop of steps ten, as BM_EngineCopy's steps do). Counters: each
// GPU's median over the iterations (gpuK_us: compare with gpu0_us of mode 2, one GPU alone) and the
// median of the slowest GPU's time (slowest_us). The iteration's time is the slowest GPU's. The
// engine's own steps (StatsSum: start_us, queued_us, traverse_us, ...) are means over every GPU's
// copies: where the time of several GPUs at once went. In mode 1 a copy's walk and fills may also
// take more helpers than a GPU's own pool has.
void BM_MultiGpuCopy(benchmark::State& state) {
  const int visible = c10::cuda::device_count();
  if (visible < 2) return state.SkipWithError("fewer than two CUDA devices");
  const auto mode = static_cast<Mode>(state.range(1));
  if (mode == kOnePoolForAll && mtc::detail::WorkerCount::from_environment().shared())
    return state.SkipWithError("MTC_WORKER_THREADS is set: every GPU shares one pool already");
  const bool h2d = state.range(0) == 0;
  const VariantScope variant(static_cast<Variant>(state.range(3)));
  if (!variant.confined) return state.SkipWithError("the system refused to confine the workers");
  const int gpus = mode == kAlone || mode == kAloneOnTheBenchmarksThread ? 1 : visible;
  std::vector<mtc::microbench::LoopCopies> loops;
  for (int g = 0; g < gpus; ++g) loops.push_back(loop_for(g, h2d, variant.variant));
  const PoolSettings settings(mode == kOnePoolForAll, std::chrono::microseconds(state.range(2)));
  // Untimed copies first. A GPU's first copies set up what later ones reuse (its worker pool,
  // pinned chunks, the engine's pools): 0.4 s for four H200s at once (2026-11-27), which made this
  // benchmark, when it came first in its process, run one iteration per repetition (Google
  // Benchmark sizes a benchmark's runs from its first iteration). In steps, the pools also
  // forecast a copy only after eight regular intervals (worker_pool.h).
  const int warm_up = pattern_of(variant.variant) == mtc::microbench::LoopPattern::kHot ? 3 : 10;
  for (int g = 0; g < gpus; ++g) {
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(g));
    for (int i = 0; i < warm_up; ++i) loops[static_cast<size_t>(g)].copy();
  }
  if (mode == kAloneOnTheBenchmarksThread) return copy_on_this_thread(state, loops.front());

  std::vector<mtc::microbench::StatsSum> stats(static_cast<size_t>(gpus));
  ReleasedRun run = run_released(
      state, gpus,
      [&](int g, bool alone) {
        // run_released's threads are new for each benchmark run: confined once each.
        thread_local bool this_thread_confined = false;
        if (variant.variant == kCpuSlicePerGpu && !this_thread_confined) {
          confine_this_thread(cpu_slice(g, gpus));
          this_thread_confined = true;
        }
        const mtc::microbench::LoopCopy copy = loops[static_cast<size_t>(g)].copy();
        // The engine's steps of the copies with every GPU only (modes 4 and 5 run both kinds).
        if (!alone) stats[static_cast<size_t>(g)].add(copy.stats, copy.start_seconds);
        return copy.seconds;
      },
      /*mix_block=*/mode == kEveryGpuOrOneAlone ? 1
      : mode == kEveryGpuOrOneAloneInRuns       ? 32
                                                : 0);
  for (size_t g = 1; g < stats.size(); ++g) stats[0].merge(stats[g]);
  stats[0].report(state);
  report_released(state, run);
}

BENCHMARK(BM_MultiGpuCopy)
    ->ArgsProduct({{0, 1},
                   {kPoolPerDevice, kOnePoolForAll, kAlone, kAloneOnTheBenchmarksThread},
                   {mtc::detail::WorkerPool::kDefaultSpin.count(), 2000},
                   {kAsIs}})
    ->ArgsProduct({{0}, {kPoolPerDevice, kAlone}, {200}, {kNoImplPool, kAnyValues}})
    ->ArgsProduct({{0, 1}, {kEveryGpuOrOneAlone, kEveryGpuOrOneAloneInRuns}, {200}, {kAsIs}})
    ->ArgsProduct({{0, 1}, {kEveryGpuOrOneAloneInRuns}, {200}, {kStepSleep, kStepBusy}})
    ->ArgsProduct({{0, 1}, {kEveryGpuOrOneAloneInRuns}, {200}, {kCpuSlicePerGpu}})
    ->ArgsProduct({{0, 1}, {kEveryGpuOrOneAloneInRuns}, {0, 2000}, {kAsIs}})
    ->ArgsProduct({{0}, {kEveryGpuOrOneAloneInRuns}, {200}, {kNoImplPool}})
    ->ArgsProduct({{0, 1}, {kEveryGpuOrOneAloneInRuns}, {200}, {kImplPoolOneList, kNoVersionPool}})
    ->ArgsProduct({{0, 1}, {kPoolPerDevice, kAlone}, {0, 200}, {kNoEarlyWakes}})
    ->ArgsProduct({{0, 1}, {kPoolPerDevice, kAlone}, {0}, {kAsIs}})
    ->UseManualTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);

// Two parts of a CPU->GPU copy of the reference batch, each done by every GPU's thread at once
// against GPU 0's alone: what grows when one process drives several GPUs, the CPU's work or the
// driver's? (2026-11-26: with four GPUs in one process the copy took 1.23-1.29x its time alone,
// the growth in the walk; one process per GPU, 1.01-1.13x.) Arguments: {part: 0 the walk alone,
// on one thread, as BM_Walk (new containers, the packing plan, the output views; no CUDA
// call); 1 the driver's part alone: kChunks chunks of kChunkBytes, each a device allocation
// from torch's caching allocator and a cudaMemcpyAsync from pinned memory on the GPU's current
// stream, then an event recorded and waited for (the reference batch's split walk submits ~4.75
// chunks of ~32 KiB); 0 every GPU at once, 1 GPU 0 alone, 2 every GPU or one alone in runs of 32
// iterations (each GPU against its own time alone: gpuK_alone_us; the walk only); a Variant (the
// walk: each; the driver's part: kAsIs)}. Each thread drops its walk's result itself, after the
// clock. Counters as BM_MultiGpuCopy's, and for the driver's part submit_us: the median time until
// the event was recorded (the calls alone, before the wait).
constexpr int kChunks = 5;
constexpr size_t kChunkBytes = 32 << 10;

struct DriverSide {
  std::byte* pinned = nullptr;  // kChunks chunks, never freed (the process ends first)
  cudaEvent_t done = nullptr;
};

DriverSide& driver_side(int gpu) {
  static std::map<int, DriverSide> sides;  // made on the benchmark's thread before the release
  if (auto it = sides.find(gpu); it != sides.end()) return it->second;
  DriverSide& side = sides[gpu];
  const c10::cuda::CUDAGuard on(static_cast<c10::DeviceIndex>(gpu));
  void* host = nullptr;
  MTC_CUDA_CHECK(cudaHostAlloc(&host, kChunks * kChunkBytes, cudaHostAllocDefault));
  side.pinned = static_cast<std::byte*>(host);
  MTC_CUDA_CHECK(cudaEventCreateWithFlags(&side.done, cudaEventDisableTiming));
  return side;
}

double driver_part(int gpu, double& submit_seconds) {
  const DriverSide& side = driver_side(gpu);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(gpu));
  std::array<c10::DataPtr, kChunks> chunks;
  const auto t0 = Clock::now();
  for (int c = 0; c < kChunks; ++c) {
    chunks[static_cast<size_t>(c)] = c10::cuda::CUDACachingAllocator::get()->allocate(kChunkBytes);
    MTC_CUDA_CHECK(cudaMemcpyAsync(chunks[static_cast<size_t>(c)].get(),
                                   side.pinned + c * kChunkBytes, kChunkBytes,
                                   cudaMemcpyHostToDevice, stream));
  }
  MTC_CUDA_CHECK(cudaEventRecord(side.done, stream));
  submit_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  MTC_CUDA_CHECK(cudaEventSynchronize(side.done));
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double walk_part(int gpu, Variant variant) {
  const c10::Device target = variant == kContainersOnly
                                 ? c10::Device(c10::kCPU)
                                 : c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(gpu));
  // With the shards on, each GPU's thread has a shard of its own. Unlike the engine's, whose
  // workers take the blocks the caller freed, this thread frees its blocks and takes them back
  // itself: the shards' best case.
  mtc::detail::impl_pool::set_thread_shard(1 + static_cast<size_t>(gpu));
  return mtc::microbench::walk_seconds(input_for(gpu, true, variant == kAnyValues), target);
}

void BM_MultiGpuParts(benchmark::State& state) {
  const int visible = c10::cuda::device_count();
  if (visible < 2) return state.SkipWithError("fewer than two CUDA devices");
  const bool driver = state.range(0) == 1;
  const int gpus = state.range(1) == 1 ? 1 : visible;
  const int mix_block = state.range(1) == 2 ? 32 : 0;
  const VariantScope variant(static_cast<Variant>(state.range(2)));
  for (int g = 0; g < gpus; ++g)
    driver ? (void)driver_side(g) : (void)input_for(g, true, variant.variant == kAnyValues);
  std::vector<std::vector<double>> submits(static_cast<size_t>(gpus));
  ReleasedRun run = run_released(
      state, gpus,
      [&](int g, bool) {
        if (!driver) return walk_part(g, variant.variant);
        double submit = 0;
        const double seconds = driver_part(g, submit);
        submits[static_cast<size_t>(g)].push_back(submit);
        return seconds;
      },
      mix_block);
  report_released(state, run);
  if (!driver || run.slowest.empty()) return;
  std::vector<double> all;
  for (const auto& s : submits) all.insert(all.end(), s.begin(), s.end());
  state.counters["submit_us"] = median_of(all) * 1e6;
}

BENCHMARK(BM_MultiGpuParts)
    ->ArgsProduct({{0}, {0, 1}, {kAsIs, kNoImplPool, kAnyValues, kContainersOnly}})
    ->ArgsProduct({{0},
                   {2},
                   {kAsIs, kNoImplPool, kAnyValues, kContainersOnly, kImplPoolOneList,
                    kNoVersionPool}})
    ->ArgsProduct({{1}, {0, 1}, {kAsIs}})
    ->UseManualTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
