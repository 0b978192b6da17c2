// The copier on a GPU: values, layouts, packing, options, streams, handles and errors.
// Every test skips (with the reason shown) on a machine without a CUDA device.
#include "detail/copy_job.h"
#include "detail/pinned_pool.h"
#include "detail/structure.h"
#include "detail/worker_pool.h"
#include "mtc/copier.h"

#include "gpu_test_support.h"
#include "structure_compare.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/cuda/Sleep.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <c10/core/InferenceMode.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::CopyStats;
using mtc::start_copy;
using mtc::detail::PinnedPool;
using mtc::test::all_dtypes;
using mtc::test::bytes_of;
using mtc::test::expect_copy_of;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kCuda1;
using mtc::test::kKiB;
using mtc::test::kMiB;
using mtc::test::map_tensors;
using mtc::test::mixed_batch;
using mtc::test::MultiGpuTest;
using mtc::test::pinned_in_use;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
using mtc::test::tensors_of;
using mtc::test::to_device;
using mtc::test::total_bytes;

// About 100 ms of spinning on a 1.4-2 GHz GPU: long enough that a copy that ignored the stream
// order would visibly overtake it, short enough to keep the suite quick.
constexpr int64_t kSleepCycles = 200'000'000;

// What the engine promises to pack for a copy to `target`.
int64_t expected_packed(const std::vector<at::Tensor>& ts, const c10::Device& target, const CopyOptions& o) {
  if (!o.pack_cpu_tensors) return 0;
  int64_t n = 0;
  for (const at::Tensor& t : ts) {
    if (!t.defined() || t.device() == target) continue;
    const auto bytes = static_cast<int64_t>(t.nbytes());
    if (t.is_contiguous() && bytes >= 1 && bytes <= mtc::kMaxPackedTensorBytes && bytes <= o.max_packed_chunk_bytes) ++n;
  }
  return n;
}

int64_t expected_reused(const std::vector<at::Tensor>& ts, const c10::Device& target) {
  int64_t n = 0;
  for (const at::Tensor& t : ts)
    if (!t.defined() || t.device() == target) ++n;
  return n;
}

std::set<const void*> storages_of(const std::vector<at::Tensor>& ts) {
  std::set<const void*> s;
  for (const at::Tensor& t : ts) s.insert(t.storage().data());
  return s;
}

bool wait_until_ready_or_throw(CopyHandle& h) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (h.ready()) return true;
    std::this_thread::yield();
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Values

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
      for (const at::ScalarType dtype : all_dtypes()) list.push_back(random_tensor(dtype, {count++ % 7 + 1}, source));
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
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % std::max<int64_t>(16, t.element_size()), 0u);
  }
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
    mtc::detail::set_parallel_walk(split ? mtc::detail::kDefaultParallelWalkLeaves
                                                : std::numeric_limits<int64_t>::max());
    CopyHandle h = start_copy(in, kCuda0);
    const c10::IValue out = h.get();
    mtc::detail::set_parallel_walk(mtc::detail::kDefaultParallelWalkLeaves);
    expect_structure_copy(out, in, kCuda0);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.tensors, 528);
    EXPECT_EQ(s.bytes, 153628);
    EXPECT_EQ(s.reused, 0);
    EXPECT_EQ(s.packed, 528);
    // The copy's thread, the workers and a caller waiting in get().
    const int64_t max_parts = mtc::detail::WorkerPool::instance().size() + 2;
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
    EXPECT_EQ(static_cast<int64_t>(storages_of(tensors_of(out)).size()), s.chunks);
  }
}

