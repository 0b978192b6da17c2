// The copier on a GPU, values and packing: every dtype arrives bit for bit both ways, packed into
// the chunks the options promise. Every test skips (with the reason shown) without a CUDA device.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "detail/copy_job.h"
#include "detail/gather.h"
#include "detail/pinned_pool.h"
#include "detail/round_up.h"
#include "detail/worker_pool_set.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::CopyStats;
using mtc::start_copy;
using mtc::detail::PinnedPool;
using mtc::detail::round_up;
using mtc::test::all_dtypes;
using mtc::test::expect_structure_copy;
using mtc::test::expected_packed;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kMiB;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
using mtc::test::tensors_of;
using mtc::test::total_bytes;

std::set<const void*> storages_of(const std::vector<at::Tensor>& ts) {
  std::set<const void*> s;
  for (const at::Tensor& t : ts) s.insert(t.storage().data());
  return s;
}

TEST_F(GpuTest, EveryDtypeIsBitwiseEqualHostToDevice) {
  for (const at::ScalarType dtype : all_dtypes()) {
    SCOPED_TRACE(c10::toString(dtype));
    // Packed (small), the packing boundary, a pipelined single, and a 0-dim scalar.
    const int64_t elem = static_cast<int64_t>(c10::elementSize(dtype));
    c10::impl::GenericList list(c10::AnyType::get());
    list.push_back(random_tensor(dtype, {37}));
    list.push_back(random_tensor(dtype, {3, 5, 7}));
    list.push_back(random_tensor(dtype, {}));
    list.push_back(random_tensor(dtype, {mtc::kMaxPackedTensorBytes / elem}));
    list.push_back(random_tensor(dtype, {(6 * kMiB) / elem + 1}));
    CopyHandle h = start_copy(list, kCuda0);
    const c10::IValue out = h.get();
    expect_structure_copy(out, list, kCuda0);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.tensors, 5);
    EXPECT_EQ(s.packed, 4);
    EXPECT_EQ(s.chunks, 1);
    EXPECT_EQ(s.per_tensor, 1);
    EXPECT_EQ(s.bytes, total_bytes(tensors_of(list)));
  }
}

TEST_F(GpuTest, EveryDtypeIsBitwiseEqualDeviceToHost) {
  for (const at::ScalarType dtype : all_dtypes()) {
    SCOPED_TRACE(c10::toString(dtype));
    const int64_t elem = static_cast<int64_t>(c10::elementSize(dtype));
    c10::impl::GenericList list(c10::AnyType::get());
    list.push_back(random_tensor(dtype, {37}, kCuda0));
    list.push_back(random_tensor(dtype, {3, 5, 7}, kCuda0));
    list.push_back(random_tensor(dtype, {}, kCuda0));
    list.push_back(random_tensor(dtype, {mtc::kMaxPackedTensorBytes / elem}, kCuda0));
    list.push_back(random_tensor(dtype, {(6 * kMiB) / elem + 1}, kCuda0));
    CopyHandle h = start_copy(list, kCpu);
    const c10::IValue out = h.get();
    expect_structure_copy(out, list, kCpu);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.tensors, 5);
    EXPECT_EQ(s.packed, 4);
    EXPECT_EQ(s.chunks, 1);
    EXPECT_EQ(s.per_tensor, 1);
  }
}

TEST_F(GpuTest, MixedDtypesShareOneChunk) {
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    SCOPED_TRACE(source.str() + " -> " + target.str());
    c10::impl::GenericList list(c10::AnyType::get());
    // Odd element counts so each tensor ends off any alignment boundary.
    int64_t count = 1;
    for (int round = 0; round < 3; ++round)
      for (const at::ScalarType dtype : all_dtypes())
        list.push_back(random_tensor(dtype, {count++ % 7 + 1}, source));
    CopyHandle h = start_copy(list, target);
    const c10::IValue out = h.get();
    expect_structure_copy(out, list, target);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.packed, static_cast<int64_t>(list.size()));
    EXPECT_EQ(s.chunks, 1);
    EXPECT_EQ(s.per_tensor, 0);
    const std::vector<at::Tensor> outs = tensors_of(out);
    EXPECT_EQ(storages_of(outs).size(), 1u) << "one chunk: every output is a view of one storage";
    for (const at::Tensor& t : outs)
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % std::max<int64_t>(16, t.element_size()),
                0u);
  }
}

