// The structure walk (StructureCopier): new containers of the same kinds, types, order and keys,
// every tensor leaf handed to the policy in pre-order.
#include "detail/structure.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "structure_test_support.h"

namespace mtc::detail {
namespace {

using structure_test::all_leaves;
using structure_test::every_kind;
using structure_test::every_other;
using structure_test::expect_copied;
using structure_test::RecordingPolicy;
using structure_test::tensor_of;

TEST(Structure, BareTensorAtTheRoot) {
  const at::Tensor t = tensor_of(1);
  RecordingPolicy policy;
  const c10::IValue out = expect_copied(t, policy);
  ASSERT_TRUE(out.isTensor());
  EXPECT_FALSE(out.toTensor().is_same(t));
  EXPECT_TRUE(policy.placed.empty());
}

TEST(Structure, PassthroughLeavesAtTheRoot) {
  const std::vector<c10::IValue> leaves{c10::IValue(std::string("a string")),
                                        c10::IValue(int64_t{-42}),
                                        c10::IValue(2.5),
                                        c10::IValue(true),
                                        c10::IValue(false),
                                        c10::IValue()};
  for (const c10::IValue& v : leaves) {
    SCOPED_TRACE(v.tagKind());
    RecordingPolicy policy(all_leaves);
    expect_copied(v, policy);
    EXPECT_TRUE(policy.inputs.empty());
    EXPECT_TRUE(policy.placed.empty());
  }
  EXPECT_EQ(expect_copied(c10::IValue(std::string("x"))).toStringRef(), "x");
  EXPECT_EQ(expect_copied(c10::IValue(int64_t{7})).toInt(), 7);
  EXPECT_EQ(expect_copied(c10::IValue(0.125)).toDouble(), 0.125);
  EXPECT_TRUE(expect_copied(c10::IValue(true)).toBool());
  EXPECT_TRUE(expect_copied(c10::IValue()).isNone());
}

TEST(Structure, GenericListLeavesInOrder) {
  const c10::IValue in = every_kind();
  RecordingPolicy policy;
  const c10::IValue out = expect_copied(in, policy);
  EXPECT_EQ(policy.inputs.size(), 7u);
  // Spot checks beside the walker's, in the terms of the containers' own API.
  const auto l = out.toList();
  ASSERT_EQ(l.size(), 7u);
  EXPECT_EQ(l.get(1).toStringRef(), "s");
  EXPECT_TRUE(l.get(2).toList().get(1).isNone());
  EXPECT_TRUE(l.get(3).toTupleRef().elements()[0].toTensor().is_same(policy.outputs[2]));
  EXPECT_EQ(l.get(3).toTupleRef().elements()[1].toDouble(), 2.5);
  EXPECT_TRUE(l.get(4).toGenericDict().at(std::string("a")).toTensor().is_same(policy.outputs[4]));
  EXPECT_EQ(*l.elementType(), *c10::AnyType::get());
}

TEST(Structure, TypedTensorListStaysATensorList) {
  c10::List<at::Tensor> list;
  for (int i = 0; i < 5; ++i) list.push_back(tensor_of(i));
  const c10::IValue in(list);
  ASSERT_TRUE(in.isTensorList());
  for (const auto& defer :
       {std::function<bool(size_t)>(), std::function<bool(size_t)>(every_other)}) {
    RecordingPolicy policy(defer);
    const c10::IValue out = expect_copied(in, policy);
    ASSERT_TRUE(out.isTensorList()) << "a typed List[Tensor] must come back typed";
    EXPECT_EQ(out.toTensorList().size(), 5u);
  }
}

TEST(Structure, OtherTypedListsKeepTheirElementType) {
  const c10::IValue out_ints = expect_copied(c10::List<int64_t>({1, 2, 3}));
  ASSERT_TRUE(out_ints.isIntList());
  EXPECT_EQ(out_ints.toIntVector(), (std::vector<int64_t>{1, 2, 3}));

  c10::List<std::optional<at::Tensor>> optionals;
  optionals.push_back(tensor_of(5));
  optionals.push_back(std::nullopt);
  RecordingPolicy policy(all_leaves);
  const c10::IValue out_opt = expect_copied(optionals, policy);
  EXPECT_EQ(policy.inputs.size(), 1u);
  EXPECT_EQ(*out_opt.toList().elementType(), *c10::OptionalType::ofTensor());
}

TEST(Structure, Tuples) {
  const c10::IValue in = c10::ivalue::Tuple::create(
      {c10::IValue(tensor_of(1)), c10::IValue(std::string("k")),
       c10::ivalue::Tuple::create({c10::IValue(tensor_of(2)), c10::IValue(int64_t{4})})});
  RecordingPolicy policy;
  const c10::IValue out = expect_copied(in, policy);
  EXPECT_EQ(policy.inputs.size(), 2u);
  EXPECT_EQ(out.toTupleRef().elements()[1].toStringRef(), "k");
}

TEST(Structure, DictWithStringKeysKeepsOrderAndTypes) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  const std::vector<std::string> keys{"zeta", "alpha", "mid", "beta"};
  dict.insert(keys[0], tensor_of(0));
  dict.insert(keys[1], int64_t{5});
  dict.insert(keys[2], tensor_of(2));
  dict.insert(keys[3], std::string("text"));
  RecordingPolicy policy;
  const auto d = expect_copied(dict, policy).toGenericDict();
  EXPECT_EQ(policy.inputs.size(), 2u);
  EXPECT_EQ(*d.keyType(), *c10::StringType::get());
  EXPECT_EQ(*d.valueType(), *c10::AnyType::get());
  size_t i = 0;
  for (const auto& entry : d)
    EXPECT_EQ(entry.key().toStringRef(), keys[i++]) << "insertion order lost";
  EXPECT_EQ(d.at(std::string("alpha")).toInt(), 5);
  EXPECT_TRUE(d.at(std::string("mid")).toTensor().is_same(policy.outputs[1]));
}

TEST(Structure, DictWithIntKeys) {
  c10::impl::GenericDict dict(c10::IntType::get(), c10::TensorType::get());
  dict.insert(int64_t{30}, tensor_of(0));
  dict.insert(int64_t{-1}, tensor_of(1));
  dict.insert(int64_t{7}, tensor_of(2));
  RecordingPolicy policy;
  const auto d = expect_copied(dict, policy).toGenericDict();
  EXPECT_EQ(*d.keyType(), *c10::IntType::get());
  std::vector<int64_t> order;
  for (const auto& entry : d) order.push_back(entry.key().toInt());
  EXPECT_EQ(order, (std::vector<int64_t>{30, -1, 7}));
  EXPECT_TRUE(d.at(int64_t{-1}).toTensor().is_same(policy.outputs[1]));
}

// The walk reads the input containers' element types in place (types_in_place) or copies them
// through c10's accessors: the outputs are typed as their inputs either way.
TEST(Structure, ElementTypesReadInPlaceOrCopiedAlike) {
  c10::Dict<int64_t, at::Tensor> by_id;
  by_id.insert(3, tensor_of(1));
  c10::List<at::Tensor> tensors({tensor_of(2), tensor_of(3)});
  c10::impl::GenericDict outer(c10::StringType::get(), c10::AnyType::get());
  outer.insert(std::string("by_id"), c10::impl::toGenericDict(by_id));
  outer.insert(std::string("tensors"), tensors);
  for (const bool in_place : {true, false}) {
    SCOPED_TRACE(in_place);
    set_types_in_place(in_place);
    const auto d = expect_copied(outer).toGenericDict();
    EXPECT_EQ(*d.valueType(), *c10::AnyType::get());
    const auto inner = d.at(std::string("by_id")).toGenericDict();
    EXPECT_EQ(*inner.keyType(), *c10::IntType::get());
    EXPECT_EQ(*inner.valueType(), *c10::TensorType::get());
    EXPECT_TRUE(d.at(std::string("tensors")).isTensorList());
  }
  set_types_in_place(true);
}

TEST(Structure, EmptyContainers) {
  const c10::IValue empty_list = c10::impl::GenericList(c10::AnyType::get());
  const c10::IValue empty_tensor_list = c10::List<at::Tensor>();
  const c10::IValue empty_tuple = c10::ivalue::Tuple::create(std::vector<c10::IValue>{});
  const c10::IValue empty_dict =
      c10::impl::GenericDict(c10::StringType::get(), c10::TensorType::get());
  const c10::IValue empty_int_dict =
      c10::impl::GenericDict(c10::IntType::get(), c10::AnyType::get());
  for (const c10::IValue* v :
       {&empty_list, &empty_tensor_list, &empty_tuple, &empty_dict, &empty_int_dict}) {
    SCOPED_TRACE(v->tagKind());
    RecordingPolicy policy(all_leaves);
    expect_copied(*v, policy);
    EXPECT_TRUE(policy.inputs.empty());
  }
  EXPECT_TRUE(expect_copied(empty_tensor_list).isTensorList());

  // Empty containers nested among others.
  c10::impl::GenericList outer(c10::AnyType::get());
  outer.push_back(empty_list);
  outer.push_back(tensor_of(1));
  outer.push_back(empty_dict);
  outer.push_back(empty_tuple);
  RecordingPolicy policy(all_leaves);
  expect_copied(outer, policy);
  EXPECT_EQ(policy.inputs.size(), 1u);
}

TEST(Structure, UndefinedTensorsAreLeaves) {
  // The policy decides what an undefined tensor becomes (the engine's returns it as it is).
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::Tensor());
  list.push_back(tensor_of(1));
  list.push_back(at::Tensor());
  RecordingPolicy policy(every_other);
  const auto out = expect_copied(list, policy).toList();
  ASSERT_EQ(policy.inputs.size(), 3u);
  EXPECT_FALSE(policy.inputs[0].defined());
  EXPECT_FALSE(policy.inputs[2].defined());
  EXPECT_FALSE(out.get(0).toTensor().defined());
  EXPECT_FALSE(out.get(2).toTensor().defined());
}

