// Flattening a nested IValue into tensor leaves plus a skeleton, and rebuilding it.
#include "detail/structure.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/full.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <exception>
#include <optional>
#include <thread>
#include <string>
#include <vector>

namespace mtc::detail {
namespace {

at::Tensor tensor_of(double value) { return at::full({2, 3}, value); }

// New tensors for rebuild, so each output leaf can be told apart from its input.
std::vector<at::Tensor> replacements(size_t n) {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < n; ++i) out.push_back(tensor_of(1000.0 + static_cast<double>(i)));
  return out;
}

c10::IValue round_trip(const c10::IValue& v, std::vector<at::Tensor>* leaves = nullptr) {
  FlatStructure flat = flatten(v);
  if (leaves) *leaves = flat.leaves;
  return rebuild(flat.skeleton, flat.leaves);
}

TEST(Structure, BareTensorAtTheRoot) {
  const at::Tensor t = tensor_of(1);
  const FlatStructure flat = flatten(t);
  ASSERT_EQ(flat.leaves.size(), 1u);
  EXPECT_TRUE(flat.leaves[0].is_same(t));
  ASSERT_EQ(flat.skeleton.nodes.size(), 1u);
  EXPECT_EQ(flat.skeleton.nodes[0].kind, NodeKind::kTensor);
  EXPECT_TRUE(flat.skeleton.root_children.empty()) << "a tensor root has no children";

  const at::Tensor other = tensor_of(2);
  const c10::IValue out = rebuild(flat.skeleton, {other});
  ASSERT_TRUE(out.isTensor());
  EXPECT_TRUE(out.toTensor().is_same(other));
}

TEST(Structure, PassthroughLeavesAtTheRoot) {
  const std::vector<c10::IValue> leaves{c10::IValue(std::string("a string")), c10::IValue(int64_t{-42}),
                                        c10::IValue(2.5), c10::IValue(true), c10::IValue(false),
                                        c10::IValue()};
  for (const c10::IValue& v : leaves) {
    SCOPED_TRACE(v.tagKind());
    const FlatStructure flat = flatten(v);
    EXPECT_TRUE(flat.leaves.empty());
    ASSERT_EQ(flat.skeleton.nodes.size(), 1u);
    EXPECT_EQ(flat.skeleton.nodes[0].kind, NodeKind::kPassthrough);
    EXPECT_TRUE(flat.skeleton.root_children.empty());
    const c10::IValue out = rebuild(flat.skeleton, {});
    EXPECT_EQ(out.tagKind(), v.tagKind());
    EXPECT_TRUE(out == v || (out.isNone() && v.isNone()));
  }
  EXPECT_EQ(round_trip(c10::IValue(std::string("x"))).toStringRef(), "x");
  EXPECT_EQ(round_trip(c10::IValue(int64_t{7})).toInt(), 7);
  EXPECT_EQ(round_trip(c10::IValue(0.125)).toDouble(), 0.125);
  EXPECT_TRUE(round_trip(c10::IValue(true)).toBool());
  EXPECT_TRUE(round_trip(c10::IValue()).isNone());
}

TEST(Structure, GenericListLeavesInOrder) {
  c10::impl::GenericList inner(c10::AnyType::get());
  const at::Tensor t0 = tensor_of(0), t1 = tensor_of(1), t2 = tensor_of(2), t3 = tensor_of(3);
  inner.push_back(t1);
  inner.push_back(c10::IValue());
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(t0);
  list.push_back(std::string("s"));
  list.push_back(int64_t{3});
  list.push_back(inner);
  list.push_back(c10::ivalue::Tuple::create({c10::IValue(t2), c10::IValue(2.5)}));
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  dict.insert(std::string("a"), t3);
  list.push_back(dict);

  const FlatStructure flat = flatten(list);
  ASSERT_EQ(flat.leaves.size(), 4u);
  EXPECT_TRUE(flat.leaves[0].is_same(t0));
  EXPECT_TRUE(flat.leaves[1].is_same(t1));
  EXPECT_TRUE(flat.leaves[2].is_same(t2));
  EXPECT_TRUE(flat.leaves[3].is_same(t3));
  // Pre-order skeleton: list(6), T, "s", 3, list(2), T, None, tuple(2), T, 2.5, dict(1), "a", T.
  const std::vector<NodeKind> kinds{
      NodeKind::kList,  NodeKind::kTensor,      NodeKind::kPassthrough, NodeKind::kPassthrough,
      NodeKind::kList,  NodeKind::kTensor,      NodeKind::kPassthrough, NodeKind::kTuple,
      NodeKind::kTensor, NodeKind::kPassthrough, NodeKind::kDict,       NodeKind::kPassthrough,
      NodeKind::kTensor};
  const std::vector<SkeletonNode>& nodes = flat.skeleton.nodes;
  ASSERT_EQ(nodes.size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(nodes[i].kind, kinds[i]) << "node " << i;
  EXPECT_EQ(nodes[0].size, 6u);
  EXPECT_EQ(nodes[4].size, 2u);
  EXPECT_EQ(nodes[7].size, 2u);
  EXPECT_EQ(nodes[10].size, 1u);
  EXPECT_EQ(flat.skeleton.values.at(nodes[2].aux).toStringRef(), "s");
  EXPECT_EQ(flat.skeleton.values.at(nodes[3].aux).toInt(), 3);
  EXPECT_EQ(flat.skeleton.values.at(nodes[11].aux).toStringRef(), "a");
  // Where each child of the root starts: its first node and the leaves before it.
  const std::vector<ChildStart>& children = flat.skeleton.root_children;
  ASSERT_EQ(children.size(), 6u);
  const uint32_t child_nodes[] = {1, 2, 3, 4, 7, 10};
  const uint32_t child_leaves[] = {0, 1, 1, 1, 2, 3};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(children[i].node, child_nodes[i]) << "child " << i;
    EXPECT_EQ(children[i].leaf, child_leaves[i]) << "child " << i;
  }

  const std::vector<at::Tensor> news = replacements(4);
  const c10::IValue out = rebuild(flat.skeleton, news);
  ASSERT_TRUE(out.isList());
  EXPECT_FALSE(out.is(c10::IValue(list))) << "rebuild must create a new container";
  const auto l = out.toList();
  ASSERT_EQ(l.size(), 6u);
  EXPECT_TRUE(l.get(0).toTensor().is_same(news[0]));
  EXPECT_EQ(l.get(1).toStringRef(), "s");
  EXPECT_EQ(l.get(2).toInt(), 3);
  const auto in2 = l.get(3).toList();
  ASSERT_EQ(in2.size(), 2u);
  EXPECT_TRUE(in2.get(0).toTensor().is_same(news[1]));
  EXPECT_TRUE(in2.get(1).isNone());
  EXPECT_FALSE(l.get(3).is(c10::IValue(inner)));
  ASSERT_TRUE(l.get(4).isTuple());
  const auto& tup = l.get(4).toTupleRef().elements();
  ASSERT_EQ(tup.size(), 2u);
  EXPECT_TRUE(tup[0].toTensor().is_same(news[2]));
  EXPECT_EQ(tup[1].toDouble(), 2.5);
  ASSERT_TRUE(l.get(5).isGenericDict());
  const auto d = l.get(5).toGenericDict();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d.at(std::string("a")).toTensor().is_same(news[3]));
  // Element and key/value types survive.
  EXPECT_EQ(*l.elementType(), *c10::AnyType::get());
  EXPECT_EQ(*in2.elementType(), *c10::AnyType::get());
  EXPECT_EQ(*d.keyType(), *c10::StringType::get());
  EXPECT_EQ(*d.valueType(), *c10::TensorType::get());
}

