#include "released_threads.h"

#include <c10/cuda/CUDAFunctions.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "alone_draw.h"
#include "bench_support.h"
#include "detail/worker_pool.h"

namespace mtc::microbench {

ReleasedRun run_released(benchmark::State& state, int gpus,
                         const std::function<double(int, bool)>& work, int mix_block) {
  ReleasedRun run;
  run.seconds.resize(static_cast<size_t>(gpus));
  run.alone.resize(static_cast<size_t>(gpus));
  std::atomic<int64_t> generation{0};
  std::atomic<int> only{-1};  // the one GPU the iteration releases, or -1 for every GPU
  std::atomic<int> finished{0};
  std::atomic<bool> quit{false};
  std::mutex error_mutex;
  std::string error;  // the first failure; the benchmark stops with it
  std::vector<std::thread> threads;
  for (int g = 0; g < gpus; ++g) {
    threads.emplace_back([&, g] {
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(g));
      for (int64_t seen = 0;;) {
        while (generation.load(std::memory_order_acquire) == seen && !quit.load())
          mtc::detail::cpu_relax();
        if (quit.load()) return;
        ++seen;
        const int alone = only.load(std::memory_order_relaxed);
        try {
          if (alone < 0) {
            run.seconds[static_cast<size_t>(g)].push_back(work(g, false));
          } else if (alone == g) {
            run.alone[static_cast<size_t>(g)].push_back(work(g, true));
          }
        } catch (const std::exception& e) {
          const std::lock_guard<std::mutex> lock(error_mutex);
          if (error.empty()) error = "GPU " + std::to_string(g) + ": " + e.what();
        }
        finished.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  AloneDraw draw(gpus, std::random_device{}());
  int alone = AloneDraw::kEveryGpu;
  int64_t iteration = 0;
  for (auto _ : state) {
    finished.store(0);
    if (mix_block > 0 && iteration++ % mix_block == 0) alone = draw.next();
    only.store(alone, std::memory_order_relaxed);  // published by the generation's release
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
    if (alone >= 0) {
      longest = run.alone[static_cast<size_t>(alone)].back();
    } else {
      for (const auto& s : run.seconds) longest = std::max(longest, s.back());
      run.slowest.push_back(longest);
    }
    state.SetIterationTime(longest);
  }
  quit.store(true);
  for (std::thread& t : threads) t.join();
  return run;
}

void report_released(benchmark::State& state, ReleasedRun& run) {
  for (size_t g = 0; g < run.seconds.size(); ++g) {
    if (!run.seconds[g].empty())
      state.counters["gpu" + std::to_string(g) + "_us"] = median_of(run.seconds[g]) * 1e6;
    if (!run.alone[g].empty())
      state.counters["gpu" + std::to_string(g) + "_alone_us"] = median_of(run.alone[g]) * 1e6;
  }
  if (!run.slowest.empty()) state.counters["slowest_us"] = median_of(run.slowest) * 1e6;
}

const std::vector<int>& process_cpus() {
  static const std::vector<int> allowed = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    return cpus;
  }();
  return allowed;
}

std::vector<int> cpu_slice(int g, int gpus) {
  const std::vector<int>& allowed = process_cpus();
  const size_t n = allowed.size(), parts = static_cast<size_t>(std::max(gpus, 1));
  const auto first =
      allowed.begin() + static_cast<std::ptrdiff_t>(n * static_cast<size_t>(g) / parts);
  const auto last =
      allowed.begin() + static_cast<std::ptrdiff_t>(n * static_cast<size_t>(g + 1) / parts);
  return {first, last};
}

void confine_this_thread(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
    throw std::runtime_error("cannot confine a GPU's thread to its CPU slice");
}

}  // namespace mtc::microbench
