// Device memory made after one copy for the next one's packed chunks (detail/device_block_stash.h):
// kept for the copy's stream only, taken by the next copy there, correct values either way, none
// kept while off. Every GPU test skips (with the reason shown) without a CUDA device.
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <thread>

#include "detail/device_block_stash.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"

namespace {

namespace stash = mtc::detail::device_block_stash;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCuda0;
using mtc::test::reference_batch;

// Waits up to two seconds for the worker's refill after a copy to leave `device` some blocks (true)
// or none (false); returns whether it did.
bool kept_becomes(bool some, c10::DeviceIndex device = 0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while ((stash::kept_blocks(device) > 0) != some) {
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

// Each test starts with nothing kept (what earlier tests left is let go) and ends with the stash
// on.
class DeviceBlockStashGpuTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    stash::set_enabled(false);
    stash::set_enabled(true);
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
  EXPECT_LE(stash::kept_blocks(0), stash::kMaxBlocks);
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
  EXPECT_EQ(stash::kept_blocks(0), 0u);
  expect_structure_copy(copied_by_a_worker(batch), batch, kCuda0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(stash::kept_blocks(0), 0u);
}

// A copy whose job the caller runs (no background thread) leaves nothing: the caller's time is
// the copy's.
TEST_F(DeviceBlockStashGpuTest, ACallerThatRunsItsCopyMakesNoBlocks) {
  const c10::IValue batch = reference_batch();
  CopyOptions options;
  options.use_background_thread = false;
  expect_structure_copy(start_copy(batch, kCuda0, options).get(), batch, kCuda0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(stash::kept_blocks(0), 0u);
}

}  // namespace
