// Output dicts made ahead by the dict-making thread (dict_shelf.h): a shelf keeps one copy's worth
// of each shape the walks reported using, within its limits, hands each out once, and is freed
// when turned off; a walking thread takes from it through its stash, reports what it used, and
// looks again only when it may find some; the workers then make none themselves; an idle pool's
// shelf is restocked by the thread; and the engine's copies are their inputs with it.
#include "detail/dict_shelf.h"

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "detail/dict_stash.h"
#include "detail/impl_pool.h"
#include "detail/worker_pool.h"
#include "detail/worker_pool_set.h"
#include "dict_test_support.h"
#include "mtc/copier.h"

namespace mtc::detail {
namespace {

using dict_test::any;
using dict_test::str;
using dict_test::tensor;

// A shelf no pool of this process uses (pools take shards 1 up, one per device).
constexpr size_t kTestShelf = impl_pool::kShards - 1;

// Turns the shelf and the stash on for a test, the shelf empty, and puts the process's settings
// back afterwards (the shelf emptied again), also when an assertion ends the test early.
class ShelfOn {
 public:
  ShelfOn()
      : stash_before_((WorkerPoolSet::instance(), dict_stash::enabled())),
        shelf_before_(dict_shelf::enabled()) {
    dict_shelf::set_enabled(false);  // empties every shelf
    dict_shelf::set_enabled(true);
    dict_stash::set_enabled(true);
  }
  ShelfOn(const ShelfOn&) = delete;
  ShelfOn& operator=(const ShelfOn&) = delete;
  ~ShelfOn() {
    dict_shelf::set_enabled(false);
    dict_shelf::set_enabled(shelf_before_);
    dict_stash::set_enabled(stash_before_);
  }

 private:
  bool stash_before_;
  bool shelf_before_;
};

size_t make_all(size_t shelf) {
  size_t made = 0;
  while (dict_shelf::make_one(shelf)) ++made;
  return made;
}

TEST(DictShelf, KeepsWhatOneCopyUsedAndHandsEachOutOnce) {
  const ShelfOn on;
  std::vector<c10::impl::GenericDict> got;
  EXPECT_FALSE(dict_shelf::wants(kTestShelf));
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), any(), 5, 3, 8, got), 0u);
  EXPECT_TRUE(dict_shelf::wants(kTestShelf));
  EXPECT_EQ(dict_shelf::kept_target(kTestShelf), 3u);  // no copy counted: the use is one copy's
  const uint64_t restocks = dict_shelf::restocks(kTestShelf);
  EXPECT_EQ(make_all(kTestShelf), 3u);
  EXPECT_EQ(dict_shelf::restocks(kTestShelf), restocks + 3);
  EXPECT_EQ(dict_shelf::shelved(kTestShelf), 3u);
  EXPECT_FALSE(dict_shelf::wants(kTestShelf));

  // Another shape finds none of its own.
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), tensor(), 5, 0, 8, got), 0u);
  // At most `most` at a time, each once.
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), any(), 5, 0, 2, got), 2u);
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), any(), 5, 0, 8, got), 1u);
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), any(), 5, 0, 8, got), 0u);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(*got[i].keyType(), *str());
    EXPECT_EQ(*got[i].valueType(), *any());
    EXPECT_EQ(got[i].size(), 0u);
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE(got[i].is(got[j]));
  }
  for (size_t i = 0; i < 5; ++i) got[0].insert(c10::IValue(dict_test::key("k", i)), c10::IValue());
  EXPECT_EQ(got[1].size(), 0u);
  // Taken: the shelf is made whole again, to what one copy used.
  EXPECT_TRUE(dict_shelf::wants(kTestShelf));
  EXPECT_EQ(make_all(kTestShelf), 3u);
  EXPECT_EQ(make_all(kTestShelf), 0u);
}

