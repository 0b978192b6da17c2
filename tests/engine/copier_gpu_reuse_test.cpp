// Outputs of earlier copies offered to a new copy (mtc::ReusableOutputs): the packed CPU->GPU
// outputs are made in the offered TensorImpls that qualify, and every other one is left as it
// was. Every test skips (with the reason shown) without a CUDA device.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::ReusableOutputs;
using mtc::test::bytes_of;
using mtc::test::GpuTest;
using mtc::test::kCuda0;
using mtc::test::list_of_lists;
using mtc::test::random_tensor;
using mtc::test::tensors_of;

// A list of `elements` lists of `per_element` small tensors of varied dtypes and sizes; `grow`
// adds to every size, so two calls give the same structure with other sizes.
c10::impl::GenericList batch(int elements, int per_element, int64_t grow = 0) {
  return list_of_lists(elements, per_element, [grow](int k) {
    const at::ScalarType dtypes[] = {at::kFloat, at::kInt, at::kHalf, at::kBool, at::kLong};
    return random_tensor(dtypes[k % 5], {k % 7 + 1 + grow, 3});
  });
}

// The pre-order index of each root element's first tensor leaf.
std::vector<int64_t> first_leaves(const c10::impl::GenericList& root) {
  std::vector<int64_t> firsts;
  int64_t leaves = 0;
  for (size_t i = 0; i < root.size(); ++i) {
    firsts.push_back(leaves);
    leaves += static_cast<int64_t>(tensors_of(root.get(i)).size());
  }
  return firsts;
}

// The outputs of a copy of `input`, held only here (the result structure is dropped).
std::vector<at::Tensor> outputs_of(const c10::IValue& input) {
  return tensors_of(mtc::start_copy(input, kCuda0).get());
}

// Offers `outputs` leaf by leaf for a copy of `input` and runs it; returns its result.
c10::IValue copy_offering(const c10::impl::GenericList& input,
                          const std::vector<at::Tensor>& outputs,
                          std::shared_ptr<ReusableOutputs>& reuse,
                          mtc::CopyStats* stats = nullptr) {
  reuse = std::make_shared<ReusableOutputs>();
  for (const at::Tensor& t : outputs) reuse->by_leaf.push_back(t.unsafeGetTensorImpl());
  reuse->element_first_leaf = first_leaves(input);
  mtc::CopyHandle handle = mtc::start_copy(input, kCuda0, {}, reuse);
  c10::IValue result = handle.get();
  if (stats != nullptr) *stats = handle.stats();
  return result;
}

// Each leaf of `input` came out either in the offered TensorImpl (undefined in the result) or as
// a new tensor of its own, with the input's values, sizes and version 0 either way.
void expect_outputs(const c10::IValue& result, const c10::IValue& input,
                    const std::vector<at::Tensor>& offered, const ReusableOutputs& reuse) {
  const std::vector<at::Tensor> outs = tensors_of(result);
  const std::vector<at::Tensor> ins = tensors_of(input);
  ASSERT_EQ(outs.size(), ins.size());
  ASSERT_EQ(reuse.reused.size(), offered.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    const bool reused = i < reuse.reused.size() && reuse.reused[i] != 0;
    ASSERT_EQ(outs[i].defined(), !reused) << "leaf " << i;
    const at::Tensor& out = reused ? offered[i] : outs[i];
    EXPECT_EQ(out.device(), kCuda0) << "leaf " << i;
    EXPECT_EQ(out.dtype(), ins[i].dtype()) << "leaf " << i;
    EXPECT_EQ(out.sizes(), ins[i].sizes()) << "leaf " << i;
    EXPECT_EQ(out._version(), 0) << "leaf " << i;
    EXPECT_EQ(bytes_of(out), bytes_of(ins[i])) << "leaf " << i;
  }
}

int64_t count_reused(const ReusableOutputs& reuse) {
  int64_t n = 0;
  for (const uint8_t r : reuse.reused) n += r;
  return n;
}

// Split in parts (512 leaves) and not (24): the leaves are matched across root elements either
// way; the second copy has other values and other sizes than the first.
TEST_F(GpuTest, PackedOutputsAreMadeInOfferedOutputs) {
  for (const auto& [elements, per_element] : {std::pair{16, 32}, std::pair{4, 6}}) {
    std::vector<at::Tensor> offered = outputs_of(batch(elements, per_element));
    const c10::impl::GenericList input = batch(elements, per_element, /*grow=*/2);
    std::shared_ptr<ReusableOutputs> reuse;
    mtc::CopyStats stats;
    const c10::IValue result = copy_offering(input, offered, reuse, &stats);
    expect_outputs(result, input, offered, *reuse);
    EXPECT_EQ(count_reused(*reuse), elements * per_element);
    EXPECT_EQ(stats.recycled, elements * per_element);
    EXPECT_EQ(stats.packed, elements * per_element);
    // Reused again, from the outputs that were reused once.
    const c10::impl::GenericList again = batch(elements, per_element);
    const c10::IValue result2 = copy_offering(again, offered, reuse);
    expect_outputs(result2, again, offered, *reuse);
    EXPECT_EQ(count_reused(*reuse), elements * per_element);
  }
}

