// The copier across two GPUs: device to device, sources on several devices, both devices' streams.
// Every test skips (with the reason shown) on a machine with fewer than two CUDA devices.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/cuda/Sleep.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "detail/worker_pool_set.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "pool_blocker.h"
#include "structure_compare.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::CopyStats;
using mtc::start_copy;
using mtc::test::bytes_of;
using mtc::test::expect_structure_copy;
using mtc::test::expected_packed;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kCuda1;
using mtc::test::kMiB;
using mtc::test::kSleepCycles;
using mtc::test::math_bit_views;
using mtc::test::mixed_batch;
using mtc::test::MultiGpuTest;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
using mtc::test::tensors_of;

TEST_F(MultiGpuTest, DeviceToDeviceAcrossGpus) {
  for (const bool pack : {true, false}) {
    for (const bool background : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "pack " << pack << " background " << background);
      CopyOptions options;
      options.pack_cpu_tensors = pack;
      options.use_background_thread = background;
      const c10::IValue in = mixed_batch(kCuda1);
      const std::vector<at::Tensor> leaves = tensors_of(in);
      CopyHandle h = start_copy(in, kCuda0, options);
      expect_structure_copy(h.get(), in, kCuda0);
      const CopyStats s = h.stats();
      EXPECT_EQ(s.packed, expected_packed(leaves, kCuda0, options));
      EXPECT_EQ(s.chunks, pack ? 1 : 0);
      EXPECT_EQ(s.packed + s.per_tensor + s.reused, s.tensors);
    }
  }
  // Reference batch, the other way round, with a small chunk limit.
  CopyOptions options;
  options.max_packed_chunk_bytes = 4096;
  const c10::IValue ref = reference_batch(kCuda0);
  CopyHandle h = start_copy(ref, kCuda1, options);
  expect_structure_copy(h.get(), ref, kCuda1);
  EXPECT_EQ(h.stats().packed, 528);
  EXPECT_GT(h.stats().chunks, 1);
}

TEST_F(MultiGpuTest, ConjugateAndNegativeViewsAcrossGpus) {
  const c10::impl::GenericList list = math_bit_views(kCuda1);
  const auto out = start_copy(list, kCuda0).get().toList();
  for (size_t i = 0; i < list.size(); ++i)
    EXPECT_TRUE(bytes_of(out.get(i).toTensor()) == bytes_of(list.get(i).toTensor()))
        << "leaf " << i;
}

TEST_F(MultiGpuTest, HostToSecondGpuAndBack) {
  const c10::IValue in = mixed_batch(kCpu);
  CopyHandle h = start_copy(in, kCuda1);
  const c10::IValue on1 = h.get();
  expect_structure_copy(on1, in, kCuda1);
  CopyHandle back = start_copy(on1, kCpu);
  expect_structure_copy(back.get(), on1, kCpu);
  // Index-less target with cuda:1 current.
  const c10::cuda::CUDAGuard device_guard(1);
  const auto out = start_copy(random_tensor(at::kFloat, {3}), c10::Device(c10::kCUDA)).get();
  EXPECT_EQ(out.toTensor().device(), kCuda1);
}

TEST_F(MultiGpuTest, SourcesOnSeveralDevices) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(random_tensor(at::kFloat, {10}, kCuda0));
  list.push_back(random_tensor(at::kFloat, {10}, kCuda1));
  list.push_back(random_tensor(at::kFloat, {10}));
  list.push_back(random_tensor(at::kDouble, {kMiB}, kCuda1));
  list.push_back(random_tensor(at::kDouble, {kMiB}));
  for (const c10::Device& target : {kCpu, kCuda0, kCuda1}) {
    SCOPED_TRACE(target.str());
    CopyHandle h = start_copy(list, target);
    expect_structure_copy(h.get(), list, target);
  }
}

// GPU->CPU from two source GPUs: the walk packs the first one's small tensors, the route the
// second one's after it. With pinned_host_outputs both land in pinned memory, pageable without;
// every output bitwise what .to() gives.
TEST_F(MultiGpuTest, PinnedHostOutputsHoldForEverySourceGpu) {
  c10::impl::GenericList batch(c10::AnyType::get());
  batch.push_back(reference_batch(kCuda0));
  batch.push_back(reference_batch(kCuda1));
  const std::vector<at::Tensor> inputs = tensors_of(batch);
  for (const bool pinned_outputs : {true, false}) {
    for (const bool staging : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << "pinned outputs " << pinned_outputs << " staging " << staging);
      CopyOptions options;
      options.pinned_host_outputs = pinned_outputs;
      options.use_pinned_staging = staging;
      CopyHandle h = start_copy(batch, kCpu, options);
      const c10::IValue out = h.get();
      expect_structure_copy(out, batch, kCpu);
      const std::vector<at::Tensor> outputs = tensors_of(out);
      ASSERT_EQ(outputs.size(), inputs.size());
      for (size_t i = 0; i < outputs.size(); ++i) {
        EXPECT_EQ(outputs[i].is_pinned(), pinned_outputs)
            << "leaf " << i << " from " << inputs[i].device();
        EXPECT_TRUE(bytes_of(outputs[i]) == bytes_of(inputs[i].cpu())) << "leaf " << i;
      }
      EXPECT_EQ(h.stats().packed, 2 * 528);
    }
  }
}

