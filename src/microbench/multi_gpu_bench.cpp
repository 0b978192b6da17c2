// Several GPUs copying at the same moment from one process, a thread per GPU, with the engine's
// worker pools per device or one pool for all of them, and one GPU alone: the three in one
// process, so that random interleaving of the repetitions lets every design see the same host.
// (Labels run in separate processes, as scripts/gpu-check-multi.sh does, differ by what the host
// did meanwhile as much as by the design.)
#include <benchmark/benchmark.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "detail/worker_pool_set.h"
#include "mtc/copier.h"
#include "reference_batch.h"

namespace {

using Clock = std::chrono::steady_clock;
using mtc::microbench::map_to;
using mtc::microbench::median_of;

enum Mode : int64_t {
  kPoolPerDevice = 0,
  kOnePoolForAll = 1,
  kAlone = 2,
  kAloneOnTheBenchmarksThread = 3
};

// Each GPU's own reference batch: on the CPU for CPU->GPU, on that GPU for GPU->CPU (made once).
const c10::IValue& input_for(int gpu, bool h2d) {
  static std::map<std::pair<int, bool>, c10::IValue> inputs;
  auto it = inputs.find({gpu, h2d});
  if (it != inputs.end()) return it->second;
  c10::IValue made = mtc::microbench::make_reference_batch();
  if (!h2d) {
    const c10::cuda::CUDAGuard on(static_cast<c10::DeviceIndex>(gpu));
    made = map_to(made, c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(gpu)));
    c10::cuda::device_synchronize();  // this GPU's
  }
  return inputs.emplace(std::make_pair(gpu, h2d), std::move(made)).first->second;
}

// The process's pools as one benchmark wants them (one pool for all or not, how long idle workers
// spin), back to the defaults when it ends, however it ends.
struct PoolSettings {
  PoolSettings(bool one_pool_for_all, std::chrono::microseconds spin) {
    mtc::detail::WorkerPoolSet::instance().set_one_pool_for_all(one_pool_for_all);
    mtc::detail::WorkerPoolSet::instance().set_spin(spin);
  }
  PoolSettings(const PoolSettings&) = delete;  // restores once
  PoolSettings& operator=(const PoolSettings&) = delete;
  ~PoolSettings() {
    mtc::detail::WorkerPoolSet::instance().set_one_pool_for_all(false);
    mtc::detail::WorkerPoolSet::instance().set_spin(mtc::detail::WorkerPool::kDefaultSpin);
  }
};

// GPU 0's copies from the calling thread, timed as BM_MultiGpuCopy's threads time theirs.
void copy_on_this_thread(benchmark::State& state, const c10::IValue& data, bool h2d) {
  c10::cuda::set_device(0);
  const c10::Device target = h2d ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  std::vector<double> seconds;
  mtc::microbench::StatsSum stats;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    mtc::CopyHandle handle = mtc::start_copy(data, target);
    const auto t1 = Clock::now();
    const c10::IValue out = handle.get();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    state.SetIterationTime(seconds.back());
    stats.add(handle.stats(), std::chrono::duration<double>(t1 - t0).count());
  }
  stats.report(state);
  if (seconds.empty()) return;
  state.counters["gpu0_us"] = median_of(seconds) * 1e6;
  state.counters["slowest_us"] = state.counters["gpu0_us"];
}