TEST(Structure, TypedTensorListStaysATensorList) {
  c10::List<at::Tensor> list;
  for (int i = 0; i < 5; ++i) list.push_back(tensor_of(i));
  const c10::IValue in(list);
  ASSERT_TRUE(in.isTensorList());
  const FlatStructure flat = flatten(in);
  ASSERT_EQ(flat.leaves.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(flat.leaves[i].is_same(list.get(i)));
  const std::vector<at::Tensor> news = replacements(5);
  const c10::IValue out = rebuild(flat.skeleton, news);
  ASSERT_TRUE(out.isTensorList()) << "a typed List[Tensor] must come back typed";
  const c10::List<at::Tensor> typed = out.toTensorList();
  ASSERT_EQ(typed.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(typed.get(i).is_same(news[i]));
}

TEST(Structure, OtherTypedListsKeepTheirElementType) {
  c10::List<int64_t> ints({1, 2, 3});
  const c10::IValue out_ints = round_trip(ints);
  ASSERT_TRUE(out_ints.isIntList());
  EXPECT_EQ(out_ints.toIntVector(), (std::vector<int64_t>{1, 2, 3}));

  c10::List<std::optional<at::Tensor>> optionals;
  const at::Tensor t = tensor_of(5);
  optionals.push_back(t);
  optionals.push_back(std::nullopt);
  std::vector<at::Tensor> leaves;
  const c10::IValue out_opt = round_trip(optionals, &leaves);
  ASSERT_EQ(leaves.size(), 1u);
  ASSERT_TRUE(out_opt.isList());
  EXPECT_EQ(*out_opt.toList().elementType(), *c10::OptionalType::ofTensor());
  EXPECT_TRUE(out_opt.toList().get(0).toTensor().is_same(t));
  EXPECT_TRUE(out_opt.toList().get(1).isNone());
}

TEST(Structure, Tuples) {
  const at::Tensor a = tensor_of(1), b = tensor_of(2);
  const c10::IValue in = c10::ivalue::Tuple::create(
      {c10::IValue(a), c10::IValue(std::string("k")),
       c10::ivalue::Tuple::create({c10::IValue(b), c10::IValue(int64_t{4})})});
  const FlatStructure flat = flatten(in);
  ASSERT_EQ(flat.leaves.size(), 2u);
  const std::vector<at::Tensor> news = replacements(2);
  const c10::IValue out = rebuild(flat.skeleton, news);
  ASSERT_TRUE(out.isTuple());
  EXPECT_FALSE(out.is(in));
  const auto& e = out.toTupleRef().elements();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_TRUE(e[0].toTensor().is_same(news[0]));
  EXPECT_EQ(e[1].toStringRef(), "k");
  ASSERT_TRUE(e[2].isTuple());
  EXPECT_TRUE(e[2].toTupleRef().elements()[0].toTensor().is_same(news[1]));
  EXPECT_EQ(e[2].toTupleRef().elements()[1].toInt(), 4);
}

TEST(Structure, DictWithStringKeysKeepsOrderAndTypes) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  const std::vector<std::string> keys{"zeta", "alpha", "mid", "beta"};
  dict.insert(keys[0], tensor_of(0));
  dict.insert(keys[1], int64_t{5});
  dict.insert(keys[2], tensor_of(2));
  dict.insert(keys[3], std::string("text"));
  const FlatStructure flat = flatten(dict);
  ASSERT_EQ(flat.leaves.size(), 2u);
  const std::vector<at::Tensor> news = replacements(2);
  const c10::IValue out = rebuild(flat.skeleton, news);
  ASSERT_TRUE(out.isGenericDict());
  EXPECT_FALSE(out.is(c10::IValue(dict)));
  const auto d = out.toGenericDict();
  EXPECT_EQ(*d.keyType(), *c10::StringType::get());
  EXPECT_EQ(*d.valueType(), *c10::AnyType::get());
  ASSERT_EQ(d.size(), 4u);
  size_t i = 0;
  for (const auto& entry : d) {
    EXPECT_EQ(entry.key().toStringRef(), keys[i]) << "insertion order lost at entry " << i;
    ++i;
  }
  EXPECT_TRUE(d.at(std::string("zeta")).toTensor().is_same(news[0]));
  EXPECT_EQ(d.at(std::string("alpha")).toInt(), 5);
  EXPECT_TRUE(d.at(std::string("mid")).toTensor().is_same(news[1]));
  EXPECT_EQ(d.at(std::string("beta")).toStringRef(), "text");
}

TEST(Structure, DictWithIntKeys) {
  c10::impl::GenericDict dict(c10::IntType::get(), c10::TensorType::get());
  dict.insert(int64_t{30}, tensor_of(0));
  dict.insert(int64_t{-1}, tensor_of(1));
  dict.insert(int64_t{7}, tensor_of(2));
  const FlatStructure flat = flatten(dict);
  ASSERT_EQ(flat.leaves.size(), 3u);
  const std::vector<at::Tensor> news = replacements(3);
  const c10::IValue out = rebuild(flat.skeleton, news);
  const auto d = out.toGenericDict();
  EXPECT_EQ(*d.keyType(), *c10::IntType::get());
  EXPECT_EQ(*d.valueType(), *c10::TensorType::get());
  std::vector<int64_t> order;
  for (const auto& entry : d) order.push_back(entry.key().toInt());
  EXPECT_EQ(order, (std::vector<int64_t>{30, -1, 7}));
  EXPECT_TRUE(d.at(int64_t{30}).toTensor().is_same(news[0]));
  EXPECT_TRUE(d.at(int64_t{-1}).toTensor().is_same(news[1]));
  EXPECT_TRUE(d.at(int64_t{7}).toTensor().is_same(news[2]));
}

TEST(Structure, EmptyContainers) {
  const c10::IValue empty_list = c10::impl::GenericList(c10::AnyType::get());
  const c10::IValue empty_tensor_list = c10::List<at::Tensor>();
  const c10::IValue empty_tuple = c10::ivalue::Tuple::create(std::vector<c10::IValue>{});
  const c10::IValue empty_dict = c10::impl::GenericDict(c10::StringType::get(), c10::TensorType::get());
  const c10::IValue empty_int_dict = c10::impl::GenericDict(c10::IntType::get(), c10::AnyType::get());

  for (const c10::IValue* v : {&empty_list, &empty_tensor_list, &empty_tuple, &empty_dict, &empty_int_dict}) {
    const FlatStructure flat = flatten(*v);
    EXPECT_TRUE(flat.leaves.empty());
    EXPECT_EQ(flat.skeleton.nodes.size(), 1u);
    EXPECT_TRUE(flat.skeleton.root_children.empty());
  }
  EXPECT_TRUE(round_trip(empty_list).isList());
  EXPECT_EQ(round_trip(empty_list).toList().size(), 0u);
  EXPECT_TRUE(round_trip(empty_tensor_list).isTensorList());
  EXPECT_TRUE(round_trip(empty_tuple).isTuple());
  EXPECT_EQ(round_trip(empty_tuple).toTupleRef().elements().size(), 0u);
  const auto d = round_trip(empty_dict).toGenericDict();
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(*d.keyType(), *c10::StringType::get());
  EXPECT_EQ(*d.valueType(), *c10::TensorType::get());
  EXPECT_EQ(*round_trip(empty_int_dict).toGenericDict().keyType(), *c10::IntType::get());

  // Empty containers nested among others.
  c10::impl::GenericList outer(c10::AnyType::get());
  outer.push_back(empty_list);
  outer.push_back(tensor_of(1));
  outer.push_back(empty_dict);
  outer.push_back(empty_tuple);
  std::vector<at::Tensor> leaves;
  const auto l = round_trip(outer, &leaves).toList();
  EXPECT_EQ(leaves.size(), 1u);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_TRUE(l.get(0).isList());
  EXPECT_TRUE(l.get(1).isTensor());
  EXPECT_TRUE(l.get(2).isGenericDict());
  EXPECT_TRUE(l.get(3).isTuple());
}

TEST(Structure, UndefinedTensorsAreLeavesThatPassThrough) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::Tensor());
  list.push_back(tensor_of(1));
  list.push_back(at::Tensor());
  const FlatStructure flat = flatten(list);
  ASSERT_EQ(flat.leaves.size(), 3u);
  EXPECT_FALSE(flat.leaves[0].defined());
  EXPECT_TRUE(flat.leaves[1].defined());
  EXPECT_FALSE(flat.leaves[2].defined());
  const auto out = rebuild(flat.skeleton, flat.leaves).toList();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FALSE(out.get(0).toTensor().defined());
  EXPECT_TRUE(out.get(1).toTensor().is_same(flat.leaves[1]));
  EXPECT_FALSE(out.get(2).toTensor().defined());
}

