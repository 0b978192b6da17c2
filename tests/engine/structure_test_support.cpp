#include "structure_test_support.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/ops/full.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "detail/structure.h"
#include "structure_compare.h"

namespace mtc::detail::structure_test {

using mtc::test::expect_same_structure;
using mtc::test::tensors_of;

at::Tensor tensor_of(double value) { return at::full({2, 3}, value); }

bool every_other(size_t leaf) { return leaf % 2 == 1; }
bool all_leaves(size_t) { return true; }

c10::IValue copy_with(const c10::IValue& in, RecordingPolicy& policy) {
  c10::IValue out;
  StructureCopier<RecordingPolicy>(policy).copy(in, out);
  const std::vector<at::Tensor> leaves = tensors_of(in);
  EXPECT_EQ(policy.inputs.size(), leaves.size()) << "leaf() must be called once per tensor leaf";
  for (size_t i = 0; i < leaves.size() && i < policy.inputs.size(); ++i)
    EXPECT_TRUE(policy.inputs[i].is_same(leaves[i])) << "leaf() out of pre-order at leaf " << i;
  std::map<int64_t, int> calls;
  for (const auto& [id, slot] : policy.placed) {
    ++calls[id];
    EXPECT_NE(slot, nullptr);
    if (slot != nullptr) {
      EXPECT_TRUE(slot->isNone()) << "the slot of deferred id " << id
                                  << " is not an empty output (moved, or written)";
    }
  }
  for (const int64_t id : policy.deferred)
    EXPECT_EQ(calls[id], 1) << "place() calls for deferred id " << id;
  EXPECT_EQ(calls.size(), policy.deferred.size()) << "place() was called for a leaf not deferred";
  if (::testing::Test::HasFailure()) return out;
  policy.fill();
  return out;
}

c10::IValue expect_copied(const c10::IValue& in, RecordingPolicy& policy) {
  const c10::IValue out = copy_with(in, policy);
  const size_t leaves = expect_same_structure(
      out, in, [&policy](const at::Tensor& o, const at::Tensor&, size_t leaf) {
        ASSERT_LT(leaf, policy.outputs.size());
        EXPECT_TRUE(o.is_same(policy.outputs[leaf]))
            << "leaf " << leaf << " is not where it belongs";
      });
  EXPECT_EQ(leaves, policy.outputs.size());
  return out;
}

c10::IValue expect_copied(const c10::IValue& in) {
  RecordingPolicy policy;
  return expect_copied(in, policy);
}

c10::IValue every_kind() {
  c10::impl::GenericList inner(c10::AnyType::get());
  inner.push_back(tensor_of(1));
  inner.push_back(c10::IValue());
  c10::impl::GenericDict by_name(c10::StringType::get(), c10::TensorType::get());
  by_name.insert(std::string("b"), tensor_of(3));
  by_name.insert(std::string("a"), tensor_of(4));
  c10::impl::GenericDict by_int(c10::IntType::get(), c10::AnyType::get());
  by_int.insert(int64_t{9},
                c10::ivalue::Tuple::create({c10::IValue(tensor_of(5)), c10::IValue(int64_t{1})}));
  by_int.insert(int64_t{-3}, std::string("label"));
  c10::List<at::Tensor> typed;
  typed.push_back(tensor_of(6));
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(tensor_of(0));
  list.push_back(std::string("s"));
  list.push_back(inner);
  list.push_back(c10::ivalue::Tuple::create({c10::IValue(tensor_of(2)), c10::IValue(2.5)}));
  list.push_back(by_name);
  list.push_back(by_int);
  list.push_back(typed);
  return list;
}

}  // namespace mtc::detail::structure_test