TEST_F(GpuTest, ReferenceBatchDeviceToHostPacksIntoOneChunk) {
  const c10::IValue in = reference_batch(kCuda0);
  CopyHandle h = start_copy(in, kCpu);
  const c10::IValue out = h.get();
  expect_structure_copy(out, in, kCpu);
  const CopyStats s = h.stats();
  EXPECT_EQ(s.tensors, 528);
  EXPECT_EQ(s.bytes, 153628);
  EXPECT_EQ(s.packed, 528);  // more than one gather launch (128 descriptors each)
  EXPECT_EQ(s.chunks, 1);
  EXPECT_EQ(s.per_tensor, 0);
  EXPECT_GT(s.pinned_bytes, 0);
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
    list.push_back(random_tensor(at::kByte, {1}, source));                       // 1 B: packed
    list.push_back(random_tensor(at::kFloat, {64 * 1024}, source));              // 256 KiB: packed
    list.push_back(random_tensor(at::kByte, {256 * 1024 + 1}, source));          // 256 KiB + 1: not
    list.push_back(random_tensor(at::kComplexDouble, {16 * 1024 + 1}, source));  // 256 KiB + 16: not
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

// ---------------------------------------------------------------------------------------------
// Layouts and alignment

TEST_F(GpuTest, PackedOutputsAreAlignedAsPromised) {
  for (const int64_t alignment : {1, 2, 16, 64, 256, 512, 1024, 4096}) {
    for (const c10::Device& source : {kCpu, kCuda0}) {
      const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
      SCOPED_TRACE(::testing::Message() << source << " -> " << target << ", alignment " << alignment);
      c10::impl::GenericList list(c10::AnyType::get());
      int64_t count = 1;
      for (int round = 0; round < 2; ++round)
        for (const at::ScalarType dtype : all_dtypes()) list.push_back(random_tensor(dtype, {count++ % 9 + 1}, source));
      CopyOptions options;
      options.min_packed_alignment_bytes = alignment;
      CopyHandle h = start_copy(list, target, options);
      const c10::IValue out = h.get();
      expect_structure_copy(out, list, target);
      EXPECT_EQ(h.stats().packed, static_cast<int64_t>(list.size()));
      EXPECT_EQ(h.stats().chunks, 1);
      for (const at::Tensor& t : tensors_of(out)) {
        const auto a = static_cast<uintptr_t>(std::max<int64_t>(alignment, t.element_size()));
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % a, 0u)
            << c10::toString(t.scalar_type()) << " at " << t.data_ptr();
      }
    }
  }
}

// CopyOptions requires only min_packed_alignment_bytes >= 1. An alignment that is not a power of
// two must either be rejected by start_copy or give correct, element-aligned outputs.
TEST_F(GpuTest, NonPowerOfTwoAlignmentIsRejectedOrCorrect) {
  for (const int64_t alignment : {3, 12, 24, 100}) {
    for (const c10::Device& source : {kCpu, kCuda0}) {
      const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
      SCOPED_TRACE(::testing::Message() << source << " -> " << target << ", alignment " << alignment);
      c10::impl::GenericList list(c10::AnyType::get());
      list.push_back(random_tensor(at::kByte, {1}, source));
      list.push_back(random_tensor(at::kComplexDouble, {2}, source));
      list.push_back(random_tensor(at::kDouble, {3}, source));
      list.push_back(random_tensor(at::kFloat, {5}, source));
      list.push_back(random_tensor(at::kHalf, {3}, source));
      list.push_back(random_tensor(at::kDouble, {1}, source));
      list.push_back(random_tensor(at::kComplexDouble, {1}, source));
      CopyOptions options;
      options.min_packed_alignment_bytes = alignment;
      CopyHandle h;
      try {
        h = start_copy(list, target, options);
      } catch (const c10::Error&) {
        continue;  // rejected up front: acceptable
      }
      const c10::IValue out = h.get();
      expect_structure_copy(out, list, target);
      for (const at::Tensor& t : tensors_of(out))
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % static_cast<uintptr_t>(t.element_size()), 0u)
            << c10::toString(t.scalar_type()) << " output not aligned to its element size";
    }
  }
}

