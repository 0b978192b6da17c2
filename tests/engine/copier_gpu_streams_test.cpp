// The copier on a GPU and the caller's streams: copies ordered after the work queued before them.
// Every test skips (with the reason shown) without a CUDA device.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/cuda/Sleep.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::bytes_of;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kMiB;
using mtc::test::kSleepCycles;
using mtc::test::map_tensors;
using mtc::test::reference_batch;
using mtc::test::tensors_of;

class StreamOrderingGpu : public GpuTest,
                          public ::testing::WithParamInterface<std::tuple<bool, bool>> {};

// Device -> host on a non-default stream: a kernel queued (behind a long sleep) before
// start_copy writes the inputs; the copy must see the written values.
TEST_P(StreamOrderingGpu, DeviceToHostSeesWorkQueuedBeforeStartCopy) {
  const auto [background, pinned] = GetParam();
  CopyOptions options;
  options.use_background_thread = background;
  options.use_pinned_staging = pinned;
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::zeros({17}, at::TensorOptions().dtype(at::kFloat).device(kCuda0)));
  list.push_back(at::zeros({5, 3}, at::TensorOptions().dtype(at::kLong).device(kCuda0)));
  list.push_back(at::zeros({3 * kMiB}, at::TensorOptions().dtype(at::kFloat).device(kCuda0)));
  const auto doubles = at::TensorOptions().dtype(at::kDouble).device(kCuda0);
  list.push_back(at::zeros({400, 300}, doubles)
                     .slice(0, 0, 400, 2));           // non-dense: made contiguous on the stream
  list.push_back(at::zeros({100, 50}, doubles).t());  // dense, not contiguous
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  const c10::cuda::CUDAStreamGuard guard(stream);
  at::cuda::sleep(kSleepCycles);
  for (size_t i = 0; i < list.size(); ++i) list.get(i).toTensor().fill_(static_cast<double>(i + 3));
  CopyHandle h = start_copy(list, kCpu, options);
  // (Inline into pageable memory, start_copy itself waits: device-to-pageable copies block.)
  if ((background || pinned) && !mtc::test::host_timing_distorted()) {
    EXPECT_FALSE(h.ready()) << "ready() before the queued work could have finished";
  }
  const auto out = h.get().toList();
  EXPECT_EQ(cudaStreamQuery(stream.stream()), cudaSuccess);
  for (size_t i = 0; i < list.size(); ++i) {
    const at::Tensor o = out.get(i).toTensor();
    ASSERT_TRUE(o.is_cpu());
    const at::Tensor expected = at::full(o.sizes(), static_cast<double>(i + 3), o.options());
    EXPECT_TRUE(bytes_of(o) == bytes_of(expected))
        << "leaf " << i << " copied before it was written";
  }
}

// Host -> device on a non-default stream: the copy is queued behind work already on the
// current stream (get() returns only once that stream reached the copy), and a consumer queued
// on the current stream after get() sees the copied data.
TEST_P(StreamOrderingGpu, HostToDeviceRunsOnTheCurrentStream) {
  const auto [background, pinned] = GetParam();
  CopyOptions options;
  options.use_background_thread = background;
  options.use_pinned_staging = pinned;
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::arange(17, at::kFloat));
  list.push_back(at::arange(15, at::kLong).reshape({5, 3}));
  list.push_back(at::arange(3 * kMiB, at::kFloat));
  list.push_back(at::arange(120000, at::kDouble).reshape({400, 300}).slice(0, 0, 400, 2));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  const c10::cuda::CUDAStreamGuard guard(stream);
  at::cuda::sleep(kSleepCycles);
  CopyHandle h = start_copy(list, kCuda0, options);
  // (Inline from pageable memory, the driver's copy may wait for the stream inside start_copy.)
  if ((background || pinned) && !mtc::test::host_timing_distorted()) {
    EXPECT_FALSE(h.ready()) << "ready() while the stream is still busy with earlier work";
  }
  const auto out = h.get().toList();
  EXPECT_EQ(cudaStreamQuery(stream.stream()), cudaSuccess)
      << "get() returned while the current stream had not reached the copy: it ran elsewhere";
  for (size_t i = 0; i < list.size(); ++i) {
    at::Tensor o = out.get(i).toTensor();
    o.add_(1);  // consumer on the current stream
    const at::Tensor expected = list.get(i).toTensor().add(1);
    EXPECT_TRUE(bytes_of(o) == bytes_of(expected)) << "leaf " << i;
  }
}

std::string stream_ordering_name(
    const ::testing::TestParamInfo<StreamOrderingGpu::ParamType>& param_info) {
  return std::string(std::get<0>(param_info.param) ? "background" : "inline") +
         (std::get<1>(param_info.param) ? "_pinned" : "_pageable");
}

INSTANTIATE_TEST_SUITE_P(BackgroundAndStaging, StreamOrderingGpu,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         stream_ordering_name);

TEST_F(GpuTest, ConcurrentCopiesOnSeparateStreams) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures, &errors] {
      try {
        const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
        const c10::cuda::CUDAStreamGuard guard(stream);
        const c10::IValue in = map_tensors(reference_batch(), [t](const at::Tensor& x) {
          return x.dtype() == at::kBool ? x : x.mul(t + 1);
        });
        const std::vector<at::Tensor> leaves = tensors_of(in);
        for (int i = 0; i < 10; ++i) {
          const c10::IValue on_gpu = start_copy(in, kCuda0).get();
          const c10::IValue back = start_copy(on_gpu, kCpu).get();
          const std::vector<at::Tensor> outs = tensors_of(back);
          for (size_t k = 0; k < leaves.size(); ++k) {
            if (bytes_of(outs[k]) != bytes_of(leaves[k])) {
              failures.fetch_add(1);
              break;
            }
          }
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
        failures.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (const std::string& e : errors) EXPECT_TRUE(e.empty()) << e;
}

}  // namespace