// A copy of `in` to `target` with the walk in parts (the default for large structures) or on one
// thread, its result checked: its stats and its output tensors. Each chunk is a storage of its
// own.
struct Walked {
  CopyStats stats;
  std::vector<at::Tensor> outs;
};
Walked copy_walked(const c10::IValue& in, const c10::Device& target, bool split) {
  mtc::detail::set_parallel_walk(split ? mtc::detail::kDefaultParallelWalkLeaves
                                       : std::numeric_limits<int64_t>::max());
  CopyHandle h = start_copy(in, target);
  const c10::IValue out = h.get();
  mtc::detail::set_parallel_walk(mtc::detail::kDefaultParallelWalkLeaves);
  expect_structure_copy(out, in, target);
  Walked walked{h.stats(), tensors_of(out)};
  EXPECT_EQ(static_cast<int64_t>(storages_of(walked.outs).size()), walked.stats.chunks);
  return walked;
}

// Walked on one thread, the reference batch packs into one chunk; walked in parts (the default
// for this size), into one chunk per part.
TEST_F(GpuTest, ReferenceBatchHostToDevicePacksIntoOneChunkPerPart) {
  const c10::IValue in = reference_batch();
  const std::vector<at::Tensor> leaves = tensors_of(in);
  ASSERT_EQ(leaves.size(), 528u);
  ASSERT_EQ(total_bytes(leaves), 153628);
  for (const bool split : {false, true}) {
    SCOPED_TRACE(split ? "walk in parts" : "walk on one thread");
    const CopyStats s = copy_walked(in, kCuda0, split).stats;
    EXPECT_EQ(s.tensors, 528);
    EXPECT_EQ(s.bytes, 153628);
    EXPECT_EQ(s.reused, 0);
    EXPECT_EQ(s.packed, 528);
    // The copy's thread, the workers and a caller waiting in get().
    const int64_t max_parts = mtc::detail::worker_pool_for(kCuda0).size() + 2;
    if (split) {
      // Every thread that walked part of it packed something, into a chunk of its own.
      EXPECT_GE(s.walk_threads, 1);
      EXPECT_LE(s.walk_threads, max_parts);
      EXPECT_EQ(s.chunks, s.walk_threads);
    } else {
      EXPECT_EQ(s.walk_threads, 1);
      EXPECT_EQ(s.chunks, 1);
    }
    EXPECT_EQ(s.per_tensor, 0);
    EXPECT_GE(s.pinned_bytes, 153628);
    EXPECT_LE(s.pinned_bytes, 153628 + 528 * 16 + 256 * s.chunks);
    EXPECT_EQ(s.pinned_bytes % PinnedPool::kGranularity, 0);
  }
}

// Packed during the walk, a chunk per walking thread, all gathered into one buffer that one DMA
// brings to one pinned staging block and one block of host memory.
TEST_F(GpuTest, ReferenceBatchDeviceToHostPacksAChunkPerWalkingThread) {
  const c10::IValue in = reference_batch(kCuda0);
  for (const bool split : {false, true}) {
    SCOPED_TRACE(split ? "walk in parts" : "walk on one thread");
    const auto [s, outs] = copy_walked(in, kCpu, split);
    EXPECT_EQ(s.tensors, 528);
    EXPECT_EQ(s.bytes, 153628);
    EXPECT_EQ(s.packed, 528);
    EXPECT_EQ(s.chunks, split ? s.walk_threads : 1);
    EXPECT_EQ(s.per_tensor, 0);
    const int64_t block = mtc::test::expect_storages_back_to_back(outs, 16);
    EXPECT_GE(block, 153628);
    // The gather's descriptors ride in front of the bytes, 256-aligned.
    const int64_t descriptors =
        round_up(528 * static_cast<int64_t>(sizeof(mtc::detail::GatherItem)), 256);
    EXPECT_EQ(s.pinned_bytes, round_up(descriptors + block, PinnedPool::kGranularity))
        << "one staging block for every chunk and the gather's descriptors";
  }
}

