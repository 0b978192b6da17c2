// Large pageable tensors to the GPU without a CPU copy: page-lock each tensor's own memory
// (cudaHostRegister), let the DMA read it there, and unlock it afterwards. The engine stages
// pageable tensors through pinned slots instead, with fill threads that copy them there, and
// reaches 60-75 % of one pinned copy (results/NOTES.md). These benchmarks say whether locking
// the pages in place could do better on this host: what locking and unlocking 4 MiB costs, and
// the bandwidth of 64 x 4 MiB locked, copied and unlocked by 1-8 threads, against one pinned
// cudaMemcpy of the same bytes in the same benchmark. Nothing here is part of the engine.
#include <ATen/ops/empty.h>
#include <ATen/ops/rand.h>
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "bench_support.h"

namespace {

using Clock = std::chrono::steady_clock;
using mtc::microbench::has_gpu;
using mtc::microbench::median_of;
using mtc::microbench::pinned_copy_gbps;
using mtc::microbench::seconds_since;

constexpr int kCount = 64;
constexpr int64_t kElements = int64_t{1} << 20;  // float32: 4 MiB
constexpr int64_t kBytes = kElements * 4;
constexpr uintptr_t kPage = 4096;

// The whole pages inside [data, data + bytes): the part that can be locked without locking a
// page another tensor shares. The rest (under a page at each end) goes through the driver.
struct Inner {
  char* begin;
  size_t bytes;
};
Inner inner_pages(void* data, size_t bytes) {
  const auto first = (reinterpret_cast<uintptr_t>(data) + kPage - 1) & ~(kPage - 1);
  const auto last = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kPage - 1);
  if (last <= first) return {static_cast<char*>(data), 0};
  return {reinterpret_cast<char*>(first), last - first};
}

unsigned register_flags(int64_t read_only) {
  return read_only != 0 ? cudaHostRegisterReadOnly : cudaHostRegisterDefault;
}

// Locking then unlocking one 4 MiB pageable tensor (its pages written before, as a batch's are).
// Argument: 1 with cudaHostRegisterReadOnly. Counters: register_us and unregister_us (medians).
void BM_HostRegister(benchmark::State& state) {
  if (!has_gpu()) return state.SkipWithError("no CUDA device");
  const at::Tensor host = at::rand({kElements});
  const Inner inner = inner_pages(host.data_ptr(), kBytes);
  std::vector<double> lock, unlock;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (cudaHostRegister(inner.begin, inner.bytes, register_flags(state.range(0))) != cudaSuccess)
      return state.SkipWithError(cudaGetErrorString(cudaGetLastError()));
    lock.push_back(seconds_since(t0));
    t0 = Clock::now();
    cudaHostUnregister(inner.begin);
    unlock.push_back(seconds_since(t0));
    state.SetIterationTime(lock.back() + unlock.back());
  }
  state.counters["register_us"] = median_of(lock) * 1e6;
  state.counters["unregister_us"] = median_of(unlock) * 1e6;
}

// 64 x 4 MiB pageable float32 to the GPU: each tensor's whole pages locked, copied from where
// they are with cudaMemcpyAsync and unlocked once every copy has landed; the ends under a page
// copied by the driver. Arguments: threads that lock and submit (each on a stream of its own),
// and 1 for cudaHostRegisterReadOnly; the helper threads' start and the ends' copies are timed
// too (both small beside locking 4 MiB). Counters: locked_GBps (until the data is on the GPU),
// with_unlock_GBps (until every tensor is unlocked too), and both against pinned_GBps, one
// pinned cudaMemcpy of the same 256 MiB in the same run.
void BM_LargeLockedToDevice(benchmark::State& state) {
  if (!has_gpu()) return state.SkipWithError("no CUDA device");
  const int threads = static_cast<int>(state.range(0));
  std::vector<at::Tensor> batch;
  for (int i = 0; i < kCount; ++i) batch.push_back(at::rand({kElements}));
  const at::Tensor device =
      at::empty({kCount * kBytes}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, 0));
  auto* dst = static_cast<char*>(device.data_ptr());

  // The yardstick, as BM_LargePageableToDevice measures it.
  const double pinned_gbps = pinned_copy_gbps(kCount * kBytes);

  std::vector<cudaStream_t> streams(threads);
  for (auto& s : streams) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  std::vector<double> landed, unlocked;
  std::atomic<bool> failed{false};
  for (auto _ : state) {
    const auto t0 = Clock::now();
    std::atomic<int> next{0};
    std::vector<char> locked(kCount, 0);  // by tensor: only these are unlocked after
    auto submit = [&](int k) {
      for (int i = next++; i < kCount && !failed; i = next++) {
        auto* src = static_cast<char*>(batch[i].data_ptr());
        char* out = dst + i * kBytes;
        const Inner inner = inner_pages(src, kBytes);
        if (cudaHostRegister(inner.begin, inner.bytes, register_flags(state.range(1))) !=
            cudaSuccess) {
          failed = true;  // the iteration's figure would leave this tensor out: none is reported
          return;
        }
        locked[i] = 1;
        const size_t head = static_cast<size_t>(inner.begin - src);
        const size_t tail = kBytes - head - inner.bytes;
        cudaMemcpyAsync(out + head, inner.begin, inner.bytes, cudaMemcpyHostToDevice, streams[k]);
        if (head > 0) cudaMemcpyAsync(out, src, head, cudaMemcpyHostToDevice, streams[k]);
        if (tail > 0)
          cudaMemcpyAsync(out + head + inner.bytes, inner.begin + inner.bytes, tail,
                          cudaMemcpyHostToDevice, streams[k]);
      }
    };
    std::vector<std::thread> helpers;
    for (int k = 1; k < threads; ++k) helpers.emplace_back(submit, k);
    submit(0);
    for (auto& h : helpers) h.join();
    for (auto s : streams) cudaStreamSynchronize(s);
    landed.push_back(seconds_since(t0));
    for (int i = 0; i < kCount; ++i)
      if (locked[i]) cudaHostUnregister(inner_pages(batch[i].data_ptr(), kBytes).begin);
    unlocked.push_back(seconds_since(t0));
    state.SetIterationTime(landed.back());
    if (failed) break;
  }
  for (auto s : streams) cudaStreamDestroy(s);
  if (failed) {
    (void)cudaGetLastError();  // clears the failed call's error for the benchmarks after this one
    return state.SkipWithError("cudaHostRegister failed");
  }
  const double bytes = static_cast<double>(kCount * kBytes);
  const double locked_gbps = bytes / median_of(landed) / 1e9;
  const double with_unlock_gbps = bytes / median_of(unlocked) / 1e9;
  state.counters["threads"] = threads;
  state.counters["locked_GBps"] = locked_gbps;
  state.counters["with_unlock_GBps"] = with_unlock_gbps;
  state.counters["pinned_GBps"] = pinned_gbps;
  state.counters["of_pinned"] = locked_gbps / pinned_gbps;
  state.counters["with_unlock_of_pinned"] = with_unlock_gbps / pinned_gbps;
}

}  // namespace

BENCHMARK(BM_HostRegister)
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LargeLockedToDevice)
    ->ArgsProduct({{1, 2, 4, 8}, {0, 1}})
    ->UseManualTime()
    ->MinTime(0.5)
    ->Unit(benchmark::kMillisecond);