TEST_F(GpuTest, NonContiguousInputsKeepShapeAndValues) {
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    SCOPED_TRACE(source.str() + " -> " + target.str());
    c10::impl::GenericDict d(c10::StringType::get(), c10::TensorType::get());
    const at::Tensor base = random_tensor(at::kFloat, {300, 500}, source);
    d.insert(std::string("transposed"), base.t());
    d.insert(std::string("transposed_small"), random_tensor(at::kDouble, {3, 4}, source).t());
    d.insert(std::string("permuted_4d"), random_tensor(at::kHalf, {2, 3, 4, 5}, source).permute({0, 2, 3, 1}));
    d.insert(std::string("rows_step_2"), base.slice(0, 0, 300, 2));
    d.insert(std::string("cols_step_3_small"), random_tensor(at::kInt, {4, 9}, source).slice(1, 0, 9, 3));
    d.insert(std::string("column"), base.select(1, 7));
    d.insert(std::string("expanded"), random_tensor(at::kLong, {1, 5}, source).expand({1000, 5}));
    d.insert(std::string("narrowed"), base.narrow(0, 100, 3));  // contiguous, storage offset
    d.insert(std::string("complex_transposed"), random_tensor(at::kComplexFloat, {6, 2}, source).t());
    CopyHandle h = start_copy(d, target);
    const c10::IValue out = h.get();
    expect_structure_copy(out, d, target);
    const auto od = out.toGenericDict();
    EXPECT_EQ(od.at(std::string("transposed")).toTensor().strides(), base.t().strides());
    EXPECT_TRUE(od.at(std::string("rows_step_2")).toTensor().is_contiguous());
    EXPECT_TRUE(od.at(std::string("expanded")).toTensor().is_contiguous());
    const CopyStats s = h.stats();
    EXPECT_EQ(s.packed, 1) << "only the contiguous narrow view is small and contiguous";
    EXPECT_EQ(s.per_tensor, 8);
  }
}

// A lazily conjugated complex tensor has the conj bit set over unconjugated memory (and
// x.conj().imag the neg bit): its copy must mean the same values (as Tensor::to does), whether
// it is packed, copied as one dense span, or made contiguous first (which resolves the bits).
// (Finite values: resolving the bits negates, and CPU and GPU may negate NaN payloads differently.)
c10::impl::GenericList math_bit_views(const c10::Device& device) {
  auto randn = [&device](std::vector<int64_t> sizes, at::ScalarType dtype) {
    return to_device(at::randn(sizes, dtype), device);
  };
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(randn({8}, at::kComplexFloat).conj());                          // packed
  list.push_back(randn({(1 * kMiB) / 16}, at::kComplexDouble).conj());           // dense span
  list.push_back(randn({8, 3}, at::kComplexFloat).t().conj());                   // dense, permuted
  list.push_back(randn({64, 64}, at::kComplexFloat).slice(1, 0, 64, 2).conj());  // non-dense
  list.push_back(at::imag(randn({300, 10}, at::kComplexFloat).conj()));          // neg bit, non-dense
  list.push_back(at::imag(randn({5}, at::kComplexDouble).conj()));               // neg bit, non-dense, small
  list.push_back(at::_neg_view(randn({33}, at::kFloat)));                        // neg bit, packed
  return list;
}

TEST_F(GpuTest, ConjugateAndNegativeViewsCopyTheirValues) {
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    SCOPED_TRACE(source.str() + " -> " + target.str());
    const c10::impl::GenericList list = math_bit_views(source);
    ASSERT_TRUE(list.get(0).toTensor().is_conj());
    ASSERT_TRUE(list.get(3).toTensor().is_conj());
    ASSERT_TRUE(list.get(4).toTensor().is_neg());
    const auto out = start_copy(list, target).get().toList();
    for (size_t i = 0; i < list.size(); ++i) {
      const at::Tensor o = out.get(i).toTensor();
      const at::Tensor in = list.get(i).toTensor();
      EXPECT_TRUE(bytes_of(o) == bytes_of(in))
          << "leaf " << i << " (input conj " << in.is_conj() << ", neg " << in.is_neg() << ", output conj "
          << o.is_conj() << ", neg " << o.is_neg() << "): the values differ";
    }
  }
}