// The storage a reused output leaves lives until the copy's handle is dropped, on the thread that
// drops it: never freed on a worker, whatever memory a program may have given it.
TEST_F(GpuTest, StoragesLeftByReusedOutputsDieWithTheHandle) {
  std::vector<at::Tensor> offered = outputs_of(batch(16, 32));
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> old;
  for (const at::Tensor& t : offered)
    old.emplace_back(
        c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(t.storage().unsafeGetStorageImpl()));
  const c10::impl::GenericList input = batch(16, 32);
  auto reuse = std::make_shared<ReusableOutputs>();
  for (const at::Tensor& t : offered) reuse->by_leaf.push_back(t.unsafeGetTensorImpl());
  reuse->element_first_leaf = first_leaves(input);
  auto handle = std::make_unique<mtc::CopyHandle>(mtc::start_copy(input, kCuda0, {}, reuse));
  handle->get();
  ASSERT_EQ(count_reused(*reuse), 16 * 32);
  for (const auto& storage : old) EXPECT_FALSE(storage.expired());
  handle.reset();
  for (const auto& storage : old) EXPECT_TRUE(storage.expired());
}

// Offered TensorImpls that must not change (another reference, a view alive, autograd, another
// dtype or device, not the engine's own output) are left as they were, data included, and their
// leaves get new outputs.
TEST_F(GpuTest, OfferedOutputsThatDoNotQualifyAreLeftAlone) {
  const c10::impl::GenericList first = batch(2, 8);
  std::vector<at::Tensor> offered = outputs_of(first);
  const std::vector<at::Tensor> originals = tensors_of(first);
  at::Tensor held = offered[0];                           // a second reference
  at::Tensor view = offered[1].view({-1});                // shares the version counter
  offered[2].set_requires_grad(true);                     // autograd metadata
  offered[3] = random_tensor(at::kBool, {4, 3}, kCuda0);  // not an output of the engine
  offered[4] = at::empty({1}, at::kLong);                 // on the CPU
  // Another dtype than its leaf's: leaf 5 is kFloat in the batch, leaf 6 kInt.
  std::swap(offered[5], offered[6]);
  const std::vector<uint8_t> before3 = bytes_of(offered[3]);
  const c10::impl::GenericList input = batch(2, 8);
  std::shared_ptr<ReusableOutputs> reuse;
  const c10::IValue result = copy_offering(input, offered, reuse);
  expect_outputs(result, input, offered, *reuse);
  for (size_t i = 0; i <= 6; ++i) EXPECT_EQ(reuse->reused[i], 0) << "leaf " << i;
  EXPECT_EQ(count_reused(*reuse), 16 - 7);
  EXPECT_EQ(bytes_of(offered[0]), bytes_of(originals[0]));
  EXPECT_EQ(bytes_of(offered[1]), bytes_of(originals[1]));
  EXPECT_EQ(bytes_of(offered[2]), bytes_of(originals[2]));
  EXPECT_EQ(bytes_of(offered[3]), before3);
  held.reset();
  view.reset();
}

// A copy inside InferenceMode makes inference tensors: it reuses offered inference outputs, and
// no others (their keys differ), as a copy outside it reuses no inference output.
TEST_F(GpuTest, OfferedOutputsMatchTheCallersInferenceMode) {
  for (const bool offered_inference : {false, true}) {
    for (const bool copy_inference : {false, true}) {
      std::vector<at::Tensor> offered;
      {
        const c10::InferenceMode mode(offered_inference);
        offered = outputs_of(batch(2, 4));
      }
      const c10::impl::GenericList input = batch(2, 4);
      std::shared_ptr<ReusableOutputs> reuse;
      const c10::InferenceMode mode(copy_inference);
      const c10::IValue result = copy_offering(input, offered, reuse);
      EXPECT_EQ(count_reused(*reuse), offered_inference == copy_inference ? 8 : 0)
          << "offered inference " << offered_inference << ", copy inference " << copy_inference;
      for (const at::Tensor& t : tensors_of(result)) {
        if (t.defined()) {
          EXPECT_EQ(t.is_inference(), copy_inference);
        }
      }
      for (size_t i = 0; i < offered.size(); ++i) {
        if (reuse->reused[i] != 0) {
          EXPECT_EQ(offered[i].is_inference(), copy_inference);
        }
      }
    }
  }
}

// Offers that do not fit the structure: fewer than its leaves, null entries, no element table
// for a walk in parts (only the first element's leaves can be matched then).
TEST_F(GpuTest, OffersThatDoNotCoverTheStructureLeaveTheRestNew) {
  // Walked whole, then in parts (every element after the first numbers its leaves from its own
  // first, even when no helper joins: whether one did is no sign of it).
  for (const bool split : {false, true}) {
    mtc::set_walk_split(split ? 1 : std::numeric_limits<int64_t>::max(), split ? 1 : 128);
    std::vector<at::Tensor> offered = outputs_of(batch(16, 32));
    const c10::impl::GenericList input = batch(16, 32);
    auto reuse = std::make_shared<ReusableOutputs>();
    for (size_t i = 0; i < 100; ++i)
      reuse->by_leaf.push_back(i % 3 == 0 ? nullptr : offered[i].unsafeGetTensorImpl());
    mtc::CopyHandle handle = mtc::start_copy(input, kCuda0, {}, reuse);
    const c10::IValue result = handle.get();
    offered.resize(100);
    expect_outputs(result, input, offered, *reuse);
    // Element 0 (32 leaves) numbers its leaves from the structure's first, walked before the
    // split is decided or as a part (the second copy of a root this long: copy_job.h); with no
    // table the others cannot be matched in a walk in parts, whichever thread walks them.
    for (size_t i = 0; i < 100; ++i)
      EXPECT_EQ(reuse->reused[i], (i < 32 || !split) && i % 3 != 0 ? 1 : 0)
          << "leaf " << i << (split ? ", in parts" : ", whole");
  }
  mtc::set_walk_split(256, 128);
}

}  // namespace