TEST(Structure, DictKeysAreNotLeaves) {
  // Only values are walked; a key is kept as it is.
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  c10::impl::GenericList value(c10::AnyType::get());
  value.push_back(tensor_of(1));
  value.push_back(tensor_of(2));
  dict.insert(std::string("list"), value);
  dict.insert(std::string("tensor"), tensor_of(3));
  const FlatStructure flat = flatten(dict);
  EXPECT_EQ(flat.leaves.size(), 3u);
  const std::vector<SkeletonNode>& nodes = flat.skeleton.nodes;
  ASSERT_EQ(nodes.size(), 7u);  // dict, "list", list, T, T, "tensor", T
  EXPECT_EQ(nodes[1].kind, NodeKind::kPassthrough);
  EXPECT_EQ(flat.skeleton.values.at(nodes[1].aux).toStringRef(), "list");
  EXPECT_EQ(nodes[5].kind, NodeKind::kPassthrough);
  EXPECT_EQ(flat.skeleton.values.at(nodes[5].aux).toStringRef(), "tensor");
  // A dict's children start at their key nodes.
  ASSERT_EQ(flat.skeleton.root_children.size(), 2u);
  EXPECT_EQ(flat.skeleton.root_children[0].node, 1u);
  EXPECT_EQ(flat.skeleton.root_children[0].leaf, 0u);
  EXPECT_EQ(flat.skeleton.root_children[1].node, 5u);
  EXPECT_EQ(flat.skeleton.root_children[1].leaf, 2u);
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
  const at::Tensor t = tensor_of(9);
  const c10::IValue in = nested_lists(kMaxNestingDepth, t);
  std::vector<at::Tensor> leaves;
  c10::IValue out = round_trip(in, &leaves);
  ASSERT_EQ(leaves.size(), 1u);
  for (int i = 0; i < kMaxNestingDepth; ++i) {
    ASSERT_TRUE(out.isList()) << "level " << i;
    ASSERT_EQ(out.toList().size(), 1u);
    out = out.toList().get(0);
  }
  ASSERT_TRUE(out.isTensor());
  EXPECT_TRUE(out.toTensor().is_same(t));

  // Mixed container kinds deep down work too.
  c10::IValue mixed = t;
  for (int i = 0; i < 300; ++i) {
    if (i % 3 == 0) {
      mixed = c10::ivalue::Tuple::create({mixed});
    } else if (i % 3 == 1) {
      c10::impl::GenericDict d(c10::IntType::get(), c10::AnyType::get());
      d.insert(int64_t{i}, mixed);
      mixed = d;
    } else {
      c10::impl::GenericList l(c10::AnyType::get());
      l.push_back(mixed);
      mixed = l;
    }
  }
  EXPECT_EQ(flatten(mixed).leaves.size(), 1u);
}