TEST_F(GpuTest, PinnedHostInputs) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(random_tensor(at::kFloat, {100}).pin_memory());
  list.push_back(random_tensor(at::kFloat, {3 * kMiB}).pin_memory());
  list.push_back(random_tensor(at::kByte, {513 * kKiB}).pin_memory().slice(0, 0, 513 * kKiB, 2));
  list.push_back(random_tensor(at::kInt, {10}));
  ASSERT_TRUE(list.get(1).toTensor().is_pinned());
  for (const bool pinned_staging : {true, false}) {
    CopyOptions options;
    options.use_pinned_staging = pinned_staging;
    CopyHandle h = start_copy(list, kCuda0, options);
    expect_structure_copy(h.get(), list, kCuda0);
    EXPECT_EQ(h.stats().packed, 2);
    EXPECT_EQ(h.stats().per_tensor, 2);
  }
}

// ---------------------------------------------------------------------------------------------
// Reuse

TEST_F(GpuTest, TensorsAlreadyOnTheTargetAreReused) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(random_tensor(at::kFloat, {10}, kCuda0));
  list.push_back(random_tensor(at::kFloat, {10}));
  list.push_back(random_tensor(at::kLong, {1000, 1000}, kCuda0));
  list.push_back(random_tensor(at::kHalf, {8, 3}, kCuda0).t());
  list.push_back(random_tensor(at::kInt, {3}));
  list.push_back(at::Tensor());
  {
    CopyHandle h = start_copy(list, kCuda0);
    expect_structure_copy(h.get(), list, kCuda0);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.tensors, 6);
    EXPECT_EQ(s.reused, 4);  // three on cuda:0 and the undefined one
    EXPECT_EQ(s.packed, 2);
    EXPECT_EQ(s.per_tensor, 0);
  }
  {
    // Index-less target: the current device, so cuda:0 tensors are still reused.
    CopyHandle h = start_copy(list, c10::Device(c10::kCUDA));
    const auto out = h.get().toList();
    EXPECT_TRUE(out.get(0).toTensor().is_same(list.get(0).toTensor()));
    EXPECT_EQ(out.get(1).toTensor().device(), kCuda0);
  }
  {
    // To the CPU the CPU tensors are the ones reused.
    CopyHandle h = start_copy(list, kCpu);
    expect_structure_copy(h.get(), list, kCpu);
    EXPECT_EQ(h.stats().reused, 3);
  }
  {
    // Everything already there: nothing to do, the same tensors in new containers.
    c10::impl::GenericList on_gpu(c10::AnyType::get());
    on_gpu.push_back(list.get(0));
    on_gpu.push_back(list.get(2));
    CopyHandle h = start_copy(on_gpu, kCuda0);
    expect_structure_copy(h.get(), on_gpu, kCuda0);
    EXPECT_EQ(h.stats().reused, 2);
    EXPECT_EQ(h.stats().pinned_bytes, 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Options

enum class Direction { kHostToDevice, kDeviceToHost };

class OptionCombinations
    : public GpuTest,
      public ::testing::WithParamInterface<std::tuple<bool, bool, bool, Direction>> {};

TEST_P(OptionCombinations, CopiesTheMixedBatch) {
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

    const int64_t slab_allocations = PinnedPool::instance().stats().slab_allocations;
    if (round == 1) {
      slab_allocations_after_second = slab_allocations;
    } else if (round > 1) {
      EXPECT_EQ(slab_allocations, slab_allocations_after_second)
          << "the pinned pool grew on a repeated identical copy";
    }
  }
}

std::string option_combination_name(const ::testing::TestParamInfo<OptionCombinations::ParamType>& param_info) {
  const auto& [pinned, pack, background, direction] = param_info.param;
  return std::string(direction == Direction::kHostToDevice ? "H2D" : "D2H") +
         (pinned ? "_pinned" : "_pageable") + (pack ? "_packed" : "_unpacked") +
         (background ? "_background" : "_inline");
}

INSTANTIATE_TEST_SUITE_P(AllOptions, OptionCombinations,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(Direction::kHostToDevice,
                                                              Direction::kDeviceToHost)),
                         option_combination_name);

