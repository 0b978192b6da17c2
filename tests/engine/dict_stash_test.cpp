// Output dicts made ahead by the walking threads (dict_stash.h, the dict shelf off): of the
// shape asked for, as many as the thread's walks took, each handed out once, within the limits;
// made by an idle worker of the pool; and the engine's copies the same with the stash on.
#include "detail/dict_stash.h"

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "detail/dict_shelf.h"
#include "detail/worker_pool.h"
#include "detail/worker_pool_set.h"
#include "dict_test_support.h"
#include "mtc/copier.h"

namespace mtc::detail {
namespace {

using dict_test::any;
using dict_test::str;
using dict_test::tensor;

bool never() { return false; }

// Turns the stash on or off for a test, with the dict shelf (dict_shelf.h, tested in
// dict_shelf_test.cpp) off: the workers make the dicts. Puts the process's settings
// (MTC_DICT_STASH, MTC_DICT_SHELF, read with the pools) back afterwards, also when an assertion
// ends the test early.
class StashSetting {
 public:
  explicit StashSetting(bool on)
      : before_((WorkerPoolSet::instance(), dict_stash::enabled())),
        shelf_before_(dict_shelf::enabled()) {
    dict_stash::set_enabled(on);
    dict_shelf::set_enabled(false);
  }
  StashSetting(const StashSetting&) = delete;
  StashSetting& operator=(const StashSetting&) = delete;
  ~StashSetting() {
    dict_stash::set_enabled(before_);
    dict_shelf::set_enabled(shelf_before_);
  }

