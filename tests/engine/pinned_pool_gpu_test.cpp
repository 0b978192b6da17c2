// The pinned staging pool seen through the public API on a GPU: it levels off near the peak
// staging in flight, gives idle memory back, and a copy that would need more than its limit
// fails from get() with the engine usable afterwards. Skipped without a CUDA device.
#include <ATen/core/List.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <string>

#include "gpu_test_support.h"
#include "mtc/copier.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::PinnedPoolStats;
using mtc::start_copy;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kKiB;
using mtc::test::kMiB;
using mtc::test::pinned_in_use;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
using mtc::test::ScopedPoolLimit;

class PinnedPoolGpu : public GpuTest, public ::testing::WithParamInterface<bool> {};

// The micro-benchmark's BM_PinnedPoolFootprint runs the same check over 10,000 copies.
TEST_P(PinnedPoolGpu, RepeatedCopiesLevelOffNearThePeakInFlight) {
  const bool h2d = GetParam();
  const c10::IValue batch = reference_batch(h2d ? kCpu : kCuda0);
  const c10::Device target = h2d ? kCuda0 : kCpu;
  mtc::release_idle_pinned_memory();
  mtc::reset_pinned_pool_peaks();
  int64_t allocations_after_warmup = 0;
  for (int copy = 0; copy < 1000; ++copy) {
    start_copy(batch, target).get();
    if (copy == 9) allocations_after_warmup = mtc::pinned_pool_stats().slab_allocations;
  }
  const PinnedPoolStats s = mtc::pinned_pool_stats();
  EXPECT_EQ(s.slab_allocations, allocations_after_warmup) << "the pool still grew after 10 copies";
  EXPECT_GT(s.peak_in_use_bytes, 0);
  EXPECT_GE(s.reserved_bytes, s.peak_in_use_bytes);
  EXPECT_LE(s.reserved_bytes * 4, s.peak_in_use_bytes * 5)
      << s.reserved_bytes << " bytes reserved for a peak of " << s.peak_in_use_bytes
      << " in flight";
  EXPECT_EQ(s.in_use_bytes, 0);

  EXPECT_EQ(mtc::release_idle_pinned_memory(), s.reserved_bytes);
  EXPECT_EQ(mtc::pinned_pool_stats().reserved_bytes, 0);
  // And the next copy works from an empty pool.
  CopyHandle h = start_copy(batch, target);
  expect_structure_copy(h.get(), batch, target);
}

TEST_P(PinnedPoolGpu, StagingComesFromTheGpusOwnPool) {
  const bool h2d = GetParam();
  const c10::IValue batch = reference_batch(h2d ? kCpu : kCuda0);
  mtc::release_idle_pinned_memory();
  mtc::reset_pinned_pool_peaks();
  start_copy(batch, h2d ? kCuda0 : kCpu).get();
  const PinnedPoolStats own = mtc::pinned_pool_stats(0);
  EXPECT_GT(own.peak_in_use_bytes, 0);
  EXPECT_EQ(own.in_use_bytes, 0);
  EXPECT_EQ(mtc::pinned_pool_stats().peak_in_use_bytes, own.peak_in_use_bytes)
      << "another device's pool staged a copy of cuda:0";
}

TEST_P(PinnedPoolGpu, ACopyPastTheLimitFailsFromGetAndTheEngineStaysUsable) {
  const bool h2d = GetParam();
  const c10::IValue batch = reference_batch(h2d ? kCpu : kCuda0);  // about 160 KB of staging
  const c10::Device target = h2d ? kCuda0 : kCpu;
  const int64_t baseline = pinned_in_use();
  for (const bool background : {true, false}) {
    SCOPED_TRACE(background ? "background thread" : "on the caller");
    CopyOptions options;
    options.use_background_thread = background;
    {
      ScopedPoolLimit limit(64 * kKiB);
      EXPECT_LE(mtc::pinned_pool_stats().reserved_bytes, 64 * kKiB)
          << "idle memory past the new limit stayed";
      CopyHandle h;
      ASSERT_NO_THROW(h = start_copy(batch, target, options)) << "the failure belongs to get()";
      try {
        h.get();
        ADD_FAILURE() << "get() returned although the staging does not fit the limit";
      } catch (const c10::Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("limit of 65536 bytes"), std::string::npos) << message;
        EXPECT_NE(message.find("MTC_PINNED_POOL_LIMIT_BYTES"), std::string::npos) << message;
      }
      EXPECT_THROW((void)h.ready(), c10::Error);
      EXPECT_EQ(pinned_in_use(), baseline) << "staging of the failed copy is still held";
      EXPECT_LE(mtc::pinned_pool_stats().reserved_bytes, 64 * kKiB);

      // A copy that fits the limit works under it.
      c10::impl::GenericList small(c10::AnyType::get());
      for (int i = 0; i < 8; ++i)
        small.push_back(random_tensor(at::kFloat, {100}, h2d ? kCpu : kCuda0));
      CopyHandle ok = start_copy(small, target, options);
      expect_structure_copy(ok.get(), small, target);
    }
    CopyHandle after = start_copy(batch, target, options);
    expect_structure_copy(after.get(), batch, target);
    EXPECT_EQ(pinned_in_use(), baseline);
  }
}

// A large tensor streams through however many pipeline slots the limit leaves room for (the
// device-to-host ring's slots are 4 MiB: one fits).
TEST_P(PinnedPoolGpu, LargeTensorsStreamThroughASmallLimit) {
  const bool h2d = GetParam();
  const at::Tensor big = random_tensor(at::kFloat, {6 * kMiB}, h2d ? kCpu : kCuda0);  // 24 MiB
  const c10::Device target = h2d ? kCuda0 : kCpu;
  mtc::release_idle_pinned_memory();
  mtc::reset_pinned_pool_peaks();
  ScopedPoolLimit limit(5 * kMiB);
  CopyHandle h = start_copy(big, target);
  expect_structure_copy(h.get(), big, target);
  EXPECT_GT(h.stats().pinned_bytes, 0);
  EXPECT_LE(mtc::pinned_pool_stats().peak_reserved_bytes, 5 * kMiB);
}

std::string direction_name(const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "HostToDevice" : "DeviceToHost";
}

INSTANTIATE_TEST_SUITE_P(Directions, PinnedPoolGpu, ::testing::Bool(), direction_name);

}  // namespace
