// CopyHandle's take_result() and wait(), the pair a binding uses to wrap the outputs while the
// device works: on the CPU, and host to device where there is a GPU.
#include <ATen/core/List.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include "gpu_test_support.h"
#include "mtc/copier.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::kCpu;
using mtc::test::kCuda0;

c10::impl::GenericList small_batch() {
  c10::impl::GenericList list(c10::AnyType::get());
  for (int i = 0; i < 4; ++i) list.push_back(at::full({i + 1}, i));
  list.push_back(c10::IValue(7));
  return list;
}

void expect_take_then_wait(const c10::Device& target, bool background) {
  const c10::impl::GenericList batch = small_batch();
  CopyOptions options;
  options.use_background_thread = background;
  CopyHandle handle = start_copy(batch, target, options);
  const c10::IValue out = handle.take_result();
  handle.wait();
  EXPECT_TRUE(handle.ready());
  mtc::test::expect_structure_copy(out, batch, target);
  EXPECT_EQ(handle.stats().tensors, 4);
  // The new tensors are the caller's alone: the handle kept no reference to them.
  if (target == kCpu) return;
  for (const c10::IValue& leaf : out.toListRef()) {
    if (leaf.isTensor()) {
      EXPECT_EQ(leaf.toTensor().use_count(), 1);
    }
  }
}

TEST(CopyHandle, TakeResultThenWaitOnTheCpu) {
  for (const bool background : {true, false}) expect_take_then_wait(kCpu, background);
}

TEST(CopyHandle, TheResultCanBeTakenOnceAndNotReadAfterwards) {
  CopyHandle handle = start_copy(small_batch(), kCpu);
  handle.take_result();
  EXPECT_THROW(handle.take_result(), c10::Error);
  EXPECT_THROW(handle.get(), c10::Error);
  EXPECT_NO_THROW(handle.wait());
}

TEST(CopyHandle, EmptyHandleThrows) {
  CopyHandle handle;
  EXPECT_THROW(handle.take_result(), c10::Error);
  EXPECT_THROW(handle.wait(), c10::Error);
}

TEST(CopyHandle, AFailedCopyFailsTakeResultAndWait) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::empty({3}, at::TensorOptions().device(c10::kMeta)));
  CopyHandle handle = start_copy(list, kCpu);
  EXPECT_THROW(handle.take_result(), c10::Error);
  EXPECT_THROW(handle.wait(), c10::Error);
}

class CopyHandleGpu : public mtc::test::GpuTest {};

TEST_F(CopyHandleGpu, TakeResultThenWaitHostToDevice) {
  for (const bool background : {true, false}) expect_take_then_wait(kCuda0, background);
}

}  // namespace