// Arguments: {0 CPU->GPU, 1 GPU->CPU; mode: 0 a worker pool per GPU, 1 one pool for all GPUs,
// 2 GPU 0 alone (from a thread released as the others are), 3 GPU 0 alone from the benchmark's
// own thread (as BM_EngineCopy: on 2026-11-26 mode 2's GPU->CPU copy took 248 us there against
// BM_EngineCopy's 171, unexplained); how long idle workers spin, in us: 200 (the default) or
// 2000 (a worker that walked its part early then no longer sleeps before the next copy; on four
// GPUs the cycle outlasts 200 us)}. Each iteration releases
// every GPU's thread at once (they spin on a generation count, so they start within a microsecond
// or two of each other; a barrier's wake-ups would spread them by tens) and each times its copy
// from start_copy until get() returned; the handle and the result are dropped after the clock (the
// hot pattern, as BM_EngineCopy). Counters: each GPU's median over the iterations (gpuK_us: compare
// with gpu0_us of mode 2, one GPU alone) and the median of the slowest GPU's time (slowest_us). The
// iteration's time is the slowest GPU's. The engine's own steps (StatsSum: start_us, queued_us,
// traverse_us, ...) are means over every GPU's copies: where the time of several GPUs at once went.
// In mode 1 a copy's walk and fills may also take more helpers than a GPU's own pool has.
void BM_MultiGpuCopy(benchmark::State& state) {
  const int visible = c10::cuda::device_count();
  if (visible < 2) return state.SkipWithError("fewer than two CUDA devices");
  const auto mode = static_cast<Mode>(state.range(1));
  if (mode == kOnePoolForAll && mtc::detail::WorkerCount::from_environment().shared())
    return state.SkipWithError("MTC_WORKER_THREADS is set: every GPU shares one pool already");
  const bool h2d = state.range(0) == 0;
  const int gpus = mode == kAlone || mode == kAloneOnTheBenchmarksThread ? 1 : visible;
  for (int g = 0; g < gpus; ++g) input_for(g, h2d);
  const PoolSettings settings(mode == kOnePoolForAll, std::chrono::microseconds(state.range(2)));
  if (mode == kAloneOnTheBenchmarksThread)
    return copy_on_this_thread(state, input_for(0, h2d), h2d);

  std::vector<std::vector<double>> seconds(static_cast<size_t>(gpus));
  std::vector<mtc::microbench::StatsSum> stats(static_cast<size_t>(gpus));
  std::atomic<int64_t> generation{0};
  std::atomic<int> finished{0};
  std::atomic<bool> quit{false};
  std::mutex error_mutex;
  std::string error;  // the first copy that threw; the benchmark stops with it
  std::vector<std::thread> threads;
  for (int g = 0; g < gpus; ++g) {
    threads.emplace_back([&, g] {
      const auto device = static_cast<c10::DeviceIndex>(g);
      c10::cuda::set_device(device);
      const c10::IValue& data = input_for(g, h2d);
      const c10::Device target = h2d ? c10::Device(c10::kCUDA, device) : c10::Device(c10::kCPU);
      for (int64_t seen = 0;;) {
        while (generation.load(std::memory_order_acquire) == seen && !quit.load())
          mtc::detail::cpu_relax();
        if (quit.load()) return;
        ++seen;
        try {
          // The handle and the result go at the end of this scope: after the clock, before the
          // thread reports the iteration done (so the next one starts with every thread ready).
          const auto t0 = Clock::now();
          mtc::CopyHandle handle = mtc::start_copy(data, target);
          const auto t1 = Clock::now();
          const c10::IValue out = handle.get();
          seconds[static_cast<size_t>(g)].push_back(
              std::chrono::duration<double>(Clock::now() - t0).count());
          stats[static_cast<size_t>(g)].add(handle.stats(),
                                            std::chrono::duration<double>(t1 - t0).count());
        } catch (const std::exception& e) {
          const std::lock_guard<std::mutex> lock(error_mutex);
          if (error.empty()) error = "GPU " + std::to_string(g) + ": " + e.what();
        }
        finished.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  std::vector<double> slowest;
  for (auto _ : state) {
    finished.store(0);
    generation.fetch_add(1, std::memory_order_acq_rel);
    while (finished.load(std::memory_order_acquire) < gpus) mtc::detail::cpu_relax();
    {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error.empty()) {
        state.SkipWithError(error.c_str());
        break;
      }
    }
    double longest = 0;
    for (const auto& s : seconds) longest = std::max(longest, s.back());
    slowest.push_back(longest);
    state.SetIterationTime(longest);
  }
  quit.store(true);
  for (std::thread& t : threads) t.join();
  if (slowest.empty()) return;
  for (size_t g = 1; g < stats.size(); ++g) stats[0].merge(stats[g]);
  stats[0].report(state);
  for (int g = 0; g < gpus; ++g)
    state.counters["gpu" + std::to_string(g) + "_us"] =
        median_of(seconds[static_cast<size_t>(g)]) * 1e6;
  state.counters["slowest_us"] = median_of(slowest) * 1e6;
}

BENCHMARK(BM_MultiGpuCopy)
    ->ArgsProduct({{0, 1},
                   {kPoolPerDevice, kOnePoolForAll, kAlone, kAloneOnTheBenchmarksThread},
                   {mtc::detail::WorkerPool::kDefaultSpin.count(), 2000}})
    ->UseManualTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