TEST_F(GpuTest, SmallChunkLimitGivesSeveralChunks) {
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    SCOPED_TRACE(source.str() + " -> " + target.str());
    const c10::IValue in = reference_batch(source);
    CopyOptions options;
    options.max_packed_chunk_bytes = 4096;  // every tensor (<= 3,360 B) still fits a chunk
    CopyHandle h = start_copy(in, target, options);
    const c10::IValue out = h.get();
    expect_structure_copy(out, in, target);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.packed, 528);
    EXPECT_GE(s.chunks, 153628 / 4096 + 1);
    EXPECT_LT(s.chunks, 528);
    EXPECT_EQ(s.per_tensor, 0);
    const std::vector<at::Tensor> outs = tensors_of(out);
    EXPECT_EQ(static_cast<int64_t>(storages_of(outs).size()), s.chunks);
    for (const at::Tensor& t : outs) {
      const int64_t end = t.storage_offset() * t.element_size() + static_cast<int64_t>(t.nbytes());
      EXPECT_LE(end, static_cast<int64_t>(t.storage().nbytes()));
    }
  }
}

TEST_F(GpuTest, TensorsLargerThanTheChunkLimitGoOneByOne) {
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    SCOPED_TRACE(source.str() + " -> " + target.str());
    const c10::IValue in = reference_batch(source);
    CopyOptions options;
    options.max_packed_chunk_bytes = 1000;
    CopyHandle h = start_copy(in, target, options);
    const c10::IValue out = h.get();
    expect_structure_copy(out, in, target);
    const std::vector<at::Tensor> leaves = tensors_of(in);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.packed, expected_packed(leaves, target, options));
    EXPECT_GT(s.per_tensor, 0);
    EXPECT_EQ(s.packed + s.per_tensor, 528);
  }
}

TEST_F(GpuTest, The256KiBPackingBoundary) {
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    SCOPED_TRACE(source.str() + " -> " + target.str());
    c10::impl::GenericList list(c10::AnyType::get());
    list.push_back(random_tensor(at::kByte, {1}, source));               // 1 B: packed
    list.push_back(random_tensor(at::kFloat, {64 * 1024}, source));      // 256 KiB: packed
    list.push_back(random_tensor(at::kByte, {256 * 1024 + 1}, source));  // 256 KiB + 1: not
    list.push_back(
        random_tensor(at::kComplexDouble, {16 * 1024 + 1}, source));  // 256 KiB + 16: not
    CopyHandle h = start_copy(list, target);
    expect_structure_copy(h.get(), list, target);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.packed, 2);
    EXPECT_EQ(s.chunks, 1);
    EXPECT_EQ(s.per_tensor, 2);
  }
}

TEST_F(GpuTest, ZeroSizeTensorsBecomeEmptyTensorsOnTheTarget) {
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    SCOPED_TRACE(source.str() + " -> " + target.str());
    c10::impl::GenericList list(c10::AnyType::get());
    const auto opts = at::TensorOptions().device(source);
    list.push_back(at::empty({0}, opts.dtype(at::kFloat)));
    list.push_back(at::empty({3, 0}, opts.dtype(at::kLong)));
    list.push_back(at::empty({0, 5, 2}, opts.dtype(at::kBool)));
    list.push_back(random_tensor(at::kInt, {4}, source));
    CopyHandle h = start_copy(list, target);
    const c10::IValue out = h.get();
    expect_structure_copy(out, list, target);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out.toList().get(i).toTensor().numel(), 0);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.packed, 1) << "zero-size tensors are not packed";
    EXPECT_EQ(s.packed + s.per_tensor + s.reused, 4);
  }
}

}  // namespace
