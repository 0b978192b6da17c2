// The structure walk (StructureCopier): it builds new containers of the same kinds, types,
// order and keys, hands every tensor leaf to its policy in pre-order, and tells the policy
// where each deferred leaf's output goes once that leaf's container is complete.
#include "detail/structure.h"

#include "structure_compare.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/full.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mtc::detail {
namespace {

using test::expect_same_structure;
using test::tensors_of;

at::Tensor tensor_of(double value) { return at::full({2, 3}, value); }

// Records every call the walk makes and gives every leaf a new tensor (an undefined leaf stays
// undefined), so each output leaf can be told apart from its input. The leaves `defer` picks
// are deferred; fill() then assigns their outputs through the slots place() was given.
class RecordingPolicy {
 public:
  explicit RecordingPolicy(std::function<bool(size_t leaf)> defer = nullptr)
      : defer_(std::move(defer)) {}

  int64_t leaf(const at::Tensor& input, c10::IValue& output) {
    const size_t index = inputs.size();
    inputs.push_back(input);
    outputs.push_back(input.defined() ? tensor_of(1000.0 + static_cast<double>(index))
                                      : at::Tensor());
    if (defer_ && defer_(index)) {
      deferred.push_back(id_of(index));
      return deferred.back();
    }
    output = outputs.back();
    return -1;
  }

  void place(int64_t id, c10::IValue* slot) { placed.emplace_back(id, slot); }

  void fill() const {
    for (const auto& [id, slot] : placed) *slot = outputs.at(leaf_of(id));
  }

  // The ids are the policy's own, not leaf indices: the walk must hand them back unchanged.
  static int64_t id_of(size_t leaf) { return 7 + 3 * static_cast<int64_t>(leaf); }
  static size_t leaf_of(int64_t id) { return static_cast<size_t>((id - 7) / 3); }

  std::vector<at::Tensor> inputs;                        // every leaf() call, in call order
  std::vector<at::Tensor> outputs;                       // by leaf
  std::vector<int64_t> deferred;                         // ids given out, in leaf order
  std::vector<std::pair<int64_t, c10::IValue*>> placed;  // every place() call, in call order

 private:
  std::function<bool(size_t)> defer_;
};

bool every_other(size_t leaf) { return leaf % 2 == 1; }
bool all_leaves(size_t) { return true; }

// Walks `in` with `policy` and fills the deferred outputs, checking the calls on the way:
// leaf() once per tensor leaf, in pre-order; place() once per deferred id and for no other,
// each slot still empty (the walk leaves a deferred output to the policy).
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

// The output of `in` has its structure, with new containers, and every leaf holds the tensor
// the policy made for it, whether given at once or placed afterwards.
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

// A list of every container kind, nested, with passthrough leaves and 7 tensor leaves.
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

// ---------------------------------------------------------------------------------------------
// The new structure

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

c10::IValue nested_lists(int levels, const c10::IValue& innermost) {
  c10::IValue v = innermost;
  for (int i = 0; i < levels; ++i) {
    c10::impl::GenericList l(c10::AnyType::get());
    l.push_back(v);
    v = l;
  }
  return v;
}

TEST(Structure, DeepNestingUpToTheLimit) {
  for (const auto& defer :
       {std::function<bool(size_t)>(), std::function<bool(size_t)>(all_leaves)}) {
    RecordingPolicy policy(defer);
    c10::IValue out = copy_with(nested_lists(kMaxNestingDepth, tensor_of(9)), policy);
    ASSERT_EQ(policy.outputs.size(), 1u);
    for (int i = 0; i < kMaxNestingDepth; ++i) {
      ASSERT_TRUE(out.isList()) << "level " << i;
      ASSERT_EQ(out.toList().size(), 1u);
      out = out.toList().get(0);
    }
    ASSERT_TRUE(out.isTensor());
    EXPECT_TRUE(out.toTensor().is_same(policy.outputs[0]));
  }

  // Mixed container kinds deep down work too.
  c10::IValue mixed = tensor_of(9);
  for (int i = 0; i < 300; ++i) {
    if (i % 3 == 0) {
      mixed = c10::ivalue::Tuple::create({mixed});
    } else if (i % 3 == 1) {
      c10::impl::GenericDict d(c10::IntType::get(), c10::AnyType::get());
      d.insert(int64_t{i}, mixed);
      mixed = d;
    } else {
      mixed = nested_lists(1, mixed);
    }
  }
  RecordingPolicy policy(all_leaves);
  expect_copied(mixed, policy);
  EXPECT_EQ(policy.placed.size(), 1u);
}

// Containers nest kMaxNestingDepth deep here too, whatever the innermost leaf is.
TEST(Structure, PassthroughLeafAtTheNestingLimit) {
  for (const c10::IValue& innermost :
       {c10::IValue(), c10::IValue(int64_t{1}), c10::IValue(std::string("s"))}) {
    SCOPED_TRACE(innermost.tagKind());
    EXPECT_NO_THROW(expect_copied(nested_lists(kMaxNestingDepth, innermost)));
  }
}

// The limit counts values, not containers: an empty container may sit kMaxNestingDepth deep,
// one holding anything may not.
TEST(Structure, EmptyContainerAtTheNestingLimit) {
  EXPECT_NO_THROW(expect_copied(nested_lists(kMaxNestingDepth, c10::impl::GenericList(c10::AnyType::get()))));
  c10::impl::GenericList holding(c10::AnyType::get());
  holding.push_back(int64_t{1});
  RecordingPolicy policy;
  c10::IValue out;
  EXPECT_THROW(StructureCopier<RecordingPolicy>(policy).copy(nested_lists(kMaxNestingDepth, holding), out),
               c10::Error);
}

TEST(Structure, NestingDeeperThanTheLimitThrows) {
  RecordingPolicy policy;
  c10::IValue out;
  EXPECT_THROW(StructureCopier<RecordingPolicy>(policy).copy(
                   nested_lists(kMaxNestingDepth + 1, tensor_of(1)), out),
               c10::Error);
  for (const int levels : {kMaxNestingDepth + 1, 5 * kMaxNestingDepth}) {
    try {
      StructureCopier<RecordingPolicy>(policy).copy(nested_lists(levels, tensor_of(1)), out);
      ADD_FAILURE() << "no exception for " << levels << " levels";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("nested deeper"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(policy.inputs.empty()) << "no leaf below the limit is reached";
  EXPECT_TRUE(out.isNone()) << "a failed walk must leave no partial structure in the result";
}

TEST(Structure, AContainerThatContainsItselfThrows) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(tensor_of(1));
  list.push_back(list);  // the list now holds a reference to itself
  RecordingPolicy policy(all_leaves);
  c10::IValue out;
  EXPECT_THROW(StructureCopier<RecordingPolicy>(policy).copy(list, out), c10::Error);
  list.set(1, c10::IValue());  // break the cycle so the list can be freed
}

TEST(Structure, AnErrorFromThePolicyLeavesNoResult) {
  struct Failing {
    int64_t leaf(const at::Tensor&, c10::IValue& output) {
      TORCH_CHECK(++calls < 3, "policy failure");
      output = tensor_of(0);
      return -1;
    }
    void place(int64_t, c10::IValue*) {}
    int calls = 0;
  } policy;
  c10::IValue out(int64_t{5});
  EXPECT_THROW(StructureCopier<Failing>(policy).copy(every_kind(), out), c10::Error);
  EXPECT_EQ(policy.calls, 3);
  EXPECT_EQ(out.toInt(), 5);
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

// ---------------------------------------------------------------------------------------------
// Deferred leaves

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