// Staging of a large pageable tensor goes through pinned slots taken from the pool; the stats
// say pinned_bytes is "staging bytes taken from the pinned pool".
// A structure whose first root element suggests many leaves is walked by several threads, each
// taking root elements in turn and packing into a chunk of its own. Packed, deferred (non-contiguous, over
// 256 KiB, zero-size) and reused leaves, nested and directly under the root, of every root kind,
// must all land where they belong.
TEST_F(GpuTest, LargeStructuresAreWalkedInParts) {
  constexpr int kElements = 64;
  auto element = [](int i) -> c10::IValue {
    if (i % 7 == 3) {
      // Tensors directly under the root: packed, and deferred.
      return i % 2 ? random_tensor(at::kFloat, {5, 3}).t() : random_tensor(at::kInt, {i + 1});
    }
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    int k = 0;
    for (int round = 0; round < 2; ++round) {
      for (const at::ScalarType dtype : all_dtypes()) {
        ++k;
        d.insert(std::to_string(k) += "t", random_tensor(dtype, {(i + k) % 9 + 1}));
      }
    }
    d.insert(std::string("strided"), random_tensor(at::kLong, {12}).slice(0, 0, 12, 3));
    d.insert(std::string("empty"), at::empty({0, 4}));
    if (i % 16 == 0) d.insert(std::string("over_256KiB"), random_tensor(at::kFloat, {70 * 1024}));
    d.insert(std::string("on_gpu"), random_tensor(at::kHalf, {3}, kCuda0));
    d.insert(std::string("label"), std::to_string(i) += " label");
    return d;
  };
  std::vector<c10::IValue> elements;
  for (int i = 0; i < kElements; ++i) elements.push_back(element(i));
  std::vector<c10::IValue> roots;
  {
    c10::impl::GenericList l(c10::AnyType::get());
    for (const auto& e : elements) l.push_back(e);
    roots.push_back(l);
  }
  roots.push_back(c10::ivalue::Tuple::create(elements));
  {
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    for (size_t i = 0; i < elements.size(); ++i) d.insert(std::to_string(elements.size() - i) += "k", elements[i]);
    roots.push_back(d);
  }
  const bool parallel = mtc::detail::WorkerPool::instance().size() > 0;
  int64_t most_threads = 0;
  for (const c10::IValue& root : roots) {
    const std::vector<at::Tensor> leaves = tensors_of(root);
    ASSERT_GE(leaves.size(), 1024u);
    for (const bool background : {true, false}) {
      SCOPED_TRACE(::testing::Message() << root.tagKind() << ", background " << background);
      CopyOptions options;
      options.use_background_thread = background;
      CopyHandle h = start_copy(root, kCuda0, options);
      expect_structure_copy(h.get(), root, kCuda0);
      const CopyStats s = h.stats();
      EXPECT_EQ(s.tensors, static_cast<int64_t>(leaves.size()));
      EXPECT_EQ(s.bytes, total_bytes(leaves));
      EXPECT_EQ(s.reused, expected_reused(leaves, kCuda0));
      EXPECT_EQ(s.packed, expected_packed(leaves, kCuda0, options));
      EXPECT_EQ(s.packed + s.per_tensor + s.reused, s.tensors);
      // Each thread that walked part of it has a chunk of its own, unless it walked only
      // leaves that are not packed.
      EXPECT_GE(s.walk_threads, 1);
      EXPECT_LE(s.chunks, s.walk_threads);
      most_threads = std::max(most_threads, s.walk_threads);
    }
  }
  // Helpers join as they wake up: not every copy is split, but over six copies of over 1,024
  // leaves some are.
  if (parallel) {
    EXPECT_GE(most_threads, 2) << "the walk was never split";
  }
}