// A stretch of copies back to back reports its use while no refill runs; the shelf then keeps one
// copy's worth of each shape (the reference batch's), not the stretch's: every shape gets its own.
TEST(DictShelf, AfterCopiesBackToBackEachShapeGetsOneCopysWorth) {
  const ShelfOn on;
  std::vector<c10::impl::GenericDict> got;
  (void)dict_shelf::kept_target(kTestShelf);  // settles what earlier tests counted
  for (int copy = 0; copy < 100; ++copy) {
    dict_shelf::copy_started(kTestShelf);
    (void)dict_shelf::grab(kTestShelf, str(), any(), 2, 16, 0, got);
    (void)dict_shelf::grab(kTestShelf, str(), tensor(), 5, 96, 0, got);
    (void)dict_shelf::grab(kTestShelf, str(), tensor(), 3, 16, 0, got);
  }
  EXPECT_EQ(dict_shelf::kept_target(kTestShelf), 128u);
  EXPECT_EQ(make_all(kTestShelf), 128u);
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), any(), 2, 0, 8, got), 8u);
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), tensor(), 5, 0, 8, got), 8u);
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), tensor(), 3, 0, 8, got), 8u);
}

TEST(DictShelf, KeepsWithinItsLimits) {
  const ShelfOn on;
  std::vector<c10::impl::GenericDict> got;
  // Never more kept than a full shelf of the shape holds.
  (void)dict_shelf::grab(kTestShelf, str(), any(), 64, 1000, 8, got);
  EXPECT_EQ(dict_shelf::kept_target(kTestShelf), dict_shelf::kMaxShelvedEntries / 64);
  EXPECT_EQ(make_all(kTestShelf), dict_shelf::kMaxShelvedEntries / 64);
  // Nor more grabbed at once than kGrab.
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), any(), 64, 0, 100, got), dict_shelf::kGrab);
  // A full shelf makes another shape only as many as there is room for.
  got.clear();
  (void)dict_shelf::grab(kTestShelf, str(), tensor(), 64, 10, 0, got);
  EXPECT_EQ(make_all(kTestShelf), dict_shelf::kGrab);
  EXPECT_EQ(dict_shelf::shelved(kTestShelf), dict_shelf::kMaxShelvedEntries / 64);
  // Beyond kMaxShapes shapes with dicts or use, a new one is not followed.
  dict_shelf::set_enabled(false);
  dict_shelf::set_enabled(true);
  for (size_t entries = 1; entries <= dict_shelf::kMaxShapes; ++entries)
    (void)dict_shelf::grab(kTestShelf, str(), any(), entries, 1, 8, got);
  (void)dict_shelf::grab(kTestShelf, str(), tensor(), 2, 1, 8, got);
  EXPECT_EQ(dict_shelf::kept_target(kTestShelf), dict_shelf::kMaxShapes);
}

TEST(DictShelf, OffHandsOutNoneMakesNoneAndFreesTheShelf) {
  const ShelfOn on;
  std::vector<c10::impl::GenericDict> got;
  (void)dict_shelf::grab(kTestShelf, str(), any(), 5, 4, 8, got);
  EXPECT_EQ(make_all(kTestShelf), 4u);
  dict_shelf::set_enabled(false);
  EXPECT_EQ(dict_shelf::shelved(kTestShelf), 0u);
  EXPECT_EQ(dict_shelf::kept_target(kTestShelf), 0u);
  EXPECT_EQ(dict_shelf::grab(kTestShelf, str(), any(), 5, 4, 8, got), 0u);
  EXPECT_FALSE(dict_shelf::make_one(kTestShelf));
  EXPECT_TRUE(got.empty());
}

