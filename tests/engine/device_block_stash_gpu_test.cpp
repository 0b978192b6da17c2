// Device memory made after one copy for the next one's packed chunks (detail/device_block_stash.h):
// kept for the copy's stream only, taken by the next copy there, correct values either way, none
// kept while off, made without breaking another thread's graph capture, given back by a copy that
// took it and failed. Every GPU test skips (with the reason shown) without a CUDA device.
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <thread>

#include "detail/cuda_fault.h"
#include "detail/device_block_stash.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"

namespace {

namespace stash = mtc::detail::device_block_stash;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::detail::CudaFaultInjection;
using mtc::test::device_allocated;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCuda0;
using mtc::test::reference_batch;

// Waits up to two seconds for the worker's refill after a copy to leave `device` some blocks (true)
// or none (false); returns whether it did.
bool kept_becomes(bool some, c10::DeviceIndex device = 0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while ((stash::kept(device).blocks > 0) != some) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A copy of `batch` to cuda:0 whose job a pool worker runs: the result is only taken once the
// copy is ready, so the caller never claims the job itself (a worker makes the blocks only after a
// job it ran).
c10::IValue copied_by_a_worker(const c10::IValue& batch, const CopyOptions& options = {}) {
  mtc::CopyHandle handle = start_copy(batch, kCuda0, options);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!handle.ready() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  return handle.get();
}

// Lets go of what is kept and of the requests noted so far, and leaves the stash on.
void start_empty() {
  stash::set_enabled(false);
  stash::set_enabled(true);
}

// Each test starts with nothing kept (what earlier tests left is let go) and ends with the stash
// on.
class DeviceBlockStashGpuTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    start_empty();
  }
  void TearDown() override {
    stash::set_enabled(true);
    GpuTest::TearDown();
  }
};

TEST_F(DeviceBlockStashGpuTest, CopiesTakeTheBlocksTheLastOneLeftAndStayCorrect) {
  stash::set_enabled(true);
  CopyOptions options;  // packed, on the pool's workers
  // A first copy notes its chunks; a worker then keeps blocks for the next.
  const c10::IValue first = reference_batch();
  expect_structure_copy(copied_by_a_worker(first, options), first, kCuda0);
  ASSERT_TRUE(kept_becomes(true)) << "no block kept after a copy to the GPU";
  // Each later copy lands in blocks the previous one left: the values must be the inputs'.
  const uint64_t taken_before = stash::taken_total();
  for (int i = 0; i < 6; ++i) {
    const c10::IValue batch = reference_batch();
    expect_structure_copy(copied_by_a_worker(batch, options), batch, kCuda0);
    ASSERT_TRUE(kept_becomes(true)) << "copy " << i << " left no block for the next";
  }
  EXPECT_GE(stash::taken_total() - taken_before, 6u) << "the copies did not take the kept blocks";
  EXPECT_LE(stash::kept(0).blocks, stash::kMaxBlocks);
}