// A leaf that cannot be copied, late in a structure walked in parts: other parts may already
// have queued their chunks' DMAs. get() names the leaf, and the staging comes back to the pool
// (the fixture checks) only after that device work is done.
TEST_F(GpuTest, LeafErrorInAWalkSplitInPartsReleasesEverything) {
  c10::impl::GenericList root =
      mtc::test::list_of_lists(40, 20, [](int k) { return random_tensor(at::kFloat, {k + 1}); });
  c10::impl::GenericList bad = root.get(37).toList();
  bad.set(2, at::empty({3}, at::TensorOptions().device(c10::kMeta)));
  for (const bool background : {true, false}) {
    CopyOptions options;
    options.use_background_thread = background;
    CopyHandle h = start_copy(root, kCuda0, options);
    try {
      h.get();
      ADD_FAILURE() << "no exception";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("tensor leaf 2 of root element 37"), std::string::npos) << e.what();
    }
  }
}

// Outputs are created on other threads; under the caller's InferenceMode they must still be
// inference tensors (as .to() gives there), and normal tensors outside it, in both directions
// and in a walk split in parts.
TEST_F(GpuTest, OutputsFollowTheCallersInferenceMode) {
  const c10::impl::GenericList big =
      mtc::test::list_of_lists(40, 20, [](int k) { return random_tensor(at::kFloat, {k + 1}); });
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    const c10::IValue small = mixed_batch(source);
    const c10::IValue large = source.is_cpu() ? c10::IValue(big) : map_tensors(big, [](const at::Tensor& t) { return to_device(t, kCuda0); });
    for (const c10::IValue* in : {&small, &large}) {
      for (const bool inference : {true, false}) {
        SCOPED_TRACE(::testing::Message() << source << " -> " << target << (in == &small ? ", mixed" : ", large")
                                          << (inference ? ", in InferenceMode" : ""));
        c10::IValue out;
        {
          c10::InferenceMode guard(inference);
          out = start_copy(*in, target).get();
        }
        for (const at::Tensor& t : tensors_of(out)) {
          if (!t.defined() || t.device() != target) continue;
          // Tensors already on the target come back as they are, whatever the mode.
          bool reused = false;
          for (const at::Tensor& i : tensors_of(*in)) reused = reused || i.is_same(t);
          if (!reused) {
            EXPECT_EQ(t.is_inference(), inference);
          }
        }
      }
    }
  }
}

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
    const auto warm = PinnedPool::instance().stats();
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
    const auto after = PinnedPool::instance().stats();
    EXPECT_EQ(after.slab_allocations, warm.slab_allocations);
    EXPECT_EQ(after.reserved_bytes, warm.reserved_bytes);
  }
}

// ---------------------------------------------------------------------------------------------
// Streams and ordering

class StreamOrdering : public GpuTest, public ::testing::WithParamInterface<std::tuple<bool, bool>> {};

// Device -> host on a non-default stream: a kernel queued (behind a long sleep) before
// start_copy writes the inputs; the copy must see the written values.
TEST_P(StreamOrdering, DeviceToHostSeesWorkQueuedBeforeStartCopy) {
  const auto [background, pinned] = GetParam();
  CopyOptions options;
  options.use_background_thread = background;
  options.use_pinned_staging = pinned;
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::zeros({17}, at::TensorOptions().dtype(at::kFloat).device(kCuda0)));
  list.push_back(at::zeros({5, 3}, at::TensorOptions().dtype(at::kLong).device(kCuda0)));
  list.push_back(at::zeros({3 * kMiB}, at::TensorOptions().dtype(at::kFloat).device(kCuda0)));
  const auto doubles = at::TensorOptions().dtype(at::kDouble).device(kCuda0);
  list.push_back(at::zeros({400, 300}, doubles).slice(0, 0, 400, 2));  // non-dense: made contiguous on the stream
  list.push_back(at::zeros({100, 50}, doubles).t());                  // dense, not contiguous
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
    EXPECT_TRUE(bytes_of(o) == bytes_of(expected)) << "leaf " << i << " copied before it was written";
  }
}

