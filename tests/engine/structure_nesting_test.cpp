// The structure walk's limits and failures: nesting up to kMaxNestingDepth, a container holding
// itself, a policy that throws; a failed walk leaves no result.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "detail/structure.h"
#include "structure_test_support.h"

namespace mtc::detail {
namespace {

using structure_test::all_leaves;
using structure_test::copy_with;
using structure_test::every_kind;
using structure_test::expect_copied;
using structure_test::RecordingPolicy;
using structure_test::tensor_of;

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
  EXPECT_NO_THROW(
      expect_copied(nested_lists(kMaxNestingDepth, c10::impl::GenericList(c10::AnyType::get()))));
  c10::impl::GenericList holding(c10::AnyType::get());
  holding.push_back(int64_t{1});
  RecordingPolicy policy;
  c10::IValue out;
  EXPECT_THROW(
      StructureCopier<RecordingPolicy>(policy).copy(nested_lists(kMaxNestingDepth, holding), out),
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

}  // namespace
}  // namespace mtc::detail