TEST(Structure, NestingDeeperThanTheLimitThrows) {
  const c10::IValue too_deep = nested_lists(kMaxNestingDepth + 1, tensor_of(1));
  EXPECT_THROW(flatten(too_deep), c10::Error);
  const c10::IValue far_too_deep = nested_lists(5 * kMaxNestingDepth, tensor_of(1));
  try {
    flatten(far_too_deep);
    ADD_FAILURE() << "no exception";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper"), std::string::npos) << e.what();
  }
}

TEST(Structure, AContainerThatContainsItselfThrows) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(tensor_of(1));
  list.push_back(list);  // the list now holds a reference to itself
  EXPECT_THROW(flatten(list), c10::Error);
  list.set(1, c10::IValue());  // break the cycle so the list can be freed
}

TEST(Structure, RebuildNeverRereadsTheInputContainers) {
  c10::impl::GenericList list(c10::AnyType::get());
  const at::Tensor t = tensor_of(1);
  list.push_back(t);
  list.push_back(std::string("before"));
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert(std::string("k"), int64_t{1});
  list.push_back(dict);
  const FlatStructure flat = flatten(list);
  // Mutate the input after flattening.
  list.set(1, std::string("after"));
  list.push_back(int64_t{99});
  dict.insert_or_assign(std::string("k"), int64_t{2});
  dict.insert(std::string("new"), int64_t{3});

  const auto out = rebuild(flat.skeleton, flat.leaves).toList();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.get(1).toStringRef(), "before");
  const auto d = out.get(2).toGenericDict();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.at(std::string("k")).toInt(), 1);
}