// Host -> device on a non-default stream: the copy is queued behind work already on the
// current stream (get() returns only once that stream reached the copy), and a consumer queued
// on the current stream after get() sees the copied data.
TEST_P(StreamOrdering, HostToDeviceRunsOnTheCurrentStream) {
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

std::string stream_ordering_name(const ::testing::TestParamInfo<StreamOrdering::ParamType>& param_info) {
  return std::string(std::get<0>(param_info.param) ? "background" : "inline") +
         (std::get<1>(param_info.param) ? "_pinned" : "_pageable");
}

INSTANTIATE_TEST_SUITE_P(BackgroundAndStaging, StreamOrdering,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()), stream_ordering_name);

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

class HandleLifetime : public GpuTest, public ::testing::WithParamInterface<bool> {};

// Dropping a handle while its device work is still queued must wait for it (no staging buffer
// is released while a DMA reads it), leave nothing held, and leave the engine usable.
TEST_P(HandleLifetime, DestroyingAHandleMidCopy) {
  CopyOptions options;
  options.use_background_thread = GetParam();
  const at::Tensor big = at::arange(64 * kMiB, at::kFloat);  // 256 MiB, pageable
  c10::impl::GenericList many(c10::AnyType::get());
  for (int i = 0; i < 64; ++i) many.push_back(at::full({kMiB}, static_cast<float>(i)));  // 64 x 4 MiB
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

INSTANTIATE_TEST_SUITE_P(BackgroundOnOff, HandleLifetime, ::testing::Bool(), background_name);

// ---------------------------------------------------------------------------------------------
// Errors

class ErrorPropagation : public GpuTest, public ::testing::WithParamInterface<bool> {};

// A dense CPU tensor that claims 4 TiB over a 16-byte buffer: its device allocation fails
// (out of memory) inside the copy, before anything reads it. The failure must come out of
// get() and ready(), with staging queued before it released, and the engine usable afterwards.
TEST_P(ErrorPropagation, DeviceOutOfMemorySurfacesThroughGet) {
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

INSTANTIATE_TEST_SUITE_P(BackgroundOnOff, ErrorPropagation, ::testing::Bool(), background_name);

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

// ---------------------------------------------------------------------------------------------
// Several GPUs

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
    EXPECT_TRUE(bytes_of(out.get(i).toTensor()) == bytes_of(list.get(i).toTensor())) << "leaf " << i;
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
  for (size_t i = 0; i < list.size(); ++i) list.get(i).toTensor().fill_(static_cast<int64_t>(i + 5));
  const c10::cuda::CUDAStreamGuard g0(s0);  // cuda:0 current, its current stream s0
  at::cuda::sleep(kSleepCycles / 4);        // the target's stream is busy too
  CopyHandle h = start_copy(list, kCuda0);
  const auto out = h.get().toList();
  for (size_t i = 0; i < list.size(); ++i) {
    at::Tensor o = out.get(i).toTensor();
    ASSERT_EQ(o.device(), kCuda0);
    o.add_(1);  // consumer on cuda:0's current stream
    const at::Tensor expected = at::full(o.sizes(), static_cast<int64_t>(i + 6), o.options().device(kCpu));
    EXPECT_TRUE(bytes_of(o) == bytes_of(expected)) << "leaf " << i;
  }
}

}  // namespace