TEST(Structure, DictKeysAreNotLeaves) {
  // Only values are walked; a key is kept as it is, a tensor key too.
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  c10::impl::GenericList value(c10::AnyType::get());
  value.push_back(tensor_of(1));
  value.push_back(tensor_of(2));
  dict.insert(std::string("list"), value);
  dict.insert(std::string("tensor"), tensor_of(3));
  RecordingPolicy policy;
  expect_copied(dict, policy);
  EXPECT_EQ(policy.inputs.size(), 3u);

  const at::Tensor key = tensor_of(4);
  c10::impl::GenericDict by_tensor(c10::TensorType::get(), c10::TensorType::get());
  by_tensor.insert(key, tensor_of(5));
  RecordingPolicy keyed(all_leaves);
  const auto out = expect_copied(by_tensor, keyed).toGenericDict();
  ASSERT_EQ(keyed.inputs.size(), 1u);
  EXPECT_TRUE(keyed.inputs[0].is_same(by_tensor.at(key).toTensor()));
  EXPECT_TRUE(out.begin()->key().toTensor().is_same(key));
}

TEST(Structure, OutputDoesNotShareContainersWithTheInput) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(tensor_of(1));
  list.push_back(std::string("before"));
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert(std::string("k"), int64_t{1});
  list.push_back(dict);
  const auto out = expect_copied(list).toList();
  // Mutate the input after the copy: the output does not follow.
  list.set(1, std::string("after"));
  list.push_back(int64_t{99});
  dict.insert_or_assign(std::string("k"), int64_t{2});
  dict.insert(std::string("new"), int64_t{3});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.get(1).toStringRef(), "before");
  const auto d = out.get(2).toGenericDict();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.at(std::string("k")).toInt(), 1);
}

TEST(Structure, CopyingTwiceGivesIndependentStructures) {
  const c10::IValue in = every_kind();
  const auto a = expect_copied(in).toList();
  const auto b = expect_copied(in).toList();
  EXPECT_FALSE(c10::IValue(a).is(c10::IValue(b)));
  a.push_back(int64_t{1});
  a.get(2).toList().push_back(int64_t{2});
  EXPECT_EQ(b.size(), 7u);
  EXPECT_EQ(b.get(2).toList().size(), 2u);
}

}  // namespace
}  // namespace mtc::detail