 private:
  bool before_;
  bool shelf_before_;
};

// Runs `body` with the stash on, on a thread of its own whose stash starts empty and which has
// refilled once (only such a thread keeps dicts).
template <class Body>
void on_fresh_thread(Body body) {
  const StashSetting on(true);
  std::thread([&] {
    dict_stash::refill(never);
    body();
  }).join();
}

// Fills `dict` with `n` string keys; a dict made with room for them must not grow.
void fill(c10::impl::GenericDict& dict, size_t n) {
  for (size_t i = 0; i < n; ++i) dict.insert(c10::IValue(dict_test::key("k", i)), c10::IValue());
  EXPECT_EQ(dict.size(), n);
}

TEST(DictStash, TakeGivesAnEmptyDictOfTheShapeOnOrOff) {
  for (const bool on : {false, true}) {
    const StashSetting setting(on);
    c10::impl::GenericDict dict = dict_stash::take(str(), tensor(), 5);
    EXPECT_EQ(*dict.keyType(), *str());
    EXPECT_EQ(*dict.valueType(), *tensor());
    EXPECT_EQ(dict.size(), 0u);
    fill(dict, 5);
  }
}

// Turned off, a thread's stash is freed at its next refill.
TEST(DictStash, OffFreesTheStash) {
  on_fresh_thread([] {
    for (int i = 0; i < 3; ++i) (void)dict_stash::take(str(), any(), 5);
    EXPECT_EQ(dict_stash::refill(never), 3u);
    dict_stash::set_enabled(false);
    EXPECT_EQ(dict_stash::refill(never), 0u);
    EXPECT_EQ(dict_stash::thread_spares(), 0u);
    (void)dict_stash::take(str(), any(), 5);  // off: made on the spot, not counted
    dict_stash::set_enabled(true);
    EXPECT_EQ(dict_stash::refill(never), 0u);
  });
}

// Freeing a turned-off stash also stops when asked (a task queued meanwhile), and goes on at the
// next refill.
TEST(DictStash, OffFreesTheStashUntilAskedToStop) {
  on_fresh_thread([] {
    for (int i = 0; i < 4; ++i) (void)dict_stash::take(str(), any(), 5);
    EXPECT_EQ(dict_stash::refill(never), 4u);
    dict_stash::set_enabled(false);
    int asked = 0;
    EXPECT_EQ(dict_stash::refill([&] { return ++asked > 1; }), 0u);
    EXPECT_EQ(dict_stash::thread_spares(), 3u);
    EXPECT_EQ(dict_stash::refill([] { return true; }), 0u);
    EXPECT_EQ(dict_stash::thread_spares(), 3u);
    EXPECT_EQ(dict_stash::refill(never), 0u);
    EXPECT_EQ(dict_stash::thread_spares(), 0u);
  });
}

TEST(DictStash, RefillMakesWhatWasTakenAndEachDictGoesOnce) {
  on_fresh_thread([] {
    std::vector<c10::impl::GenericDict> held;
    for (int i = 0; i < 3; ++i) held.push_back(dict_stash::take(str(), any(), 5));
    for (int i = 0; i < 2; ++i) held.push_back(dict_stash::take(str(), tensor(), 3));
    EXPECT_EQ(dict_stash::thread_spares(), 0u);
    EXPECT_EQ(dict_stash::refill(never), 5u);
    EXPECT_EQ(dict_stash::thread_spares(), 5u);
    // Nothing taken since: nothing more to make.
    EXPECT_EQ(dict_stash::refill(never), 0u);

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
    EXPECT_EQ(dict_stash::refill(never), 1u);
    EXPECT_EQ(dict_stash::thread_spares(), 4u);
    EXPECT_EQ(dict_stash::refill(never), 0u);
  });
}

TEST(DictStash, RefillStopsWhenAskedAndGoesOnLater) {
  on_fresh_thread([] {
    for (int i = 0; i < 4; ++i) (void)dict_stash::take(str(), any(), 2);
    int asked = 0;
    EXPECT_EQ(dict_stash::refill([&] { return ++asked > 2; }), 2u);
    EXPECT_EQ(dict_stash::thread_spares(), 2u);
    EXPECT_EQ(dict_stash::refill([] { return true; }), 0u);
    EXPECT_EQ(dict_stash::refill(never), 2u);
    EXPECT_EQ(dict_stash::thread_spares(), 4u);
  });
}

TEST(DictStash, KeepsWithinItsLimits) {
  on_fresh_thread([] {
    // Large dicts are never kept.
    (void)dict_stash::take(str(), any(), dict_stash::kMaxEntries + 1);
    EXPECT_EQ(dict_stash::refill(never), 0u);
    // Beyond kMaxShapes shapes, dicts are made on the spot.
    for (size_t entries = 1; entries <= dict_stash::kMaxShapes + 3; ++entries) {
      c10::impl::GenericDict dict = dict_stash::take(str(), any(), entries);
      fill(dict, entries);
    }
    EXPECT_EQ(dict_stash::refill(never), dict_stash::kMaxShapes);
    // A shape beyond the first kMaxShapes is not followed.
    (void)dict_stash::take(str(), tensor(), 4);
    EXPECT_EQ(dict_stash::refill(never), 0u);
    // Room for at most kMaxSpareEntries entries in all: the 16 dicts above keep 1 + ... + 16 =
    // 136, of which one of 4 is taken here, and 4-entry dicts fill the rest.
    for (size_t i = 0; i < dict_stash::kMaxSpareEntries; ++i)
      (void)dict_stash::take(str(), any(), 4);
    const size_t room = (dict_stash::kMaxSpareEntries - (136 - 4)) / 4;
    EXPECT_EQ(dict_stash::refill(never), room);
    EXPECT_EQ(dict_stash::thread_spares(), dict_stash::kMaxShapes - 1 + room);
    EXPECT_EQ(dict_stash::refill(never), 0u);
  });
}

// Runs `task` on `pool`'s worker and returns what it returned.
template <class Task>
auto run_on(WorkerPool& pool, Task task) {
  std::promise<decltype(task())> done;
  pool.submit([&] { done.set_value(task()); }, false);
  return done.get_future().get();
}

// Has `pool`'s worker keep dicts from now on (a first refill), then take six of one shape.
void take_six_on(WorkerPool& pool) {
  run_on(pool, [] { return dict_stash::refill(never); });
  run_on(pool, [] {
    for (int i = 0; i < 6; ++i) (void)dict_stash::take(str(), any(), 5);
    return 0;
  });
}

// The dicts `pool`'s worker keeps, asked until it keeps six or 10 s have passed. A probe may
// interrupt a refill, which goes on at the worker's next idle moment.
size_t spares_once_six_or_late(WorkerPool& pool) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  size_t spares = 0;
  while (spares < 6 && std::chrono::steady_clock::now() < deadline) {
    spares = run_on(pool, [] { return dict_stash::thread_spares(); });
    if (spares < 6) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return spares;
}

// A worker still spinning for the next task makes nothing: copies back to back are not slowed.
TEST(DictStash, ASpinningWorkerMakesNothing) {
  const StashSetting on(true);
  WorkerPool pool(1, std::chrono::seconds(5), /*anticipate=*/false);
  take_six_on(pool);
  EXPECT_EQ(run_on(pool, [] { return dict_stash::thread_spares(); }), 0u);
  pool.set_spin(std::chrono::microseconds(0));
}

// The pool's worker makes, once its spin ends without a task, the dicts its task took.
TEST(DictStash, AnIdleWorkerMakesWhatItsTaskTook) {
  const StashSetting on(true);
  WorkerPool pool(1, std::chrono::microseconds(0), /*anticipate=*/false);  // sleeps at once
  take_six_on(pool);
  // The worker refills once its spin ends, before it sleeps; a later task sees the result on its
  // thread.
  EXPECT_EQ(spares_once_six_or_late(pool), 6u);
}

// Copies through the engine with the stash on, walked in parts by the pool's workers (300
// leaves): dicts made ahead are handed out, every result is its input's structure and values,
// and no two results share a dict.
TEST(DictStash, CopiesWithTheStashOnAreTheirInputs) {
  c10::impl::GenericList input(c10::AnyType::get());
  for (int i = 0; i < 60; ++i) input.push_back(dict_test::five_tensors());
  const StashSetting on(true);
  const uint64_t served_before = dict_stash::served_total();
  std::vector<c10::IValue> results;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (results.size() < 4 || (dict_stash::served_total() == served_before &&
                                std::chrono::steady_clock::now() < deadline)) {
    results.push_back(start_copy(c10::IValue(input), c10::Device(c10::kCPU)).get());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the workers go idle
  }
  EXPECT_GT(dict_stash::served_total(), served_before);
  dict_test::expect_copies_of_five_tensors(results, 60);
}

TEST(DictStash, OnUnlessTheEnvironmentSaysZero) {
  WorkerPoolSet::instance();  // reads MTC_DICT_STASH
  dict_test::expect_on_unless_zero(kDictStashVariable, dict_stash::enabled());
}

}  // namespace
}  // namespace mtc::detail
