// The engine's copy in steps, each timed alone: the walk (on one thread and split across
// several), the packing plan, the staging fill and the output views. Registered into
// mtc_engine_bench (engine_bench.cpp has its main). Argument = batch multiplier: 1 -> 528
// tensors, 8 -> 4,224 tensors.
#include <ATen/ops/empty.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "detail/leaf_router.h"
#include "detail/outputs.h"
#include "detail/pack_plan.h"
#include "detail/pinned_pool_set.h"
#include "detail/staging.h"
#include "detail/structure.h"
#include "mtc/copier.h"
#include "reference_batch.h"

namespace {

using Clock = std::chrono::steady_clock;
using mtc::microbench::has_gpu;

std::vector<at::Tensor> leaves_of(int repeat) {
  return mtc::microbench::tensor_leaves(mtc::microbench::shared_reference_batch(repeat));
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
  const c10::IValue& data =
      mtc::microbench::shared_reference_batch(static_cast<int>(state.range(0)));
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
  const c10::IValue& data = mtc::microbench::shared_reference_batch(
      static_cast<int>(state.range(0)), flags & 2, flags & 4);
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
  mtc::detail::set_copied_shape(state.range(1) == 0);
  for (auto _ : state) {
    for (const auto& item : plan.items)
      outputs[item.leaf] = mtc::detail::make_view(chunk.storage(), item.offset, leaves[item.leaf]);
    benchmark::DoNotOptimize(outputs.data());
  }
  mtc::detail::set_copied_shape(true);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(plan.items.size()));
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
// Second argument 1: each output's shape computed from its sizes (set_sizes_contiguous) instead of
// copied from its input (the default).
BENCHMARK(BM_CreateOutputs)->ArgsProduct({{1, 8}, {0, 1}})->Unit(benchmark::kMicrosecond);