TEST_F(MultiGpuTest, EachGpuStagesInItsOwnPinnedPool) {
  mtc::release_idle_pinned_memory();
  mtc::reset_pinned_pool_peaks();
  start_copy(reference_batch(kCpu), kCuda1).get();
  EXPECT_GT(mtc::pinned_pool_stats(1).peak_in_use_bytes, 0);
  EXPECT_EQ(mtc::pinned_pool_stats(0).peak_in_use_bytes, 0)
      << "a copy to cuda:1 staged in cuda:0's pool";
  const c10::IValue on0 = reference_batch(kCuda0);
  start_copy(on0, kCpu).get();
  EXPECT_GT(mtc::pinned_pool_stats(0).peak_in_use_bytes, 0) << "GPU->CPU from cuda:0";
  const mtc::PinnedPoolStats all = mtc::pinned_pool_stats();
  EXPECT_EQ(all.peak_in_use_bytes, mtc::pinned_pool_stats(0).peak_in_use_bytes +
                                       mtc::pinned_pool_stats(1).peak_in_use_bytes);
  EXPECT_EQ(all.in_use_bytes, 0);
}

// Each GPU's copies run on workers of their own. With every worker of cuda:1 held busy, a copy
// to cuda:0 is still taken up by a worker (it completes without get()), and a copy to cuda:1 is
// not (nothing starts it until get() runs it on the caller). A copy back to the CPU uses the
// workers of the caller's current GPU. With MTC_WORKER_THREADS set, one pool serves both.
TEST_F(MultiGpuTest, EachGpuHasAWorkerPoolOfItsOwn) {
  namespace detail = mtc::detail;
  const detail::WorkerCount count = detail::WorkerCount::from_environment();
  detail::WorkerPool& pool0 = detail::worker_pool_for(kCuda0);
  detail::WorkerPool& pool1 = detail::worker_pool_for(kCuda1);
  EXPECT_EQ(count.shared(), &pool0 == &pool1);
  EXPECT_EQ(pool1.size(), count.per_pool());
  {
    const c10::cuda::CUDAGuard on1(1);
    EXPECT_EQ(&detail::worker_pool_for(kCpu), &pool1) << "a copy back made on GPU 1's thread";
  }
  if (count.shared()) return;
  mtc::test::PoolBlocker blocker(pool1);
  const c10::IValue in = reference_batch(kCpu);
  CopyHandle to0 = start_copy(in, kCuda0);
  bool done0 = false;
  for (int i = 0; i < 10000 && !(done0 = to0.ready()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(done0) << "a copy to cuda:0 waited for cuda:1's workers";
  CopyHandle to1 = start_copy(in, kCuda1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(to1.ready()) << "a copy to cuda:1 started while every cuda:1 worker was busy";
  expect_structure_copy(to1.get(), in, kCuda1);  // run by this thread
  blocker.release();
  expect_structure_copy(to0.get(), in, kCuda0);
}

TEST_F(MultiGpuTest, DeviceToDeviceOrderingOnNonDefaultStreams) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::zeros({33}, at::TensorOptions().dtype(at::kFloat).device(kCuda1)));
  list.push_back(at::zeros({3 * kMiB}, at::TensorOptions().dtype(at::kFloat).device(kCuda1)));
  const at::Tensor base = at::zeros({200, 300}, at::TensorOptions().dtype(at::kInt).device(kCuda1));
  list.push_back(base.slice(1, 0, 300, 3));
  for (const c10::DeviceIndex d : {0, 1}) {
    const c10::cuda::CUDAGuard g(d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  const c10::cuda::CUDAStream s1 = c10::cuda::getStreamFromPool(false, 1);
  const c10::cuda::CUDAStream s0 = c10::cuda::getStreamFromPool(false, 0);
  const c10::cuda::CUDAStreamGuard g1(s1);
  at::cuda::sleep(kSleepCycles);  // on cuda:1's current stream
  for (size_t i = 0; i < list.size(); ++i)
    list.get(i).toTensor().fill_(static_cast<int64_t>(i + 5));
  const c10::cuda::CUDAStreamGuard g0(s0);  // cuda:0 current, its current stream s0
  at::cuda::sleep(kSleepCycles / 4);        // the target's stream is busy too
  CopyHandle h = start_copy(list, kCuda0);
  const auto out = h.get().toList();
  for (size_t i = 0; i < list.size(); ++i) {
    at::Tensor o = out.get(i).toTensor();
    ASSERT_EQ(o.device(), kCuda0);
    o.add_(1);  // consumer on cuda:0's current stream
    const at::Tensor expected =
        at::full(o.sizes(), static_cast<int64_t>(i + 6), o.options().device(kCpu));
    EXPECT_TRUE(bytes_of(o) == bytes_of(expected)) << "leaf " << i;
  }
}

}  // namespace