TEST_F(DeviceBlockStashGpuTest, BlocksOfAnotherStreamAreNotTaken) {
  stash::set_enabled(true);
  const c10::IValue batch = reference_batch();
  expect_structure_copy(copied_by_a_worker(batch), batch, kCuda0);
  ASSERT_TRUE(kept_becomes(true));
  const c10::cuda::CUDAStream other = c10::cuda::getStreamFromPool(false, 0);
  EXPECT_FALSE(stash::take(other, 1024)) << "a block of the default stream given for another";
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(0);
  const c10::DataPtr taken = stash::take(current, 1024);
  ASSERT_TRUE(taken) << "a kept block of the copy's stream was not given";
  EXPECT_EQ(taken.device(), kCuda0);
  // A copy on the other stream is correct, and what it leaves is for that stream.
  {
    const c10::cuda::CUDAStreamGuard guard(other);
    expect_structure_copy(copied_by_a_worker(batch), batch, kCuda0);
    other.synchronize();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  c10::DataPtr for_other;
  while (!(for_other = stash::take(other, 1024)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(for_other) << "the copy on the other stream left no block for it";
  EXPECT_FALSE(stash::take(current, 1024)) << "blocks of the other stream given for the default";
}

TEST_F(DeviceBlockStashGpuTest, NothingIsKeptWhileOff) {
  stash::set_enabled(true);
  const c10::IValue batch = reference_batch();
  expect_structure_copy(copied_by_a_worker(batch), batch, kCuda0);
  ASSERT_TRUE(kept_becomes(true));
  stash::set_enabled(false);
  EXPECT_FALSE(stash::take(c10::cuda::getCurrentCUDAStream(0), 1024));
  // Turning it off let the kept blocks go; copies made while off keep none.
  EXPECT_EQ(stash::kept(0).blocks, 0u);
  expect_structure_copy(copied_by_a_worker(batch), batch, kCuda0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(stash::kept(0).blocks, 0u);
}

// A copy whose job the caller runs (no background thread) leaves nothing: the caller's time is
// the copy's.
TEST_F(DeviceBlockStashGpuTest, ACallerThatRunsItsCopyMakesNoBlocks) {
  const c10::IValue batch = reference_batch();
  CopyOptions options;
  options.use_background_thread = false;
  expect_structure_copy(start_copy(batch, kCuda0, options).get(), batch, kCuda0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(stash::kept(0).blocks, 0u);
}

// A refill runs after get() may have returned, when the program may begin a CUDA graph capture on
// another thread in global mode (torch.cuda.graph's default). Its allocations, which here need new
// segments from the driver, must leave that capture valid.
TEST_F(DeviceBlockStashGpuTest, ARefillLeavesAnotherThreadsCaptureValid) {
  // Copies on the default stream and on one of torch's pool streams.
  for (const c10::cuda::CUDAStream& copy_stream :
       {c10::cuda::getCurrentCUDAStream(0), c10::cuda::getStreamFromPool(false, 0)}) {
    SCOPED_TRACE(copy_stream.id() == 0 ? "default stream" : "pool stream");
    start_empty();
    // Requests noted as a copy's chunks would note them (nothing is kept, so none is given),
    // more than one segment of the allocator's small blocks holds.
    for (int i = 0; i < 8; ++i) EXPECT_FALSE(stash::take(copy_stream, size_t{512} << 10));
    at::Tensor captured = at::ones({256}, at::TensorOptions().device(kCuda0));
    c10::cuda::CUDACachingAllocator::emptyCache();
    const c10::cuda::CUDAStream capture_stream = c10::cuda::getStreamFromPool(false, 0);
    ASSERT_EQ(cudaStreamBeginCapture(capture_stream.stream(), cudaStreamCaptureModeGlobal),
              cudaSuccess);
    {
      const c10::cuda::CUDAStreamGuard guard(capture_stream);
      captured.add_(1);
    }
    const int64_t segments_before =
        c10::cuda::CUDACachingAllocator::getDeviceStats(0).num_device_alloc;
    std::thread([&] { stash::refill(copy_stream); }).join();
    // Blocks that fit in segments earlier tests left would test nothing: the driver must have
    // been asked. Without the caching allocator (compute-sanitizer's memcheck run) torch counts
    // no segments, and every block is the driver's anyway.
    if (std::getenv("PYTORCH_NO_CUDA_MEMORY_CACHING") == nullptr) {
      EXPECT_GT(c10::cuda::CUDACachingAllocator::getDeviceStats(0).num_device_alloc,
                segments_before)
          << "the refill took no new segment from the driver";
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(capture_stream.stream(), &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    EXPECT_EQ(ended, cudaSuccess) << "the capture ended with " << cudaGetErrorString(ended);
    EXPECT_EQ(stash::kept(0).blocks, 8u) << "the refill did not keep a block for each request";
  }
}

// What the caching allocator has allocated on cuda:0 beyond the blocks kept for the next copy.
int64_t allocated_beyond_kept() { return device_allocated(0) - stash::kept(0).bytes; }

// Each checked CUDA call of a copy that starts with blocks kept for it fails in turn
// (cuda_fault.h): the failure comes out of get() naming the call, the device memory the copy held
// goes back, the blocks it took included, and the copies after it are correct. The fault sweep of
// copier_fault_test.cpp runs with the stash off (it counts all device memory a failed copy
// leaves); this one counts what is allocated beyond the kept blocks. With
// PYTORCH_NO_CUDA_MEMORY_CACHING (compute-sanitizer's memcheck run) torch counts no allocations:
// the failures are still made and checked, the memory is not.
TEST_F(DeviceBlockStashGpuTest, FaultInACopyThatTookKeptBlocksSurfacesAndFreesThem) {
  constexpr int64_t kMaxCalls = 200;
  const bool memory_counted = std::getenv("PYTORCH_NO_CUDA_MEMORY_CACHING") == nullptr;
  const c10::IValue batch = reference_batch();
  int64_t failed_after_taking = 0;
  int64_t call = 1;
  for (; call <= kMaxCalls; ++call) {
    // A copy that succeeds leaves blocks for the faulty one; its worker's refill is over before
    // the memory is read.
    expect_structure_copy(copied_by_a_worker(batch), batch, kCuda0);
    ASSERT_TRUE(kept_becomes(true))
        << "no block kept before the copy whose call " << call << " fails";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const int64_t before = allocated_beyond_kept();
    const uint64_t taken_before = stash::taken_total();
    CudaFaultInjection::arm(call, cudaErrorInvalidValue);
    bool threw = false;
    try {
      const c10::IValue out = copied_by_a_worker(batch);
      if (!CudaFaultInjection::disarm()) break;   // the copy made fewer calls: all covered
      expect_structure_copy(out, batch, kCuda0);  // a failure the engine absorbed
    } catch (const c10::Error& e) {
      threw = true;
      const std::string message = e.what_without_backtrace();
      EXPECT_TRUE(CudaFaultInjection::disarm()) << "failed without the fault: " << message;
      EXPECT_NE(message.find("cudaErrorInvalidValue"), std::string::npos) << message;
      EXPECT_NE(message.find("mtc: cuda"), std::string::npos) << message;
      if (stash::taken_total() > taken_before) ++failed_after_taking;
    }
    if (threw && memory_counted) {
      // A worker may hold the failed job for a moment after its handle is gone.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (allocated_beyond_kept() != before && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_EQ(allocated_beyond_kept(), before)
          << "device memory still held after the copy whose call " << call << " failed";
    }
    if (::testing::Test::HasFailure()) return;
  }
  CudaFaultInjection::disarm();
  EXPECT_LT(call, kMaxCalls) << "a copy kept making CUDA calls";
  EXPECT_GT(failed_after_taking, 0) << "no copy that failed had taken a kept block";
  const c10::IValue after = reference_batch();
  expect_structure_copy(copied_by_a_worker(after), after, kCuda0);
}

}  // namespace
