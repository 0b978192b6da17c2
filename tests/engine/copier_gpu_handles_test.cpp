// The copier on a GPU, handles and errors: what get() and ready() say, and what a dropped or
// failed copy leaves behind. Every test skips (with the reason shown) without a CUDA device.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/cuda/Sleep.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "detail/structure.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::expect_copy_of;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kMiB;
using mtc::test::kSleepCycles;
using mtc::test::pinned_in_use;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
using mtc::test::to_device;

bool wait_until_ready_or_throw(CopyHandle& h) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (h.ready()) return true;
    std::this_thread::yield();
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Handles

TEST_F(GpuTest, GetTwiceReadyAndStats) {
  const c10::IValue in = reference_batch();
  CopyHandle h = start_copy(in, kCuda0);
  const c10::IValue a = h.get();
  const c10::IValue b = h.get();
  EXPECT_TRUE(a.is(b));
  EXPECT_TRUE(h.ready());
  EXPECT_EQ(h.stats().tensors, 528);

  // Polling ready() alone completes a copy too (device -> host: the host copies included).
  CopyHandle d = start_copy(reference_batch(kCuda0), kCpu);
  ASSERT_TRUE(wait_until_ready_or_throw(d));
  EXPECT_EQ(pinned_in_use(), baseline_in_use_);
  expect_structure_copy(d.get(), reference_batch(kCuda0), kCpu);
}

TEST_F(GpuTest, DeepNestingAcrossTheWorker) {
  const at::Tensor t = random_tensor(at::kFloat, {5});
  c10::IValue v = t;
  for (int i = 0; i < mtc::detail::kMaxNestingDepth; ++i) {
    c10::impl::GenericList l(c10::AnyType::get());
    l.push_back(v);
    v = l;
  }
  c10::IValue out = start_copy(v, kCuda0).get();
  for (int i = 0; i < mtc::detail::kMaxNestingDepth; ++i) out = out.toList().get(0);
  expect_copy_of(out.toTensor(), t, kCuda0);
}

class HandleLifetimeGpu : public GpuTest, public ::testing::WithParamInterface<bool> {};

// Dropping a handle while its device work is still queued must wait for it (no staging buffer
// is released while a DMA reads it), leave nothing held, and leave the engine usable.
TEST_P(HandleLifetimeGpu, DestroyingAHandleMidCopy) {
  CopyOptions options;
  options.use_background_thread = GetParam();
  const at::Tensor big = at::arange(64 * kMiB, at::kFloat);  // 256 MiB, pageable
  c10::impl::GenericList many(c10::AnyType::get());
  for (int i = 0; i < 64; ++i)
    many.push_back(at::full({kMiB}, static_cast<float>(i)));  // 64 x 4 MiB
  for (int i = 0; i < 64; ++i) many.push_back(at::full({100}, static_cast<float>(i)));
  const c10::IValue big_on_gpu = to_device(big, kCuda0);
  const int64_t baseline = pinned_in_use();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  { CopyHandle h = start_copy(big, kCuda0, options); }
  EXPECT_EQ(pinned_in_use(), baseline);
  { CopyHandle h = start_copy(many, kCuda0, options); }
  EXPECT_EQ(pinned_in_use(), baseline);
  { CopyHandle h = start_copy(big_on_gpu, kCpu, options); }
  EXPECT_EQ(pinned_in_use(), baseline);

  // With device work certainly pending at destruction: the stream is still sleeping.
  {
    const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
    const c10::cuda::CUDAStreamGuard guard(stream);
    at::cuda::sleep(kSleepCycles);
    { CopyHandle h = start_copy(many, kCuda0, options); }
    EXPECT_EQ(cudaStreamQuery(stream.stream()), cudaSuccess)
        << "the handle's destructor returned before its device work was done";
    EXPECT_EQ(pinned_in_use(), baseline);
    at::cuda::sleep(kSleepCycles);
    { CopyHandle h = start_copy(big_on_gpu, kCpu, options); }
    EXPECT_EQ(cudaStreamQuery(stream.stream()), cudaSuccess);
    EXPECT_EQ(pinned_in_use(), baseline);
  }

  // Move-assigning over a pending handle drops (and waits for) the old copy.
  {
    CopyHandle h = start_copy(big, kCuda0, options);
    h = start_copy(many, kCuda0, options);
    expect_structure_copy(h.get(), many, kCuda0);
  }
  EXPECT_EQ(pinned_in_use(), baseline);

  // The engine still works.
  CopyHandle h = start_copy(big, kCuda0, options);
  expect_copy_of(h.get().toTensor(), big, kCuda0);
  EXPECT_EQ(pinned_in_use(), baseline);
}

