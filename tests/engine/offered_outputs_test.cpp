// The micro-benchmark's C++ loop that hands its previous result to the next copy
// (src/microbench/offered_outputs.h): every tensor offered for its own leaf, with each root
// element's first leaf, its containers dropped; and the tensors the engine reused put back at
// their leaves, the others left. On the reference batch, without a GPU (no copy runs).
#include "offered_outputs.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/ops/full.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "reference_batch.h"
#include "structure_compare.h"

namespace {

using mtc::microbench::make_reference_batch;
using mtc::microbench::offer_outputs;
using mtc::microbench::place_reused;
using mtc::test::tensors_of;

// Leaves `leaves` of `value` become undefined tensors, as the engine leaves a reused leaf.
void undefine(c10::IValue& value, const std::set<size_t>& leaves, size_t& leaf) {
  if (value.isTensor()) {
    if (leaves.count(leaf++) != 0) value = at::Tensor();
  } else if (value.isList()) {
    c10::impl::GenericList list = value.toList();
    for (size_t i = 0; i < list.size(); ++i) {
      c10::IValue element = list.get(i);
      undefine(element, leaves, leaf);
      list.set(i, element);
    }
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) {
      c10::IValue element = entry.value();
      undefine(element, leaves, leaf);
      entry.setValue(element);
    }
  }
}

TEST(OfferedOutputs, EveryTensorIsOfferedForItsLeafWithEachElementsFirstLeaf) {
  c10::IValue batch = make_reference_batch();
  const std::vector<at::Tensor> before = tensors_of(batch);
  std::vector<int64_t> firsts;
  int64_t leaves = 0;
  const c10::impl::GenericList samples = batch.toList();
  for (size_t i = 0; i < samples.size(); ++i) {
    firsts.push_back(leaves);
    leaves += static_cast<int64_t>(tensors_of(samples.get(i)).size());
  }
  const std::vector<c10::TensorImpl*> impls = [&] {
    std::vector<c10::TensorImpl*> out;
    for (const at::Tensor& t : before) out.push_back(t.unsafeGetTensorImpl());
    return out;
  }();
  mtc::microbench::OfferedOutputs offered = offer_outputs(std::move(batch));
  ASSERT_EQ(offered.tensors.size(), 528u);
  EXPECT_EQ(offered.reuse->by_leaf, impls);
  EXPECT_EQ(offered.reuse->element_first_leaf, firsts);
  // The containers are gone: the offered tensors' only other reference is `before`.
  for (const at::Tensor& t : offered.tensors) EXPECT_EQ(t.use_count(), 2u);
}

TEST(OfferedOutputs, ReusedTensorsGoBackToTheirLeavesAndTheOthersStay) {
  mtc::microbench::OfferedOutputs offered = offer_outputs(make_reference_batch());
  const std::vector<c10::TensorImpl*> offered_impls = offered.reuse->by_leaf;
  c10::IValue result = make_reference_batch();
  const std::vector<at::Tensor> fresh = tensors_of(result);
  const std::set<size_t> reused = {0, 5, 33, 527};
  size_t leaf = 0;
  undefine(result, reused, leaf);
  offered.reuse->reused.assign(offered.tensors.size(), 0);
  for (const size_t r : reused) offered.reuse->reused[r] = 1;

  EXPECT_EQ(place_reused(result, offered), 4);
  const std::vector<at::Tensor> outs = tensors_of(result);
  ASSERT_EQ(outs.size(), 528u);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (reused.count(i) != 0) {
      EXPECT_EQ(outs[i].unsafeGetTensorImpl(), offered_impls[i]) << "leaf " << i;
      EXPECT_FALSE(offered.tensors[i].defined()) << "leaf " << i;
    } else {
      EXPECT_TRUE(outs[i].is_same(fresh[i])) << "leaf " << i;
      EXPECT_TRUE(offered.tensors[i].defined()) << "leaf " << i;
    }
  }
}

// [t0, [t1, t2], {"a": t3}]: tensors directly in lists, beside a dict.
c10::IValue small_result(const std::vector<at::Tensor>& t) {
  c10::impl::GenericList inner(c10::AnyType::get());
  inner.push_back(t[1]);
  inner.push_back(t[2]);
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("a", t[3]);
  c10::impl::GenericList root(c10::AnyType::get());
  root.push_back(t[0]);
  root.push_back(inner);
  root.push_back(dict);
  return root;
}

std::vector<at::Tensor> fresh_tensors(int count) {
  std::vector<at::Tensor> out;
  for (int i = 0; i < count; ++i) out.push_back(at::full({2}, static_cast<double>(i)));
  return out;
}

TEST(OfferedOutputs, TensorsInListsAndATensorRootGoBackToTheirLeaves) {
  const std::vector<at::Tensor> old = fresh_tensors(4);
  mtc::microbench::OfferedOutputs offered = offer_outputs(small_result(old));
  EXPECT_EQ(offered.reuse->element_first_leaf, (std::vector<int64_t>{0, 1, 3}));
  const std::vector<at::Tensor> fresh = fresh_tensors(4);
  c10::IValue result = small_result({at::Tensor(), fresh[1], at::Tensor(), fresh[3]});
  offered.reuse->reused = {1, 0, 1, 0};
  EXPECT_EQ(place_reused(result, offered), 2);
  const std::vector<at::Tensor> outs = tensors_of(result);
  ASSERT_EQ(outs.size(), 4u);
  EXPECT_TRUE(outs[0].is_same(old[0]) && outs[1].is_same(fresh[1]));
  EXPECT_TRUE(outs[2].is_same(old[2]) && outs[3].is_same(fresh[3]));

  mtc::microbench::OfferedOutputs root = offer_outputs(old[0]);
  ASSERT_EQ(root.tensors.size(), 1u);
  EXPECT_TRUE(root.reuse->element_first_leaf.empty());
  c10::IValue out = at::Tensor();
  root.reuse->reused = {1};
  EXPECT_EQ(place_reused(out, root), 1);
  EXPECT_TRUE(out.toTensor().is_same(old[0]));
}

TEST(OfferedOutputs, MisnumberedLeavesAndTuplesAreRefused) {
  const std::vector<at::Tensor> old = fresh_tensors(4);
  mtc::microbench::OfferedOutputs offered = offer_outputs(small_result(old));
  c10::IValue result = small_result(fresh_tensors(4));  // leaf 2 holds a tensor
  offered.reuse->reused = {0, 0, 1, 0};
  EXPECT_THROW(place_reused(result, offered), c10::Error);
  EXPECT_THROW(offer_outputs(c10::ivalue::Tuple::create({old[0]})), c10::Error);
}

TEST(OfferedOutputs, NothingOfferedFromNothing) {
  mtc::microbench::OfferedOutputs offered = offer_outputs(c10::IValue());
  EXPECT_TRUE(offered.tensors.empty());
  EXPECT_TRUE(offered.reuse->by_leaf.empty());
  EXPECT_TRUE(offered.reuse->element_first_leaf.empty());
}

}  // namespace
