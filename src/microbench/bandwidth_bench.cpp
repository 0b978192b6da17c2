// Large tensors and mixed batches: the engine's bandwidth on 64 pageable float32 tensors of
// 4 MiB against one pinned cudaMemcpy of the same bytes (measured in the same benchmark), by the
// number of threads that fill the pinned chunks; and the mixed batch of configs/mixed.json
// (792 small tensors and 4 of 2 MiB) in both directions, beside per-tensor .to(). And the
// upload's fill alone, with and without DMAs reading host memory meanwhile.
#include <ATen/core/List.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/rand.h>
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "detail/pinned_upload.h"
#include "detail/worker_pool.h"
#include "detail/worker_pool_set.h"
#include "mtc/copier.h"
#include "reference_batch.h"

namespace {

using Clock = std::chrono::steady_clock;
using mtc::microbench::has_gpu;
using mtc::microbench::map_to;
using mtc::microbench::median_of;
using mtc::microbench::pinned_copy_gbps;
using mtc::microbench::report_median;
using mtc::microbench::seconds_since;

constexpr int kLargeCount = 64;
constexpr int64_t kLargeElements = int64_t{1} << 20;  // float32: 4 MiB
constexpr int64_t kLargeBytes = kLargeCount * kLargeElements * 4;

const c10::impl::GenericList& large_batch() {
  static const c10::impl::GenericList batch = [] {
    c10::impl::GenericList list(c10::AnyType::get());
    for (int i = 0; i < kLargeCount; ++i) list.push_back(at::rand({kLargeElements}));
    return list;
  }();
  return batch;
}

// 64 x 4 MiB pageable float32 to the GPU through the engine. Arguments: the most threads that fill
// pinned chunks (1 .. workers + 1; 0: the default, all of them; more than workers + 1 run as many),
// the ring's slot size in KiB and its slot count (0: the defaults), the design (0: each filling
// thread queues its own DMA; 1: the upload's own thread alone queues the DMAs; 2: the same with a
// crew of fill threads beside the workers; 3: the defaults, one queuer with the crew where the
// crew joins), then with one queuer the piece a fill thread takes in KiB (0: the default, 256 KiB
// where the crew joins, whole chunks where not; 1048576: whole chunks). Counters: engine_GBps
// (median), pinned_GBps (one pinned cudaMemcpy of the same 256 MiB, same run), their ratio
// of_pinned, the ring's shape, one_queuer, piece_KiB and crew (the crew's threads, which fill
// beside fill_threads); and the last copy's profile (UploadProfile): threads that filled
// (prof_threads), the upload's wall time, the threads' summed time filling and waiting for slots,
// the queuer's time queuing and idle.
void BM_LargePageableToDevice(benchmark::State& state) {
  if (!has_gpu()) return state.SkipWithError("no CUDA device");
  const c10::impl::GenericList& batch = large_batch();
  const double pinned = pinned_copy_gbps(kLargeBytes);
  mtc::detail::set_upload_threads(static_cast<int>(state.range(0)));
  mtc::detail::set_upload_ring(state.range(1) << 10, static_cast<int>(state.range(2)));
  if (state.range(3) != 3) {  // 3: the defaults
    mtc::detail::set_upload_queuing(state.range(3) == 0 ? mtc::detail::UploadQueuing::kEachThread
                                                        : mtc::detail::UploadQueuing::kOneQueuer);
    mtc::detail::set_upload_crew(state.range(3) == 2 ? -1 : 0);
  }
  mtc::detail::set_upload_piece(state.range(4) << 10);
  mtc::detail::set_upload_profiling(true);
  state.counters["slot_KiB"] =
      static_cast<double>(mtc::detail::upload_slot_bytes_for(kLargeBytes) >> 10);
  state.counters["slots"] = mtc::detail::upload_slots();
  std::vector<double> seconds;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    mtc::CopyHandle handle = mtc::start_copy(batch, c10::Device(c10::kCUDA, 0));
    c10::IValue out = handle.get();
    seconds.push_back(seconds_since(t0));
    state.SetIterationTime(seconds.back());
  }
  const mtc::detail::UploadProfile profile = mtc::detail::last_upload_profile();
  mtc::detail::set_upload_profiling(false);
  mtc::detail::reset_upload_settings();
  // The piece the threads took, as the last copy counted them (the default depends on the crew).
  state.counters["piece_KiB"] =
      profile.pieces == 0 ? 0 : static_cast<double>(kLargeBytes / profile.pieces >> 10);
  // One queuer: the queuer's own time was counted (each thread queuing leaves it at zero).
  state.counters["one_queuer"] = profile.queuer_pump_us > 0 ? 1 : 0;
  state.counters["prof_threads"] = profile.fill_threads;
  state.counters["prof_wall_us"] = profile.wall_us;
  state.counters["prof_fill_us"] = profile.fill_us;
  state.counters["prof_wait_us"] = profile.slot_wait_us;
  state.counters["prof_pump_us"] = profile.queuer_pump_us;
  state.counters["prof_idle_us"] = profile.queuer_idle_us;
  const double engine = static_cast<double>(kLargeBytes) / median_of(seconds) / 1e9;
  const int workers = mtc::detail::worker_pool_for(c10::Device(c10::kCUDA, 0)).size();
  state.counters["fill_threads"] =
      state.range(0) == 0 ? workers + 1 : std::min<int64_t>(state.range(0), workers + 1);
  // The crew joins only with one queuer and every thread allowed.
  state.counters["crew"] =
      state.counters["one_queuer"] > 0 && state.range(3) >= 2 && state.range(0) == 0
          ? mtc::detail::upload_crew_threads()
          : 0;
  state.counters["engine_GBps"] = engine;
  state.counters["pinned_GBps"] = pinned;
  state.counters["of_pinned"] = engine / pinned;
  state.SetBytesProcessed(state.iterations() * kLargeBytes);
}

