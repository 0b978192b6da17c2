// Output dicts' string keys (key_interner.h): equal to the input's, the walking thread's own,
// counted exactly (a string lives while an output holds it, not longer), and the input's own
// where the thread keeps none.
#include "detail/key_interner.h"

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "detail/structure.h"
#include "structure_test_support.h"

namespace mtc::detail {
namespace {

using structure_test::RecordingPolicy;
using structure_test::tensor_of;

c10::impl::GenericDict dict_of(const std::vector<std::string>& keys) {
  c10::Dict<std::string, at::Tensor> dict;
  int value = 0;
  for (const std::string& key : keys) dict.insert(key, tensor_of(++value));
  return c10::impl::toGenericDict(std::move(dict));
}

c10::IValue copy_of(const c10::IValue& input) {
  RecordingPolicy policy;
  c10::IValue out;
  StructureCopier<RecordingPolicy>(policy).copy(input, out);
  return out;
}

// The key objects of a dict, in order.
std::vector<const void*> key_objects(const c10::IValue& dict) {
  std::vector<const void*> out;
  for (const auto& entry : dict.toGenericDict()) out.push_back(entry.key().internalToPointer());
  return out;
}

// Each check on a thread of its own: its table starts empty (another test's keys may have filled
// this one's).
// Interning off for a scope, on again after it whatever happens (the switch is process-wide).
struct SwitchedOff {
  SwitchedOff() { key_interner::set_enabled(false); }
  ~SwitchedOff() { key_interner::set_enabled(true); }
  SwitchedOff(const SwitchedOff&) = delete;
  SwitchedOff& operator=(const SwitchedOff&) = delete;
};

TEST(KeyInterner, OutputKeysEqualTheInputsButAreTheThreadsOwn) {
  ASSERT_TRUE(key_interner::enabled());
  std::thread walker([] {
    const c10::IValue input = dict_of({"boxes", "labels", "boxes_3d"});
    const c10::IValue first = copy_of(input);
    const c10::IValue second = copy_of(dict_of({"boxes", "labels", "boxes_3d"}));
    std::vector<std::string> keys;
    for (const auto& entry : first.toGenericDict()) keys.push_back(entry.key().toStringRef());
    EXPECT_EQ(keys, (std::vector<std::string>{"boxes", "labels", "boxes_3d"}));
    // Typed access still works on the copy.
    const auto typed = first.to<c10::Dict<std::string, at::Tensor>>();
    EXPECT_TRUE(typed.contains("labels"));
    // Not the input's objects; the same objects in two copies made by one thread.
    const auto in_keys = key_objects(input);
    const auto first_keys = key_objects(first);
    for (size_t i = 0; i < in_keys.size(); ++i) EXPECT_NE(first_keys[i], in_keys[i]);
    EXPECT_EQ(key_objects(second), first_keys);
  });
  walker.join();
}

TEST(KeyInterner, AStringLivesWhileAnOutputHoldsItAfterItsThreadExited) {
  c10::IValue kept;
  c10::weak_intrusive_ptr<c10::ivalue::ConstantString> weak(
      c10::ivalue::ConstantString::create(std::string("unused")));
  std::thread walker([&] {
    // More copies than one advance of references covers.
    for (uint32_t i = 0; i < 3 * key_interner::kPrepaid; ++i)
      kept = copy_of(dict_of({"only_in_this_thread"}));
    weak = c10::weak_intrusive_ptr<c10::ivalue::ConstantString>(
        (*kept.toGenericDict().begin()).key().toString());
  });
  walker.join();
  // The thread's table let go of its references: the output's is the last.
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(weak.use_count(), 1u);
  EXPECT_EQ((*kept.toGenericDict().begin()).key().toStringRef(), "only_in_this_thread");
  kept = c10::IValue();
  EXPECT_TRUE(weak.expired());
}

TEST(KeyInterner, CountsStayExactAcrossManyCopies) {
  c10::weak_intrusive_ptr<c10::ivalue::ConstantString> weak(
      c10::ivalue::ConstantString::create(std::string("unused")));
  std::thread walker([&] {
    std::vector<c10::IValue> live;
    for (uint32_t i = 0; i < 5 * key_interner::kPrepaid + 3; ++i) {
      live.push_back(copy_of(dict_of({"counted"})));
      const c10::IValue key = (*live.back().toGenericDict().begin()).key();
      weak = c10::weak_intrusive_ptr<c10::ivalue::ConstantString>(key.toString());
      // The outputs, `key` here, the table's own and what is left of the last advance.
      EXPECT_GE(weak.use_count(), live.size() + 2);
      EXPECT_LE(weak.use_count(), live.size() + 2 + key_interner::kPrepaid - 1);
    }
    live.clear();
    // Only the table's references are left.
    EXPECT_FALSE(weak.expired());
  });
  walker.join();
  // The thread's exit let go of them, to the last.
  EXPECT_TRUE(weak.expired());
}

// A walk that fails part way, after some keys were handed out, gives every count back with the
// partial structure it drops.
TEST(KeyInterner, AFailedWalkGivesItsKeysBack) {
  c10::weak_intrusive_ptr<c10::ivalue::ConstantString> weak(
      c10::ivalue::ConstantString::create(std::string("unused")));
  std::thread walker([&] {
    weak = c10::weak_intrusive_ptr<c10::ivalue::ConstantString>(
        (*copy_of(dict_of({"before_the_failure"})).toGenericDict().begin()).key().toString());
    c10::IValue too_deep = tensor_of(1);
    for (int i = 0; i <= kMaxNestingDepth + 1; ++i) {
      c10::impl::GenericList list(c10::AnyType::get());
      list.push_back(std::move(too_deep));
      too_deep = std::move(list);
    }
    c10::impl::GenericDict input(c10::StringType::get(), c10::AnyType::get());
    input.insert("before_the_failure", tensor_of(2));
    input.insert("too_deep", too_deep);
    EXPECT_THROW(copy_of(input), c10::Error);
  });
  walker.join();
  EXPECT_TRUE(weak.expired());
}

TEST(KeyInterner, TheInputsKeysWhereTheThreadKeepsNone) {
  std::thread walker([] {
    const std::string long_key(key_interner::kMaxKeyBytes + 1, 'k');
    const c10::IValue input = dict_of({long_key, "short"});
    const c10::IValue out = copy_of(input);
    EXPECT_EQ(key_objects(out)[0], key_objects(input)[0]);  // too long: shared
    EXPECT_NE(key_objects(out)[1], key_objects(input)[1]);

    // A full table: further keys are shared.
    for (size_t i = key_interner::thread_strings(); i < key_interner::kMaxStrings; ++i)
      (void)copy_of(dict_of({std::to_string(i) + "_k"}));
    EXPECT_EQ(key_interner::thread_strings(), key_interner::kMaxStrings);
    const c10::IValue more = dict_of({"one_too_many"});
    EXPECT_EQ(key_objects(copy_of(more))[0], key_objects(more)[0]);

    // Switched off: shared.
    const SwitchedOff off;
    const c10::IValue plain = dict_of({"short"});
    EXPECT_EQ(key_objects(copy_of(plain))[0], key_objects(plain)[0]);
  });
  walker.join();
}

TEST(KeyInterner, OtherKeysAsTheyAre) {
  c10::Dict<int64_t, at::Tensor> ints;
  ints.insert(7, tensor_of(1));
  const c10::IValue out = copy_of(c10::impl::toGenericDict(std::move(ints)));
  EXPECT_EQ((*out.toGenericDict().begin()).key().toInt(), 7);
}

}  // namespace
}  // namespace mtc::detail
