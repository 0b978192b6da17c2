// What an idle gap costs on this host, apart from the GPU: the same reads and walks back to back
// and after a gap in which the thread spins on the clock, touching no memory. On the shared hosts
// this project measures on, data untouched for a few milliseconds is back in main memory whether
// the thread slept or spun (results/notes/2026-11-27-morning.md), which bounds what a training
// step's copy can cost. Runs without a GPU: a walk to a GPU makes no CUDA call.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "bench_support.h"
#include "detail/leaf_router.h"
#include "detail/structure.h"
#include "mtc/copier.h"

namespace {

using Clock = std::chrono::steady_clock;

// Objects of 256 bytes in a random order, each read through the one before it: every read waits
// for the previous, so the time per object is the latency of wherever the objects are.
struct Node {
  Node* next;
  char pad[248];
};

// {objects, gap in us}: one chase over the objects after each gap (none for 0).
void BM_ChaseAfterGap(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  const std::chrono::microseconds gap(state.range(1));
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<std::unique_ptr<char[]>> spacers;  // keeps the nodes apart, as a heap's would be
  for (size_t i = 0; i < n; ++i) {
    nodes.push_back(std::make_unique<Node>());
    spacers.push_back(std::make_unique<char[]>(1024));
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937(1));
  for (size_t i = 0; i + 1 < n; ++i) nodes[order[i]]->next = nodes[order[i + 1]].get();
  nodes[order[n - 1]]->next = nullptr;
  const Node* first = nodes[order[0]].get();
  std::vector<double> seconds;
  for (auto _ : state) {
    if (gap.count() > 0) mtc::microbench::spin_gap(gap);
    const auto t0 = Clock::now();
    int64_t sum = 0;
    for (const Node* node = first; node != nullptr; node = node->next) sum += node->pad[0];
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    state.SetIterationTime(seconds.back());
    benchmark::DoNotOptimize(sum);
  }
  mtc::microbench::report_median(state, seconds);
  state.counters["ns_per_object"] = mtc::microbench::median_of(seconds) * 1e9 / double(n);
}

// {gap in us, what}: the engine's walk of the reference batch (one batch of a rotation of
// eight, as a training loop's) after each gap. what: 0 the walk to a GPU (packed output views
// and new containers), 1 to the CPU (new containers around the same tensors), 2 the free of a
// result of the walk to a GPU that this thread built before the gap.
void BM_WalkAfterGap(benchmark::State& state) {
  const std::chrono::microseconds gap(state.range(0));
  const int64_t what = state.range(1);
  const std::vector<c10::IValue>& batches = mtc::microbench::rotation(1, /*on_gpu=*/false);
  const c10::Device target = what == 1 ? c10::Device(c10::kCPU) : c10::Device(c10::kCUDA, 0);
  const mtc::CopyOptions options;
  using Copier = mtc::detail::StructureCopier<mtc::detail::LeafRouter>;
  auto walk = [&](const c10::IValue& data, c10::IValue& result) {
    mtc::CopyStats stats;
    mtc::detail::LeafRouter router(target, options, stats);
    Copier(router).copy(data, result);
  };
  std::vector<double> seconds;
  size_t turn = 0;
  for (auto _ : state) {
    const c10::IValue& data = batches[turn++ % batches.size()];
    c10::IValue built;
    if (what == 2) walk(data, built);
    if (gap.count() > 0) mtc::microbench::spin_gap(gap);
    c10::IValue result;
    const auto t0 = Clock::now();
    if (what == 2) {
      built = c10::IValue();
    } else {
      walk(data, result);
    }
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    state.SetIterationTime(seconds.back());
  }
  mtc::microbench::report_median(state, seconds);
}

}  // namespace

BENCHMARK(BM_ChaseAfterGap)
    ->ArgsProduct({{100, 2000}, {0, 200, 2000, 5000}})
    ->UseManualTime()
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WalkAfterGap)
    ->ArgsProduct({{0, 5000}, {0, 1, 2}})
    ->UseManualTime()
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
