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
#include <barrier>
#include <chrono>
#include <map>
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

enum Mode : int64_t { kPoolPerDevice = 0, kOnePoolForAll = 1, kAlone = 2 };

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

// Arguments: {0 CPU->GPU, 1 GPU->CPU; mode: 0 a worker pool per GPU, 1 one pool for all GPUs,
// 2 GPU 0 alone}. Every iteration starts each GPU's copy at the same moment (a barrier) and
// times it from start_copy until get() returned, the previous result freed after the clock
// (the hot pattern). The iteration's time is the median over the GPUs; counters: each GPU's
// median over the iterations (gpuK_us) and the median of the slowest GPU.
void BM_MultiGpuCopy(benchmark::State& state) {
  const int visible = c10::cuda::device_count();
  if (visible < 2) return state.SkipWithError("fewer than two CUDA devices");
  const bool h2d = state.range(0) == 0;
  const auto mode = static_cast<Mode>(state.range(1));
  const int gpus = mode == kAlone ? 1 : visible;
  for (int g = 0; g < gpus; ++g) input_for(g, h2d);
  mtc::detail::WorkerPoolSet::instance().set_one_pool_for_all(mode == kOnePoolForAll);

  std::vector<std::vector<double>> seconds(static_cast<size_t>(gpus));
  std::barrier start(gpus + 1);
  std::barrier done(gpus + 1);
  std::atomic<bool> quit{false};
  std::vector<std::thread> threads;
  for (int g = 0; g < gpus; ++g) {
    threads.emplace_back([&, g] {
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(g));
      const c10::IValue& data = input_for(g, h2d);
      const c10::Device target =
          h2d ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(g)) : c10::Device(c10::kCPU);
      while (true) {
        start.arrive_and_wait();
        if (quit.load()) return;
        const auto t0 = Clock::now();
        c10::IValue out = mtc::start_copy(data, target).get();
        seconds[static_cast<size_t>(g)].push_back(
            std::chrono::duration<double>(Clock::now() - t0).count());
        done.arrive_and_wait();
      }
    });
  }
  std::vector<double> iteration;
  std::vector<double> slowest;
  for (auto _ : state) {
    start.arrive_and_wait();
    done.arrive_and_wait();
    std::vector<double> last;
    for (const auto& s : seconds) last.push_back(s.back());
    slowest.push_back(*std::max_element(last.begin(), last.end()));
    iteration.push_back(median_of(last));
    state.SetIterationTime(iteration.back());
  }
  quit.store(true);
  start.arrive_and_wait();
  for (std::thread& t : threads) t.join();
  mtc::detail::WorkerPoolSet::instance().set_one_pool_for_all(false);
  for (int g = 0; g < gpus; ++g)
    state.counters["gpu" + std::to_string(g) + "_us"] =
        median_of(seconds[static_cast<size_t>(g)]) * 1e6;
  state.counters["slowest_us"] = median_of(slowest) * 1e6;
  state.counters["median_us"] = median_of(iteration) * 1e6;
}

BENCHMARK(BM_MultiGpuCopy)
    ->ArgsProduct({{0, 1}, {kPoolPerDevice, kOnePoolForAll, kAlone}})
    ->UseManualTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