// A walking thread (here a fresh one, on the test shelf) takes through its stash: it reports what
// it used once it has used kGrab, takes from the shelf once restocked, and looks no more often.
TEST(DictShelf, AWalkingThreadTakesFromTheShelfThroughItsStash) {
  const ShelfOn on;
  std::thread([] {
    impl_pool::set_thread_shard(kTestShelf);
    // Nothing shelved: made on the spot. The first take reports itself and finds the shelf
    // empty; the next kGrab - 1 do not look; the one after reports those kGrab.
    for (size_t i = 0; i < dict_shelf::kGrab; ++i) (void)dict_stash::take(str(), any(), 5);
    EXPECT_EQ(dict_shelf::kept_target(kTestShelf), 1u);
    (void)dict_stash::take(str(), any(), 5);
    EXPECT_EQ(dict_shelf::kept_target(kTestShelf), 1u);  // settled once a copy starts
    dict_shelf::copy_started(kTestShelf);
    EXPECT_EQ(dict_shelf::kept_target(kTestShelf), dict_shelf::kGrab);
    EXPECT_EQ(make_all(kTestShelf), dict_shelf::kGrab);
    // Restocked: the next take grabs kGrab at once (reporting itself), then the thread hands
    // them out one by one.
    const uint64_t served = dict_stash::served_total();
    std::vector<c10::impl::GenericDict> held;
    for (size_t i = 0; i < dict_shelf::kGrab; ++i)
      held.push_back(dict_stash::take(str(), any(), 5));
    EXPECT_EQ(dict_stash::served_total(), served + dict_shelf::kGrab);
    EXPECT_EQ(dict_shelf::shelved(kTestShelf), 0u);
    dict_shelf::copy_started(kTestShelf);
    EXPECT_EQ(dict_shelf::kept_target(kTestShelf), 1u);
    for (const auto& dict : held) EXPECT_EQ(dict.size(), 0u);
    // The worker's own refill makes none while the shelf is on.
    EXPECT_EQ(dict_stash::refill([] { return false; }), 0u);
    EXPECT_EQ(dict_stash::thread_spares(), 0u);
    impl_pool::set_thread_shard(0);
  }).join();
}

// An idle pool's shelf is restocked by the dict-making thread, up to what it wants.
TEST(DictShelf, AnIdlePoolsShelfIsRestocked) {
  const ShelfOn on;
  std::vector<c10::impl::GenericDict> none;
  (void)dict_shelf::grab(kTestShelf, str(), tensor(), 5, dict_shelf::kGrab, 0, none);
  const uint64_t made = dict_shelf::made_by_thread();
  dict_shelf::pool_idle(kTestShelf);
  // The thread counts a dict it made just after shelving it, and finds the shelf whole a look
  // later.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((dict_shelf::shelved(kTestShelf) < dict_shelf::kGrab || dict_shelf::wants(kTestShelf) ||
          dict_shelf::made_by_thread() < made + dict_shelf::kGrab) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(dict_shelf::shelved(kTestShelf), dict_shelf::kGrab);
  EXPECT_FALSE(dict_shelf::wants(kTestShelf));
  EXPECT_GE(dict_shelf::made_by_thread(), made + dict_shelf::kGrab);
}

// Copies through the engine with the shelf on, 2 ms apart (the pool idle between them): the
// dict-making thread makes dicts, the walks take them, and every result is its input's structure
// and values, no two sharing a dict.
TEST(DictShelf, CopiesWithTheShelfOnAreTheirInputs) {
  c10::impl::GenericList input(c10::AnyType::get());
  for (int i = 0; i < 60; ++i) input.push_back(dict_test::five_tensors());
  const ShelfOn on;
  const uint64_t made = dict_shelf::made_by_thread();
  const uint64_t served = dict_stash::served_total();
  std::vector<c10::IValue> results;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (results.size() < 4 ||
         ((dict_shelf::made_by_thread() == made || dict_stash::served_total() == served) &&
          std::chrono::steady_clock::now() < deadline)) {
    results.push_back(start_copy(c10::IValue(input), c10::Device(c10::kCPU)).get());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GT(dict_shelf::made_by_thread(), made);
  EXPECT_GT(dict_stash::served_total(), served);
  dict_test::expect_copies_of_five_tensors(results, 60);
}

TEST(DictShelf, OnUnlessTheEnvironmentSaysZero) {
  WorkerPoolSet::instance();  // reads MTC_DICT_SHELF
  dict_test::expect_on_unless_zero(kDictShelfVariable, dict_shelf::enabled());
}

}  // namespace
}  // namespace mtc::detail
