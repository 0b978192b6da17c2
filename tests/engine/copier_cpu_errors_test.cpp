// What the copier refuses and how it says so: bad options, targets and leaves, from start_copy
// or from get(), naming the leaf. Runs without a GPU.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "cpu_test_support.h"
#include "detail/copy_job.h"
#include "detail/routes.h"
#include "detail/worker_pool_set.h"
#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::expect_copy_fails;
using mtc::test::expect_throws_with;
using mtc::test::kCpu;

TEST(CopierCpu, AlignmentBelowOneThrows) {
  const at::Tensor t = at::ones({4});
  for (const int64_t alignment : {int64_t{0}, int64_t{-1}, int64_t{-4096}}) {
    CopyOptions options;
    options.min_packed_alignment_bytes = alignment;
    expect_throws_with([&] { start_copy(t, kCpu, options); }, "min_packed_alignment_bytes");
  }
  CopyOptions ok;
  ok.min_packed_alignment_bytes = 1;
  EXPECT_NO_THROW(start_copy(t, kCpu, ok).get());
}

// Alignments whose sums or least common multiples with an element size could overflow the
// packer's offsets (tensors laid over each other, a negative staging offset) are refused; the
// largest one taken still packs.
TEST(CopierCpu, AlignmentAboveOneGibibyteThrows) {
  const at::Tensor t = at::ones({4});
  for (const int64_t alignment : {mtc::kMaxPackedAlignmentBytes + 1, (int64_t{1} << 62) + 1,
                                  std::numeric_limits<int64_t>::max()}) {
    CopyOptions options;
    options.min_packed_alignment_bytes = alignment;
    expect_throws_with([&] { start_copy(t, kCpu, options); },
                       "min_packed_alignment_bytes must be <= 1073741824 (1 GiB)");
  }
  CopyOptions largest;
  largest.min_packed_alignment_bytes = mtc::kMaxPackedAlignmentBytes;
  EXPECT_NO_THROW(start_copy(t, kCpu, largest).get());
}

TEST(CopierCpu, ChunkLimitNotPositiveThrows) {
  const at::Tensor t = at::ones({4});
  for (const int64_t limit : {int64_t{0}, int64_t{-1}, int64_t{-(32 << 20)}}) {
    CopyOptions options;
    options.max_packed_chunk_bytes = limit;
    expect_throws_with([&] { start_copy(t, kCpu, options); }, "max_packed_chunk_bytes");
  }
  CopyOptions ok;
  ok.max_packed_chunk_bytes = 1;
  EXPECT_NO_THROW(start_copy(t, kCpu, ok).get());
}

TEST(CopierCpu, OptionsAreValidatedEvenWithoutTensors) {
  CopyOptions options;
  options.min_packed_alignment_bytes = 0;
  EXPECT_THROW(start_copy(c10::IValue(), kCpu, options), c10::ValueError);
}

TEST(CopierCpu, CudaTargetWithoutCudaThrows) {
  if (c10::cuda::device_count() > 0)
    GTEST_SKIP() << "CUDA is available here: this test needs a machine without a GPU";
  const at::Tensor t = at::ones({4});
  expect_throws_with([&] { start_copy(t, c10::Device(c10::kCUDA, 0)); }, "no CUDA device");
  expect_throws_with([&] { start_copy(t, c10::Device(c10::kCUDA)); }, "no CUDA device");
  EXPECT_THROW(start_copy(c10::IValue(), c10::Device(c10::kCUDA, 0)), c10::ValueError);
}

TEST(CopierCpu, CudaIndexOutOfRangeThrows) {
  const at::Tensor t = at::ones({4});
  const auto count = static_cast<c10::DeviceIndex>(c10::cuda::device_count());
  EXPECT_THROW(start_copy(t, c10::Device(c10::kCUDA, count)), c10::ValueError);
  EXPECT_THROW(start_copy(t, c10::Device(c10::kCUDA, 100)), c10::ValueError);
  if (count < 8) expect_throws_with([&] { start_copy(t, c10::Device(c10::kCUDA, 7)); }, "cuda:7");
}

TEST(CopierCpu, UnsupportedTargetDeviceTypesThrow) {
  const at::Tensor t = at::ones({4});
  expect_throws_with([&] { start_copy(t, c10::Device(c10::kMeta)); }, "unsupported target");
  EXPECT_THROW(start_copy(t, c10::Device(c10::kXPU, 0)), c10::Error);
  EXPECT_THROW(start_copy(t, c10::Device(c10::kMPS)), c10::Error);
  EXPECT_THROW(start_copy(c10::IValue(), c10::Device(c10::kMeta)), c10::Error);
}

TEST(CopierCpu, PinnedPoolStatsOfANegativeDeviceIndexThrows) {
  EXPECT_THROW(mtc::pinned_pool_stats(-1), c10::ValueError);
  expect_throws_with([] { mtc::pinned_pool_stats(-3); }, "not a CUDA device index");
  // A device no copy used (or that this machine lacks) has an empty pool.
  EXPECT_EQ(mtc::pinned_pool_stats(7).reserved_bytes, 0);
}

