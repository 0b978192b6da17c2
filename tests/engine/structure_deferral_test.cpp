// The structure walk's deferred leaves: the policy learns where each output goes once the leaf's
// container is complete, whatever moves inside a container while it is built.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "detail/structure.h"
#include "structure_test_support.h"

namespace mtc::detail {
namespace {

using structure_test::all_leaves;
using structure_test::every_kind;
using structure_test::every_other;
using structure_test::expect_copied;
using structure_test::RecordingPolicy;
using structure_test::tensor_of;

TEST(StructureDeferral, DeferredBareTensorAtTheRoot) {
  RecordingPolicy policy(all_leaves);
  c10::IValue out;
  StructureCopier<RecordingPolicy>(policy).copy(tensor_of(1), out);
  ASSERT_EQ(policy.placed.size(), 1u);
  EXPECT_EQ(policy.placed[0].first, RecordingPolicy::id_of(0));
  EXPECT_EQ(policy.placed[0].second, &out) << "a deferred root goes in the result itself";
  EXPECT_TRUE(out.isNone());
  policy.fill();
  ASSERT_TRUE(out.isTensor());
  EXPECT_TRUE(out.toTensor().is_same(policy.outputs[0]));
}

TEST(StructureDeferral, DeferredLeavesLandWhereTheyBelong) {
  const std::vector<std::pair<const char*, std::function<bool(size_t)>>> choices{
      {"every other", every_other},
      {"all", all_leaves},
      {"first and last", [](size_t leaf) { return leaf == 0 || leaf == 6; }},
      {"none", [](size_t) { return false; }}};
  for (const auto& [name, defer] : choices) {
    SCOPED_TRACE(name);
    RecordingPolicy policy(defer);
    expect_copied(every_kind(), policy);
    size_t expected = 0;
    for (size_t leaf = 0; leaf < 7; ++leaf) expected += defer(leaf) ? 1 : 0;
    EXPECT_EQ(policy.deferred.size(), expected);
  }
}

// Entries move inside a dict's table while keys are inserted (robin-hood hashing): a slot taken
// before the dict is complete would point at the wrong entry, or at freed memory.
TEST(StructureDeferral, DeferredValuesOfLargeDicts) {
  constexpr int kKeys = 200;
  c10::impl::GenericDict by_name(c10::StringType::get(), c10::AnyType::get());
  c10::impl::GenericDict by_int(c10::IntType::get(), c10::TensorType::get());
  for (int i = 0; i < kKeys; ++i) {
    // Keys in no hash order, values of every kind among the strings' ones.
    by_name.insert("key" + std::to_string((i * 7919) % 1009),
                   i % 5 == 4 ? c10::IValue(int64_t{i}) : c10::IValue(tensor_of(i)));
    by_int.insert(int64_t{(i * 104729) % 100003} - 50000, tensor_of(i));
  }
  c10::impl::GenericList both(c10::AnyType::get());
  both.push_back(by_name);
  both.push_back(by_int);
  for (const auto& defer :
       {std::function<bool(size_t)>(every_other), std::function<bool(size_t)>(all_leaves)}) {
    for (const c10::IValue& in : {c10::IValue(by_name), c10::IValue(by_int), c10::IValue(both)}) {
      SCOPED_TRACE(in.tagKind());
      RecordingPolicy policy(defer);
      expect_copied(in, policy);
      EXPECT_FALSE(policy.deferred.empty());
    }
  }
}

TEST(StructureDeferral, DeferredLeavesOfLargeListsAndTuples) {
  c10::impl::GenericList list(c10::AnyType::get());
  std::vector<c10::IValue> elements;
  c10::List<at::Tensor> typed;
  for (int i = 0; i < 300; ++i) {
    list.push_back(i % 3 == 0 ? c10::IValue(std::to_string(i)) : c10::IValue(tensor_of(i)));
    elements.push_back(tensor_of(i));
    typed.push_back(tensor_of(i));
  }
  for (const c10::IValue& in :
       {c10::IValue(list), c10::IValue(c10::ivalue::Tuple::create(elements)), c10::IValue(typed)}) {
    SCOPED_TRACE(in.tagKind());
    RecordingPolicy policy(every_other);
    expect_copied(in, policy);
  }
}

TEST(StructureDeferral, SlotsComeInPostOrderOfContainers) {
  // [T0, [T1, (T2, T3)], T4, {"a": T5}]: a container's deferred leaves are placed once it is
  // complete, so inner containers' come first.
  c10::impl::GenericList inner(c10::AnyType::get());
  inner.push_back(tensor_of(1));
  inner.push_back(
      c10::ivalue::Tuple::create({c10::IValue(tensor_of(2)), c10::IValue(tensor_of(3))}));
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  dict.insert(std::string("a"), tensor_of(5));
  c10::impl::GenericList root(c10::AnyType::get());
  root.push_back(tensor_of(0));
  root.push_back(inner);
  root.push_back(tensor_of(4));
  root.push_back(dict);
  RecordingPolicy policy(all_leaves);
  expect_copied(root, policy);
  std::vector<size_t> order;
  for (const auto& [id, slot] : policy.placed) order.push_back(RecordingPolicy::leaf_of(id));
  EXPECT_EQ(order, (std::vector<size_t>{2, 3, 1, 5, 0, 4}));
}

}  // namespace
}  // namespace mtc::detail