// The same 256 MiB with per-tensor .to().
void BM_LargePageableToDevicePerTensorTo(benchmark::State& state) {
  if (!has_gpu()) return state.SkipWithError("no CUDA device");
  const c10::impl::GenericList& batch = large_batch();
  std::vector<double> seconds;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    c10::IValue out = map_to(batch, c10::Device(c10::kCUDA, 0));
    cudaDeviceSynchronize();
    seconds.push_back(seconds_since(t0));
    state.SetIterationTime(seconds.back());
  }
  state.counters["to_GBps"] = static_cast<double>(kLargeBytes) / median_of(seconds) / 1e9;
}

// The upload's fill alone, the host's share of BM_LargePageableToDevice: threads (argument 0)
// copy the 256 MiB of the large batch into a pinned ring of 8 x 2 MiB, taking pieces in turn
// (argument 2, in KiB; 0: whole 2 MiB chunks), with no DMA (argument 1 = 0), or while another
// thread keeps the GPU reading a pinned buffer of its own (1), as the upload's DMAs do. Counters:
// fill_GBps (median), and with DMAs dma_GBps, what the GPU read meanwhile. If the fill alone is no
// faster than the engine's upload, the host's memory, not the upload's design, bounds it; if
// pieces fill slower than whole chunks here, memcpy itself is slower on them (five threads filling
// the upload's 256 KiB pieces copied at 4.2 GB/s each against 6.1 for whole chunks).
void BM_PageableFill(benchmark::State& state) {
  if (!has_gpu()) return state.SkipWithError("no CUDA device");
  constexpr int64_t kChunk = int64_t{2} << 20;
  constexpr int64_t kSlots = 8;
  constexpr int64_t kDmaBytes = int64_t{16} << 20;
  const int threads = static_cast<int>(state.range(0));
  const bool with_dma = state.range(1) == 1;
  const int64_t piece = state.range(2) > 0 ? std::min(kChunk, state.range(2) << 10) : kChunk;
  const int64_t pieces = kLargeBytes / piece;
  state.counters["piece_KiB"] = static_cast<double>(piece >> 10);
  const c10::impl::GenericList& batch = large_batch();
  std::vector<const std::byte*> sources;
  for (const c10::IValue& tensor : batch.vec())
    sources.push_back(static_cast<const std::byte*>(tensor.toTensor().const_data_ptr()));
  const auto pinned = at::TensorOptions().dtype(at::kByte).pinned_memory(true);
  const at::Tensor ring = at::empty({kChunk * kSlots}, pinned);
  const at::Tensor dma_host = at::empty({kDmaBytes}, pinned);
  const at::Tensor dma_device =
      at::empty({kDmaBytes}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, 0));
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  auto* const slots = static_cast<std::byte*>(ring.data_ptr());
  std::vector<double> seconds;
  double dma_bytes = 0;
  double dma_seconds = 0;
  for (auto _ : state) {
    std::atomic<int64_t> next{0};
    std::atomic<bool> go{false};
    std::atomic<bool> filled{false};
    auto fill = [&] {
      while (!go.load(std::memory_order_acquire)) mtc::detail::cpu_relax();
      for (int64_t p; (p = next.fetch_add(1)) < pieces;) {
        const int64_t at = p * piece;  // in the 256 MiB, and in the ring, of its chunk
        const int64_t chunk = at / kChunk;
        const std::byte* src =
            sources[static_cast<size_t>(chunk / 2)] + (chunk % 2) * kChunk + at % kChunk;
        std::memcpy(slots + (chunk % kSlots) * kChunk + at % kChunk, src,
                    static_cast<size_t>(piece));
      }
    };
    std::thread dma;
    int64_t moved = 0;
    if (with_dma) {
      dma = std::thread([&] {
        while (!go.load(std::memory_order_acquire)) mtc::detail::cpu_relax();
        while (!filled.load(std::memory_order_acquire)) {
          cudaMemcpyAsync(dma_device.data_ptr(), dma_host.const_data_ptr(), kDmaBytes,
                          cudaMemcpyHostToDevice, stream);
          cudaStreamSynchronize(stream);
          moved += kDmaBytes;
        }
      });
    }
    std::vector<std::thread> helpers;
    for (int t = 1; t < threads; ++t) helpers.emplace_back(fill);
    const auto t0 = Clock::now();
    go.store(true, std::memory_order_release);
    fill();
    for (std::thread& helper : helpers) helper.join();
    seconds.push_back(seconds_since(t0));
    filled.store(true, std::memory_order_release);
    if (dma.joinable()) {
      dma.join();
      dma_bytes += static_cast<double>(moved);
      dma_seconds += seconds_since(t0);
    }
    state.SetIterationTime(seconds.back());
  }
  cudaStreamDestroy(stream);
  state.counters["fill_GBps"] = static_cast<double>(kLargeBytes) / median_of(seconds) / 1e9;
  if (with_dma) state.counters["dma_GBps"] = dma_bytes / dma_seconds / 1e9;
}