TEST(Structure, RebuildingTwiceGivesIndependentStructures) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(tensor_of(1));
  const FlatStructure flat = flatten(list);
  const auto a = rebuild(flat.skeleton, flat.leaves).toList();
  const auto b = rebuild(flat.skeleton, flat.leaves).toList();
  a.push_back(int64_t{1});
  EXPECT_EQ(b.size(), 1u);
}

TEST(Structure, RebuildWithTooManyLeavesThrows) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(tensor_of(1));
  list.push_back(tensor_of(2));
  const FlatStructure flat = flatten(list);
  EXPECT_THROW(rebuild(flat.skeleton, replacements(3)), c10::Error);
}

// rebuild_child + assemble_root (the engine's parallel rebuild) must give what rebuild gives,
// for every kind of root container, with children built in any order and on any thread.
void expect_equal_structures(const c10::IValue& a, const c10::IValue& b) {
  ASSERT_EQ(a.tagKind(), b.tagKind());
  if (a.isTensor()) {
    EXPECT_TRUE(a.toTensor().is_same(b.toTensor()));
  } else if (a.isList()) {
    EXPECT_EQ(*a.toList().elementType(), *b.toList().elementType());
    ASSERT_EQ(a.toList().size(), b.toList().size());
    for (size_t i = 0; i < a.toList().size(); ++i) expect_equal_structures(a.toList().get(i), b.toList().get(i));
  } else if (a.isTuple()) {
    const auto& x = a.toTupleRef().elements();
    const auto& y = b.toTupleRef().elements();
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) expect_equal_structures(x[i], y[i]);
  } else if (a.isGenericDict()) {
    const auto x = a.toGenericDict();
    const auto y = b.toGenericDict();
    EXPECT_EQ(*x.keyType(), *y.keyType());
    EXPECT_EQ(*x.valueType(), *y.valueType());
    ASSERT_EQ(x.size(), y.size());
    auto iy = y.begin();
    for (auto ix = x.begin(); ix != x.end(); ++ix, ++iy) {
      EXPECT_TRUE(ix->key() == iy->key());
      expect_equal_structures(ix->value(), iy->value());
    }
  } else if (a.isNone()) {
    EXPECT_TRUE(b.isNone());
  } else {
    EXPECT_TRUE(a == b);
  }
}

