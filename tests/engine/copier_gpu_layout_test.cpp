// The copier on a GPU, layouts: packed outputs aligned as promised, strided and math-bit views,
// pinned inputs, leaves already on the target. Skipped (reason shown) without a CUDA device.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::CopyStats;
using mtc::start_copy;
using mtc::test::all_dtypes;
using mtc::test::bytes_of;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kKiB;
using mtc::test::kMiB;
using mtc::test::math_bit_views;
using mtc::test::random_tensor;
using mtc::test::tensors_of;

// ---------------------------------------------------------------------------------------------
// Layouts and alignment

// Alignments beyond a page make the GPU->CPU chunk's host block, asked for unpadded first, come
// again with room to shift (pageable and pinned alike).
TEST_F(GpuTest, PackedOutputsAreAlignedAsPromised) {
  for (const int64_t alignment : {1, 2, 16, 64, 256, 512, 1024, 4096, 65536}) {
    // CPU->GPU, then GPU->CPU with pageable outputs and with pinned ones.
    for (const auto& [source, pinned] :
         {std::pair{kCpu, false}, std::pair{kCuda0, false}, std::pair{kCuda0, true}}) {
      const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
      SCOPED_TRACE(::testing::Message() << source << " -> " << target << ", alignment " << alignment
                                        << (pinned ? ", pinned outputs" : ""));
      c10::impl::GenericList list(c10::AnyType::get());
      int64_t count = 1;
      for (int round = 0; round < 2; ++round)
        for (const at::ScalarType dtype : all_dtypes())
          list.push_back(random_tensor(dtype, {count++ % 9 + 1}, source));
      CopyOptions options;
      options.min_packed_alignment_bytes = alignment;
      options.pinned_host_outputs = pinned;
      CopyHandle h = start_copy(list, target, options);
      const c10::IValue out = h.get();
      expect_structure_copy(out, list, target);
      for (const at::Tensor& t : tensors_of(out)) EXPECT_EQ(t.is_pinned(), pinned);
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
      SCOPED_TRACE(::testing::Message()
                   << source << " -> " << target << ", alignment " << alignment);
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
        EXPECT_EQ(
            reinterpret_cast<uintptr_t>(t.data_ptr()) % static_cast<uintptr_t>(t.element_size()),
            0u)
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
    d.insert(std::string("permuted_4d"),
             random_tensor(at::kHalf, {2, 3, 4, 5}, source).permute({0, 2, 3, 1}));
    d.insert(std::string("rows_step_2"), base.slice(0, 0, 300, 2));
    d.insert(std::string("cols_step_3_small"),
             random_tensor(at::kInt, {4, 9}, source).slice(1, 0, 9, 3));
    d.insert(std::string("column"), base.select(1, 7));
    d.insert(std::string("expanded"), random_tensor(at::kLong, {1, 5}, source).expand({1000, 5}));
    d.insert(std::string("narrowed"), base.narrow(0, 100, 3));  // contiguous, storage offset
    d.insert(std::string("complex_transposed"),
             random_tensor(at::kComplexFloat, {6, 2}, source).t());
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
          << "leaf " << i << " (input conj " << in.is_conj() << ", neg " << in.is_neg()
          << ", output conj " << o.is_conj() << ", neg " << o.is_neg() << "): the values differ";
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

}  // namespace