const c10::IValue& mixed_source(bool on_gpu) {
  static const c10::IValue host = mtc::microbench::make_mixed_batch();
  static const c10::IValue gpu =
      has_gpu() ? map_to(host, c10::Device(c10::kCUDA, 0)) : c10::IValue();
  return on_gpu ? gpu : host;
}

// The mixed batch, argument 1: to the GPU, 0: back to the host. Second argument: 0 the engine
// (median_us), 1 per-tensor .to(), 2 the engine with pinned_host_outputs (back to the host).
// Third, to the GPU: 1 for the upload of its large tensors with one thread queuing the DMAs (in
// whole chunks: the batch is below the crew's size), 0 with each filling thread queuing its own.
void BM_MixedBatch(benchmark::State& state) {
  if (!has_gpu()) return state.SkipWithError("no CUDA device");
  const bool h2d = state.range(0) == 1;
  const bool per_tensor = state.range(1) == 1;
  mtc::detail::set_upload_queuing(state.range(2) == 1 ? mtc::detail::UploadQueuing::kOneQueuer
                                                      : mtc::detail::UploadQueuing::kEachThread);
  mtc::CopyOptions options;
  options.pinned_host_outputs = state.range(1) == 2;
  const c10::IValue& data = mixed_source(!h2d);
  const c10::Device target = h2d ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  std::vector<double> seconds;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    c10::IValue out;
    if (per_tensor) {
      out = map_to(data, target);
      cudaDeviceSynchronize();
    } else {
      out = mtc::start_copy(data, target, options).get();
    }
    seconds.push_back(seconds_since(t0));
    state.SetIterationTime(seconds.back());
  }
  mtc::detail::reset_upload_settings();
  report_median(state, seconds);
}

}  // namespace

// Beyond 5 threads only with more workers (MTC_WORKER_THREADS); fill_threads says how many ran
// (the crew apart). The thread counts and ring shapes with each thread queuing (the design of
// 2026-12-03 and before); then one queuer, whose fill threads take whole chunks (1048576) or
// pieces (256; 64 and 1024; 0 the default), with and without the crew, in the default ring and in
// others: with whole chunks, eight threads filling eight slots wait together for the DMAs. Last,
// the defaults in rings of other shapes (2 or 4 MiB slots, 8 or 16 of them).
BENCHMARK(BM_LargePageableToDevice)
    ->ArgsProduct({{0, 1, 2, 3, 5, 9}, {0}, {0}, {0}, {0}})
    ->Args({0, 1024, 16, 0, 0})
    ->Args({0, 8192, 8, 0, 0})
    ->ArgsProduct({{0}, {0}, {0}, {1, 2}, {1048576, 0, 64, 256, 1024}})
    ->ArgsProduct({{0}, {1024, 4096}, {16}, {1, 2}, {1048576, 0}})
    ->Args({0, 8192, 8, 2, 0})
    ->Args({0, 0, 0, 3, 0})
    ->ArgsProduct({{0}, {2048, 4096}, {8, 16}, {3}, {0}})
    ->Args({1, 0, 0, 1, 0})
    ->Args({3, 0, 0, 1, 0})
    ->UseManualTime()
    ->MinTime(0.5)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PageableFill)
    ->ArgsProduct({{1, 5, 9}, {0, 1}, {0}})
    ->ArgsProduct({{5, 9}, {0, 1}, {256}})
    ->UseManualTime()
    ->MinTime(0.5)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LargePageableToDevicePerTensorTo)
    ->UseManualTime()
    ->MinTime(0.5)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MixedBatch)
    ->Args({1, 0, 0})
    ->Args({1, 1, 0})
    ->Args({0, 0, 0})
    ->Args({0, 1, 0})
    ->Args({0, 2, 0})
    ->Args({1, 0, 1})
    ->UseManualTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);