// Children of uneven weight: many leaves, none, nested, empty containers, passthroughs.
std::vector<c10::IValue> uneven_children() {
  std::vector<c10::IValue> children;
  c10::impl::GenericList many(c10::AnyType::get());
  for (int i = 0; i < 50; ++i) many.push_back(tensor_of(i));
  children.push_back(many);
  children.push_back(std::string("no leaves"));
  children.push_back(c10::impl::GenericList(c10::AnyType::get()));
  children.push_back(tensor_of(100));
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert(std::string("x"), tensor_of(101));
  d.insert(std::string("y"), c10::ivalue::Tuple::create({c10::IValue(tensor_of(102)), c10::IValue()}));
  children.push_back(d);
  children.push_back(c10::IValue());
  children.push_back(at::Tensor());
  children.push_back(tensor_of(103));
  return children;
}

TEST(Structure, RebuildInPiecesMatchesRebuild) {
  const std::vector<c10::IValue> children = uneven_children();
  std::vector<c10::IValue> roots;
  {
    c10::impl::GenericList l(c10::AnyType::get());
    for (const auto& c : children) l.push_back(c);
    roots.push_back(l);
  }
  roots.push_back(c10::ivalue::Tuple::create(children));
  {
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    for (size_t i = 0; i < children.size(); ++i) {
      std::string key = std::to_string(children.size() - i);
      key += "k";
      d.insert(key, children[i]);
    }
    roots.push_back(d);
  }
  {
    c10::impl::GenericDict d(c10::IntType::get(), c10::AnyType::get());
    for (size_t i = 0; i < children.size(); ++i) d.insert(static_cast<int64_t>(i * 7) - 20, children[i]);
    roots.push_back(d);
  }
  {
    c10::List<at::Tensor> typed;
    for (int i = 0; i < 9; ++i) typed.push_back(tensor_of(i));
    roots.push_back(typed);
  }
  for (const c10::IValue& root : roots) {
    SCOPED_TRACE(root.tagKind());
    const FlatStructure flat = flatten(root);
    const std::vector<at::Tensor> news = replacements(flat.leaves.size());
    const c10::IValue whole = rebuild(flat.skeleton, news);
    const size_t n = flat.skeleton.root_children.size();
    ASSERT_EQ(n, flat.skeleton.nodes.front().size);
    // Children built backwards, on separate threads.
    std::vector<c10::IValue> built(n);
    std::vector<std::thread> threads;
    for (size_t i = n; i-- > 0;)
      threads.emplace_back([&built, &flat, &news, i] { built[i] = rebuild_child(flat.skeleton, news, i); });
    for (std::thread& t : threads) t.join();
    const c10::IValue pieces = assemble_root(flat.skeleton, built);
    expect_equal_structures(pieces, whole);
    if (root.isTensorList()) {
      EXPECT_TRUE(pieces.isTensorList());
    }
    if (root.isGenericDict()) {
      // Keys in insertion order.
      auto a = pieces.toGenericDict().begin();
      for (auto b = root.toGenericDict().begin(); b != root.toGenericDict().end(); ++a, ++b)
        EXPECT_TRUE(a->key() == b->key());
    }
  }
}

}  // namespace
}  // namespace mtc::detail
