// The copier on a GPU under every combination of its options, and the pinned staging it takes.
// Every test skips (with the reason shown) without a CUDA device.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::CopyStats;
using mtc::start_copy;
using mtc::test::expect_copy_of;
using mtc::test::expect_structure_copy;
using mtc::test::expected_packed;
using mtc::test::expected_reused;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kMiB;
using mtc::test::mixed_batch;
using mtc::test::pinned_in_use;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
using mtc::test::tensors_of;
using mtc::test::total_bytes;

enum class Direction { kHostToDevice, kDeviceToHost };

class OptionCombinationsGpu
    : public GpuTest,
      public ::testing::WithParamInterface<std::tuple<bool, bool, bool, Direction>> {};

TEST_P(OptionCombinationsGpu, CopiesTheMixedBatch) {
  const auto [pinned, pack, background, direction] = GetParam();
  CopyOptions options;
  options.use_pinned_staging = pinned;
  options.pack_cpu_tensors = pack;
  options.use_background_thread = background;
  const c10::Device source = direction == Direction::kHostToDevice ? kCpu : kCuda0;
  const c10::Device target = direction == Direction::kHostToDevice ? kCuda0 : kCpu;
  const c10::IValue in = mixed_batch(source);
  const std::vector<at::Tensor> leaves = tensors_of(in);

  // The pool grows during the first copy and may merge its slabs into one at the second.
  int64_t slab_allocations_after_second = 0;
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    const int64_t in_use_before = pinned_in_use();
    CopyHandle h = start_copy(in, target, options);
    const c10::IValue out = h.get();
    EXPECT_EQ(pinned_in_use(), in_use_before) << "get() returned with pinned staging still held";
    expect_structure_copy(out, in, target);
    EXPECT_TRUE(h.ready());

    const CopyStats s = h.stats();
    EXPECT_EQ(s.tensors, static_cast<int64_t>(leaves.size()));
    EXPECT_EQ(s.bytes, total_bytes(leaves));
    EXPECT_EQ(s.reused, expected_reused(leaves, target));
    EXPECT_EQ(s.packed, expected_packed(leaves, target, options));
    EXPECT_EQ(s.chunks, pack ? 1 : 0);
    EXPECT_EQ(s.packed + s.per_tensor + s.reused, s.tensors);
    if (!pinned) {
      EXPECT_EQ(s.pinned_bytes, 0);
    } else if (pack) {
      EXPECT_GT(s.pinned_bytes, 0);
    }

    const int64_t slab_allocations = mtc::pinned_pool_stats().slab_allocations;
    if (round == 1) {
      slab_allocations_after_second = slab_allocations;
    } else if (round > 1) {
      EXPECT_EQ(slab_allocations, slab_allocations_after_second)
          << "the pinned pool grew on a repeated identical copy";
    }
  }
}

std::string option_combination_name(
    const ::testing::TestParamInfo<OptionCombinationsGpu::ParamType>& param_info) {
  const auto& [pinned, pack, background, direction] = param_info.param;
  return std::string(direction == Direction::kHostToDevice ? "H2D" : "D2H") +
         (pinned ? "_pinned" : "_pageable") + (pack ? "_packed" : "_unpacked") +
         (background ? "_background" : "_inline");
}

INSTANTIATE_TEST_SUITE_P(AllOptions, OptionCombinationsGpu,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(Direction::kHostToDevice,
                                                              Direction::kDeviceToHost)),
                         option_combination_name);

// Staging of a large pageable tensor goes through pinned slots taken from the pool; the stats
// say pinned_bytes is "staging bytes taken from the pinned pool".
TEST_F(GpuTest, PinnedBytesCountTheStagingOfLargeTensors) {
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    SCOPED_TRACE(source.str() + " -> " + target.str());
    const at::Tensor big = random_tensor(at::kFloat, {2 * kMiB}, source);  // 8 MiB
    CopyHandle h = start_copy(big, target);
    expect_copy_of(h.get().toTensor(), big, target);
    EXPECT_EQ(h.stats().per_tensor, 1);
    EXPECT_GT(h.stats().pinned_bytes, 0) << "pipelined staging is not counted in pinned_bytes";
  }
}

TEST_F(GpuTest, PinnedPoolIsWarmAfterTheSecondCopy) {
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    SCOPED_TRACE(source.str() + " -> " + target.str());
    c10::impl::GenericList batch(c10::AnyType::get());
    batch.push_back(reference_batch(source));
    batch.push_back(random_tensor(at::kFloat, {5 * kMiB}, source));  // 20 MiB, pipelined
    const int64_t baseline = pinned_in_use();
    // The first copy grows the pool; the second may merge what it grew into one slab.
    start_copy(batch, target).get();
    start_copy(batch, target).get();
    const auto warm = mtc::pinned_pool_stats();
    EXPECT_EQ(warm.in_use_bytes, baseline);
    for (int i = 0; i < 10; ++i) {
      CopyHandle h = start_copy(batch, target);
      h.get();
      EXPECT_EQ(pinned_in_use(), baseline) << "copy " << i;
    }
    // Handles dropped without get() release their staging too.
    for (int i = 0; i < 5; ++i) {
      CopyHandle h = start_copy(batch, target);
    }
    EXPECT_EQ(pinned_in_use(), baseline);
    const auto after = mtc::pinned_pool_stats();
    EXPECT_EQ(after.slab_allocations, warm.slab_allocations);
    EXPECT_EQ(after.reserved_bytes, warm.reserved_bytes);
  }
}

}  // namespace