std::string background_name(const ::testing::TestParamInfo<bool>& param_info) {
  return param_info.param ? "background" : "inline";
}

INSTANTIATE_TEST_SUITE_P(BackgroundOnOff, HandleLifetimeGpu, ::testing::Bool(), background_name);

// ---------------------------------------------------------------------------------------------
// Errors

class ErrorPropagationGpu : public GpuTest, public ::testing::WithParamInterface<bool> {};

// A dense CPU tensor that claims 4 TiB over a 16-byte buffer: its device allocation fails
// (out of memory) inside the copy, before anything reads it. The failure must come out of
// get() and ready(), with staging queued before it released, and the engine usable afterwards.
TEST_P(ErrorPropagationGpu, DeviceOutOfMemorySurfacesThroughGet) {
  CopyOptions options;
  options.use_background_thread = GetParam();
  static float storage[4] = {1, 2, 3, 4};
  const at::Tensor huge = at::from_blob(storage, {int64_t{1} << 40}, at::kFloat);
  ASSERT_TRUE(huge.is_non_overlapping_and_dense());
  c10::impl::GenericList list(c10::AnyType::get());
  for (int i = 0; i < 10; ++i) list.push_back(random_tensor(at::kFloat, {100}));  // packed first
  list.push_back(random_tensor(at::kFloat, {3 * kMiB}));  // pipelined before the failure
  list.push_back(huge);
  const int64_t baseline = pinned_in_use();

  CopyHandle h;
  ASSERT_NO_THROW(h = start_copy(list, kCuda0, options)) << "the failure belongs to get()";
  try {
    h.get();
    ADD_FAILURE() << "get() returned although the device allocation cannot succeed";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)h.ready(), c10::Error);
  EXPECT_THROW(h.get(), c10::Error) << "a failure is reported on every get()";
  EXPECT_EQ(pinned_in_use(), baseline) << "staging of the failed copy is still held";

  // ready() alone reports it too.
  CopyHandle r = start_copy(list, kCuda0, options);
  EXPECT_THROW(wait_until_ready_or_throw(r), c10::Error);

  // Dropping a failed handle is fine, and the next copy works.
  { CopyHandle dropped = start_copy(list, kCuda0, options); }
  c10::impl::GenericList ok(c10::AnyType::get());
  for (size_t i = 0; i + 1 < list.size(); ++i) ok.push_back(list.get(i));
  CopyHandle good = start_copy(ok, kCuda0, options);
  expect_structure_copy(good.get(), ok, kCuda0);
  EXPECT_EQ(pinned_in_use(), baseline);
}

INSTANTIATE_TEST_SUITE_P(BackgroundOnOff, ErrorPropagationGpu, ::testing::Bool(), background_name);

TEST_F(GpuTest, ArgumentErrorsThrowFromStartCopy) {
  const at::Tensor t = random_tensor(at::kFloat, {4});
  const auto count = static_cast<c10::DeviceIndex>(c10::cuda::device_count());
  EXPECT_THROW(start_copy(t, c10::Device(c10::kCUDA, count)), c10::Error);
  EXPECT_THROW(start_copy(t, c10::Device(c10::kMeta)), c10::Error);
  CopyOptions bad;
  bad.min_packed_alignment_bytes = 0;
  EXPECT_THROW(start_copy(t, kCuda0, bad), c10::Error);
  bad = CopyOptions{};
  bad.max_packed_chunk_bytes = 0;
  EXPECT_THROW(start_copy(t, kCuda0, bad), c10::Error);
  // A sparse leaf fails the copy: from start_copy, or from get() once the worker walked it.
  const at::Tensor sparse = random_tensor(at::kFloat, {4}, kCuda0).to_sparse();
  for (const c10::Device& target : {kCpu, kCuda0}) {
    EXPECT_THROW(start_copy(sparse, target).get(), c10::Error);
  }
  EXPECT_EQ(pinned_in_use(), baseline_in_use_);
}

}  // namespace
