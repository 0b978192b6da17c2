// Output dicts made ahead (dict_stash.h): of the shape asked for, as many as the thread's walks
// took, each handed out once, within the limits; made by an idle worker of the pool; and the
// engine's copies the same with the stash on.
#include "detail/dict_stash.h"

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "detail/worker_pool.h"
#include "detail/worker_pool_set.h"
#include "mtc/copier.h"
#include "structure_test_support.h"

namespace mtc::detail {
namespace {

using structure_test::tensor_of;

const c10::TypePtr& str() {
  static const c10::TypePtr type = c10::StringType::get();
  return type;
}
const c10::TypePtr& any() {
  static const c10::TypePtr type = c10::AnyType::get();
  return type;
}
const c10::TypePtr& tensor() {
  static const c10::TypePtr type = c10::TensorType::get();
  return type;
}

// Runs `body` on a thread of its own, whose stash starts empty, with the stash on.
template <class Body>
void on_fresh_thread(Body body) {
  dict_stash::set_enabled(true);
  std::thread(body).join();
  dict_stash::set_enabled(false);
}

// "k3" for ("k", 3); appended, not operator+ (GCC 12's -Wrestrict misfires on that).
std::string key(const char* prefix, size_t i) {
  std::string text(prefix);
  text += std::to_string(i);
  return text;
}

// Fills `dict` with `n` string keys; a dict made with room for them must not grow.
void fill(c10::impl::GenericDict& dict, size_t n) {
  for (size_t i = 0; i < n; ++i) dict.insert(c10::IValue(key("k", i)), c10::IValue());
  EXPECT_EQ(dict.size(), n);
}

TEST(DictStash, TakeGivesAnEmptyDictOfTheShapeOnOrOff) {
  for (const bool on : {false, true}) {
    dict_stash::set_enabled(on);
    c10::impl::GenericDict dict = dict_stash::take(str(), tensor(), 5);
    EXPECT_EQ(*dict.keyType(), *str());
    EXPECT_EQ(*dict.valueType(), *tensor());
    EXPECT_EQ(dict.size(), 0u);
    fill(dict, 5);
  }
  dict_stash::set_enabled(false);
  EXPECT_EQ(dict_stash::refill([] { return false; }), 0u);
  EXPECT_EQ(dict_stash::thread_spares(), 0u);
}

TEST(DictStash, RefillMakesWhatWasTakenAndEachDictGoesOnce) {
  on_fresh_thread([] {
    std::vector<c10::impl::GenericDict> held;
    for (int i = 0; i < 3; ++i) held.push_back(dict_stash::take(str(), any(), 5));
    for (int i = 0; i < 2; ++i) held.push_back(dict_stash::take(str(), tensor(), 3));
    EXPECT_EQ(dict_stash::thread_spares(), 0u);
    EXPECT_EQ(dict_stash::refill([] { return false; }), 5u);
    EXPECT_EQ(dict_stash::thread_spares(), 5u);
    // Nothing taken since: nothing more to make.
    EXPECT_EQ(dict_stash::refill([] { return false; }), 0u);

    c10::impl::GenericDict spare = dict_stash::take(str(), any(), 5);
    EXPECT_EQ(dict_stash::thread_spares(), 4u);
    EXPECT_EQ(*spare.valueType(), *any());
    EXPECT_EQ(spare.size(), 0u);
    for (const auto& other : held) EXPECT_FALSE(spare.is(other));
    c10::impl::GenericDict next = dict_stash::take(str(), any(), 5);
    EXPECT_FALSE(next.is(spare));
    fill(spare, 5);
    EXPECT_EQ(next.size(), 0u);  // filling one leaves the other empty
    // Two taken since the refill and one of that shape left: one made, so that the supply covers
    // the last demand; then nothing more.
    EXPECT_EQ(dict_stash::thread_spares(), 3u);
    EXPECT_EQ(dict_stash::refill([] { return false; }), 1u);
    EXPECT_EQ(dict_stash::thread_spares(), 4u);
    EXPECT_EQ(dict_stash::refill([] { return false; }), 0u);
  });
}

TEST(DictStash, RefillStopsWhenAskedAndGoesOnLater) {
  on_fresh_thread([] {
    for (int i = 0; i < 4; ++i) (void)dict_stash::take(str(), any(), 2);
    int asked = 0;
    EXPECT_EQ(dict_stash::refill([&] { return ++asked > 2; }), 2u);
    EXPECT_EQ(dict_stash::thread_spares(), 2u);
    EXPECT_EQ(dict_stash::refill([] { return true; }), 0u);
    EXPECT_EQ(dict_stash::refill([] { return false; }), 2u);
    EXPECT_EQ(dict_stash::thread_spares(), 4u);
  });
}

TEST(DictStash, KeepsWithinItsLimits) {
  on_fresh_thread([] {
    // Large dicts are never kept.
    (void)dict_stash::take(str(), any(), dict_stash::kMaxEntries + 1);
    EXPECT_EQ(dict_stash::refill([] { return false; }), 0u);
    // Beyond kMaxShapes shapes, dicts are made on the spot.
    for (size_t entries = 1; entries <= dict_stash::kMaxShapes + 3; ++entries) {
      c10::impl::GenericDict dict = dict_stash::take(str(), any(), entries);
      fill(dict, entries);
    }
    EXPECT_EQ(dict_stash::refill([] { return false; }), dict_stash::kMaxShapes);
    // A shape beyond the first kMaxShapes is not followed.
    (void)dict_stash::take(str(), tensor(), 4);
    EXPECT_EQ(dict_stash::refill([] { return false; }), 0u);
    // At most kMaxSpares in all.
    for (size_t i = 0; i < dict_stash::kMaxSpares + 100; ++i)
      (void)dict_stash::take(str(), any(), 4);
    dict_stash::refill([] { return false; });
    EXPECT_EQ(dict_stash::thread_spares(), dict_stash::kMaxSpares);
  });
}

// The pool's worker makes, once idle, the dicts its task took.
TEST(DictStash, AnIdleWorkerMakesWhatItsTaskTook) {
  dict_stash::set_enabled(true);
  WorkerPool pool(1, std::chrono::milliseconds(50), /*anticipate=*/false);
  std::promise<void> took;
  pool.submit([&] {
    for (int i = 0; i < 6; ++i) (void)dict_stash::take(str(), any(), 5);
    took.set_value();
  });
  took.get_future().wait();
  // The worker refills before it spins; a later task sees the result on its thread.
  size_t spares = 0;
  for (int attempt = 0; attempt < 200 && spares < 6; ++attempt) {
    std::promise<size_t> seen;
    pool.submit([&] { seen.set_value(dict_stash::thread_spares()); }, false);
    spares = seen.get_future().get();
    if (spares < 6) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  dict_stash::set_enabled(false);
  EXPECT_EQ(spares, 6u);
}

// Copies through the engine with the stash on: every result is its input's structure and values,
// and no two results share a dict.
TEST(DictStash, CopiesWithTheStashOnAreTheirInputs) {
  c10::Dict<std::string, at::Tensor> inner;
  for (int i = 0; i < 5; ++i) inner.insert(key("t", i), tensor_of(i + 1));
  c10::impl::GenericList input(c10::AnyType::get());
  for (int i = 0; i < 40; ++i) input.push_back(c10::impl::toGenericDict(inner.copy()));
  dict_stash::set_enabled(true);
  std::vector<c10::IValue> results;
  for (int copy = 0; copy < 6; ++copy) {
    results.push_back(start_copy(c10::IValue(input), c10::Device(c10::kCPU)).get());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the workers go idle
  }
  dict_stash::set_enabled(false);
  std::vector<const void*> dicts;
  for (const c10::IValue& result : results) {
    const auto list = result.toListRef();
    ASSERT_EQ(list.size(), 40u);
    for (const c10::IValue& element : list) {
      const c10::impl::GenericDict dict = element.toGenericDict();
      dicts.push_back(element.internalToPointer());
      ASSERT_EQ(dict.size(), 5u);
      int i = 0;
      for (const auto& entry : dict) {
        EXPECT_EQ(entry.key().toStringRef(), key("t", static_cast<size_t>(i)));
        EXPECT_TRUE(entry.value().toTensor().equal(tensor_of(i + 1)));
        ++i;
      }
    }
  }
  std::sort(dicts.begin(), dicts.end());
  EXPECT_EQ(std::adjacent_find(dicts.begin(), dicts.end()), dicts.end());
}

TEST(DictStash, VariableIsZeroOrOne) {
  EXPECT_FALSE(parse_dict_stash(nullptr, false));
  EXPECT_FALSE(parse_dict_stash("", false));
  EXPECT_TRUE(parse_dict_stash("1", false));
  EXPECT_FALSE(parse_dict_stash("0", true));
  try {
    parse_dict_stash("yes", false);
    ADD_FAILURE() << "accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("MTC_DICT_STASH='yes'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mtc::detail