TEST(CopierCpu, LeafOnAnUnsupportedDeviceThrows) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::ones({2}));
  list.push_back(at::empty({3}, at::TensorOptions().device(c10::kMeta)));
  for (const bool background : {true, false}) {
    CopyOptions options;
    options.use_background_thread = background;
    expect_copy_fails(list, kCpu, options, "leaf 1");
    expect_copy_fails(list, kCpu, options, "only cpu and cuda tensors");
  }
}

// A structure large enough to be walked in parts: a bad leaf deep in a later root element fails
// the copy, and the message says which element (leaves are numbered within it).
TEST(CopierCpu, LeafErrorInAWalkSplitInParts) {
  c10::impl::GenericList root =
      mtc::test::list_of_lists(40, 20, [](int k) { return at::ones({k + 1}); });
  c10::impl::GenericList bad = root.get(33).toList();
  bad.set(4, at::empty({3}, at::TensorOptions().device(c10::kMeta)));
  for (const bool background : {true, false}) {
    CopyOptions options;
    options.use_background_thread = background;
    expect_copy_fails(root, kCpu, options, "tensor leaf 4 of root element 33");
  }
}

// A bad leaf in the first root element of a structure walked in parts: its first copy walks that
// element before the split is decided, a later copy of a root as long (split as the first was,
// copy_job.h) as a part beside its helpers. The message is the same: the leaf's number in the
// structure, without an element.
TEST(CopierCpu, LeafErrorInTheFirstElementReadsTheSameOnEveryCopy) {
  c10::impl::GenericList root =
      mtc::test::list_of_lists(40, 20, [](int k) { return at::ones({k + 1}); });
  // A good structure as long first, so that the pool remembers a split for this length.
  const c10::impl::GenericList good =
      mtc::test::list_of_lists(40, 20, [](int k) { return at::ones({k + 1}); });
  mtc::test::expect_same_structure_same_tensors(start_copy(good, kCpu).get(), good);
  const mtc::detail::WorkerPool& pool = mtc::detail::worker_pool_for(kCpu);
  if (pool.size() > 0) {
    ASSERT_GT(mtc::detail::remembered_helpers(pool, 40), 0);
  }
  root.get(0).toList().set(5, at::empty({3}, at::TensorOptions().device(c10::kMeta)));
  for (int round = 0; round < 3; ++round) {
    expect_copy_fails(root, kCpu, CopyOptions(), "mtc: tensor leaf 5 is on meta");
    if (::testing::Test::HasFailure()) return;
  }
}

// Two bad leaves in elements walked by different parts: the error reported is always the
// earlier one, whichever part fails first in time.
TEST(CopierCpu, SplitWalkReportsTheEarliestBadLeaf) {
  c10::impl::GenericList root =
      mtc::test::list_of_lists(40, 20, [](int k) { return at::ones({k + 1}); });
  const at::Tensor meta = at::empty({3}, at::TensorOptions().device(c10::kMeta));
  root.get(38).toList().set(0, meta);  // near the end: its part is the last
  root.get(12).toList().set(7, meta);
  for (int round = 0; round < 20; ++round) {
    expect_copy_fails(root, kCpu, CopyOptions(), "tensor leaf 7 of root element 12");
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(CopierCpu, SparseLeafThrows) {
  const at::Tensor sparse = at::sparse_coo_tensor(at::zeros({1, 2}, at::kLong), at::ones({2}), {4});
  ASSERT_EQ(sparse.layout(), c10::kSparse);
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert(std::string("dense"), at::ones({2}));
  dict.insert(std::string("sparse"), sparse);
  for (const bool background : {true, false}) {
    CopyOptions options;
    options.use_background_thread = background;
    expect_copy_fails(sparse, kCpu, options, "layout");
    expect_copy_fails(dict, kCpu, options, "leaf 1");
  }
}

// A stream asked for a device start_copy captured none of (an input in a CUDA context made by
// other means than the runtime's primary one): an error naming the device, not an assertion.
TEST(CopierCpu, AnInputOnADeviceWithoutACapturedStreamFailsNamingIt) {
  const mtc::detail::CapturedStreams none;
  expect_throws_with([&] { (void)none.of(3); },
                     "an input lives on cuda:3, but this process had no primary CUDA context");
}

TEST(CopierCpu, AWalkSplitOfZeroLeavesIsRefused) {
  expect_throws_with([] { mtc::set_walk_split(0, 128); }, "must be >= 1");
  expect_throws_with([] { mtc::set_walk_split(256, 0); }, "must be >= 1");
  EXPECT_THROW(mtc::set_walk_split(-1, 1), c10::ValueError);
  mtc::set_walk_split(256, 128);  // the defaults, valid
}

}  // namespace
