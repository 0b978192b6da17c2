// A root fed element by element (mtc::RootFeed): the copy walks the elements that have arrived
// while the caller still puts the others, and fails cleanly when the caller gives up.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/arange.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "cpu_test_support.h"
#include "detail/worker_pool_set.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "pool_blocker.h"
#include "watchdog.h"

namespace {

using mtc::CopyOptions;
using mtc::RootFeed;
using mtc::start_copy;
using mtc::test::expect_throws_with;
using mtc::test::kCpu;
using mtc::test::Watchdog;

constexpr std::chrono::seconds kLimit{60};

double micros_between(std::chrono::steady_clock::time_point from,
                      std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

// `elements` root elements, each a list of `per_element` small tensors and a string.
c10::impl::GenericList root_of(int64_t elements, int64_t per_element) {
  c10::impl::GenericList root(c10::AnyType::get());
  for (int64_t e = 0; e < elements; ++e) {
    c10::impl::GenericList element(c10::AnyType::get());
    for (int64_t k = 0; k < per_element; ++k)
      element.push_back(at::arange(e * 100 + k, e * 100 + k + 1 + k % 7));
    element.push_back(c10::IValue("element " + std::to_string(e)));
    root.push_back(std::move(element));
  }
  return root;
}

// Puts every element of `root` into `feed`, waiting `gap` before each.
void feed_all(RootFeed& feed, const c10::impl::GenericList& root, std::chrono::microseconds gap) {
  for (size_t i = 0; i < root.size(); ++i) {
    std::this_thread::sleep_for(gap);
    feed.put(root.get(i));
  }
}

TEST(RootFeed, ACopyStartedBeforeItsElementsGivesTheWholeRoot) {
  const Watchdog watchdog(kLimit, "a fed copy");
  // Small (walked by one thread) and large enough for a walk in parts (16 x 41 leaves).
  for (const int64_t per_element : {2, 40}) {
    const c10::impl::GenericList root = root_of(16, per_element);
    auto feed = std::make_shared<RootFeed>(static_cast<int64_t>(root.size()));
    mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
    feed_all(*feed, root, std::chrono::microseconds(200));
    mtc::test::expect_same_structure_same_tensors(handle.get(), c10::IValue(root));
    EXPECT_EQ(handle.stats().tensors, 16 * per_element);
  }
}

TEST(RootFeed, AnEmptyRootNeedsNoElement) {
  const auto before = std::chrono::steady_clock::now();
  auto feed = std::make_shared<RootFeed>(0);
  mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
  const c10::IValue out = handle.get();
  const auto after = std::chrono::steady_clock::now();
  ASSERT_TRUE(out.isList());
  EXPECT_EQ(out.toListRef().size(), 0U);
  // Complete from the start: its walk's tail is measured from there, not from the clock's epoch.
  EXPECT_GE(feed->completed_at(), before);
  EXPECT_LE(handle.stats().feed_tail_us, micros_between(before, after));
}

TEST(RootFeed, AnAbandonedFeedFailsTheCopyAndReleasesIt) {
  const Watchdog watchdog(kLimit, "an abandoned feed");
  for (const int64_t put : {0, 3}) {
    const c10::impl::GenericList root = root_of(8, 40);
    auto feed = std::make_shared<RootFeed>(8);
    mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
    for (int64_t i = 0; i < put; ++i) feed->put(root.get(static_cast<size_t>(i)));
    feed->abandon();
    expect_throws_with([&] { handle.get(); }, "never came");
    EXPECT_THROW(handle.ready(), c10::Error);
    handle = mtc::CopyHandle();  // returns: nothing waits for the missing elements
    // The elements put stay in the root; the others were never set.
    EXPECT_EQ(feed->arrived(), put);
    EXPECT_TRUE(feed->root().toListRef()[7].isNone());
  }
}

TEST(RootFeed, ThreadsThatSleptThroughAStalledFeedWakeForItsElementsOrItsEnd) {
  const Watchdog watchdog(kLimit, "a stalled feed");
  // 30 ms without an element: the copy's threads stop spinning and sleep until the feed moves.
  const c10::impl::GenericList root = root_of(8, 40);
  for (const bool abandon : {false, true}) {
    auto feed = std::make_shared<RootFeed>(8);
    mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
    feed->put(root.get(0));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    if (abandon) {
      feed->abandon();
      expect_throws_with([&] { handle.get(); }, "never came");
      continue;
    }
    for (size_t i = 1; i < root.size(); ++i) {
      feed->put(root.get(i));
      if (i == 4) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    mtc::test::expect_same_structure_same_tensors(handle.get(), c10::IValue(root));
  }
}

TEST(RootFeed, ACopyCountsItsThreadsSleepsInTheFeed) {
  const Watchdog watchdog(kLimit, "a copy's sleeps in its feed");
  const c10::impl::GenericList root = root_of(8, 40);
  auto feed = std::make_shared<RootFeed>(8);
  mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
  feed->put(root.get(0));
  // A copy's thread waits for an element, and the rest come only once it has gone to wait.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (feed->sleeps() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (size_t i = 1; i + 1 < root.size(); ++i) feed->put(root.get(i));
  const auto before_last = std::chrono::steady_clock::now();
  feed->put(root.get(root.size() - 1));
  const auto after_last = std::chrono::steady_clock::now();
  mtc::test::expect_same_structure_same_tensors(handle.get(), c10::IValue(root));
  const auto after_get = std::chrono::steady_clock::now();
  EXPECT_GE(handle.stats().feed_sleeps, 1);
  EXPECT_EQ(handle.stats().feed_sleeps, feed->sleeps());
  // The tail runs from the last element's arrival (the walk had begun long before) to the walk's
  // end, which came before get() returned.
  EXPECT_GE(feed->completed_at(), before_last);
  EXPECT_LE(feed->completed_at(), after_last);
  EXPECT_GT(handle.stats().feed_tail_us, 0);
  EXPECT_LE(handle.stats().feed_tail_us, micros_between(before_last, after_get));
}

TEST(RootFeed, TasksLeftQueuedHoldNoReferenceToTheRootsTensors) {
  // Every worker blocked: the copy runs in get(), its walk split, its helpers' tasks queued and
  // never run before the handle is gone. A tensor held past its handle would die later on a
  // worker, and a tensor with a Python object takes the GIL there.
  const Watchdog watchdog(kLimit, "a fed copy behind blocked workers");
  const c10::impl::GenericList root = root_of(16, 40);
  mtc::set_walk_split(1, 1);
  {
    mtc::test::PoolBlocker blocker(mtc::detail::worker_pool_for(kCpu));
    auto feed = std::make_shared<RootFeed>(16);
    const std::weak_ptr<RootFeed> watch = feed;
    mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
    feed_all(*feed, root, std::chrono::microseconds(0));
    feed.reset();
    mtc::test::expect_same_structure_same_tensors(handle.get(), c10::IValue(root));
    EXPECT_EQ(handle.stats().walk_threads, 1);  // nobody helped
    handle = mtc::CopyHandle();
    // The feed holds the root and with it every element's tensors.
    EXPECT_TRUE(watch.expired()) << "a queued task still holds the feed";
  }
  mtc::set_walk_split(256, 128);
}

// The feeder drops the handle of another copy while every worker waits in the fed copy's walk
// for elements only the feeder can put, and a task ahead of that copy's outlasts the drop's spin:
// the drop runs the unclaimed copy itself, as get() would, rather than sleep until a worker takes
// it (none would: they all wait for the feeder).
TEST(RootFeed, ItsFeederDropsACopyNoWorkerCanTake) {
  const Watchdog watchdog(kLimit, "a copy dropped by the thread every worker waits for");
  // 2,048 leaves: split among as many threads as the pool has, up to 15.
  const c10::impl::GenericList root = root_of(32, 64);
  auto feed = std::make_shared<RootFeed>(static_cast<int64_t>(root.size()));
  mtc::CopyHandle fed = start_copy(feed, kCpu, CopyOptions{}, nullptr);
  feed->put(root.get(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the workers joined and wait
  mtc::detail::worker_pool_for(kCpu).submit(
      [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }, /*starts_copy=*/false);
  const c10::impl::GenericList other = root_of(2, 2);
  { const mtc::CopyHandle dropped = start_copy(c10::IValue(other), kCpu); }
  for (size_t i = 1; i < root.size(); ++i) feed->put(root.get(i));
  mtc::test::expect_same_structure_same_tensors(fed.get(), c10::IValue(root));
}

// Every thread's CPU time so far.
std::chrono::nanoseconds process_cpu_time() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

// Whether the copy's threads went to wait for elements of `feed` `sleeps` times within 30 s.
bool feed_sleeps_reach(const RootFeed& feed, int64_t sleeps) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (feed.sleeps() < sleeps && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return feed.sleeps() >= sleeps;
}

// The walk's own thread is done with its elements while a helper waits for one the feeder is
// slow to put (Python code in the binding's walk, a garbage collection): the walk's thread waits
// for the helper without keeping a core busy through the stall.
TEST(RootFeed, TheWalksThreadSleepsWhileAHelperWaitsForAStalledElement) {
  const Watchdog watchdog(kLimit, "a split walk behind a stalled feed");
  mtc::detail::WorkerPool& pool = mtc::detail::worker_pool_for(kCpu);
  if (pool.size() < 2) GTEST_SKIP() << "needs two workers: the walk's own thread and a helper";
  // Element 0 is walked before the split, 1 by the walk's thread and 2 by its one helper.
  const c10::impl::GenericList root = root_of(3, 40);
  mtc::set_walk_split(1, 1);
  auto feed = std::make_shared<RootFeed>(3);
  feed->put(root.get(0));
  mtc::CopyHandle handle;
  {
    // The one worker left free takes up the copy and takes element 1 before the helper task,
    // queued behind the blocked workers, can run.
    mtc::test::PoolBlocker blocker(pool, /*queued_behind=*/0, /*left_free=*/1);
    handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
    const bool walk_waits = feed_sleeps_reach(*feed, 1);
    mtc::set_walk_split(256, 128);  // the defaults again: the copy has split its walk by now
    if (!walk_waits) {
      feed->abandon();  // the handle must not wait for elements that never come
      FAIL() << "the walk's thread never waited for element 1";
    }
  }
  if (!feed_sleeps_reach(*feed, 2)) {
    feed->abandon();
    FAIL() << "no helper waited for element 2";
  }
  constexpr auto kStall = std::chrono::milliseconds(400);
  const auto cpu_before = process_cpu_time();
  const auto before = std::chrono::steady_clock::now();
  feed->put(root.get(1));
  std::this_thread::sleep_for(kStall);
  const auto cpu_in_stall = process_cpu_time() - cpu_before;
  const auto stall = std::chrono::steady_clock::now() - before;
  feed->put(root.get(2));
  mtc::test::expect_same_structure_same_tensors(handle.get(), c10::IValue(root));
  // The walk's thread waited for the helper through the stall ...
  EXPECT_GE(handle.stats().split_wait_us, 1e3 * static_cast<double>(kStall.count()) / 2);
  // ... and a core kept busy through it would count about as much CPU time as the stall lasted.
  // The threads' bounded spins (the walk's thread's before it sleeps, the helper's for its element,
  // idle workers') take well under a millisecond each.
  EXPECT_LT(cpu_in_stall, stall / 4)
      << "CPU time " << std::chrono::duration<double, std::milli>(cpu_in_stall).count()
      << " ms in a stall of " << std::chrono::duration<double, std::milli>(stall).count() << " ms";
}

TEST(RootFeed, PutsBeyondItsSizeOrAfterAbandonAreRefused) {
  RootFeed feed(1);
  feed.put(c10::IValue(int64_t{1}));
  expect_throws_with([&] { feed.put(c10::IValue(int64_t{2})); }, "one too many");
  RootFeed abandoned(2);
  abandoned.abandon();
  expect_throws_with([&] { abandoned.put(c10::IValue(int64_t{1})); }, "after abandon()");
  expect_throws_with([] { RootFeed negative(-1); }, "negative");
}

TEST(RootFeed, NeedsTheBackgroundThreadAndAFeed) {
  CopyOptions inline_copy;
  inline_copy.use_background_thread = false;
  expect_throws_with([&] { start_copy(std::make_shared<RootFeed>(1), kCpu, inline_copy, nullptr); },
                     "use_background_thread");
  expect_throws_with([] { start_copy(std::shared_ptr<RootFeed>(), kCpu, CopyOptions{}, nullptr); },
                     "null");
}

TEST(RootFeed, OnlyItsOwnThreadFeedsItUntilEveryElementIsThere) {
  RootFeed feed(2);
  EXPECT_TRUE(feed.fed_by_this_thread());
  bool elsewhere = true;
  std::thread([&] { elsewhere = feed.fed_by_this_thread(); }).join();
  EXPECT_FALSE(elsewhere);
  feed.put(c10::IValue());
  EXPECT_TRUE(feed.fed_by_this_thread());
  feed.put(c10::IValue());
  EXPECT_FALSE(feed.fed_by_this_thread());
  EXPECT_TRUE(feed.wait_for(1));
  RootFeed abandoned(1);
  abandoned.abandon();
  EXPECT_FALSE(abandoned.fed_by_this_thread());
  EXPECT_FALSE(abandoned.wait_for(0));
}

class RootFeedGpu : public mtc::test::GpuTest {};

TEST_F(RootFeedGpu, AFedReferenceBatchIsCopiedAsAWholeOne) {
  const Watchdog watchdog(kLimit, "a fed copy to a GPU");
  const c10::Device target(c10::kCUDA, 0);
  const c10::IValue batch = mtc::test::reference_batch();
  const c10::impl::GenericList root = batch.toList();
  for (const auto gap : {std::chrono::microseconds(0), std::chrono::microseconds(100)}) {
    auto feed = std::make_shared<RootFeed>(static_cast<int64_t>(root.size()));
    mtc::CopyHandle handle = start_copy(feed, target, CopyOptions{}, nullptr);
    feed_all(*feed, root, gap);
    mtc::test::expect_structure_copy(handle.get(), batch, target);
    EXPECT_EQ(handle.stats().tensors, 528);
  }
  // Abandoned part way: what was queued completes before the handle lets its staging go.
  auto feed = std::make_shared<RootFeed>(static_cast<int64_t>(root.size()));
  mtc::CopyHandle handle = start_copy(feed, target, CopyOptions{}, nullptr);
  for (size_t i = 0; i < 5; ++i) feed->put(root.get(i));
  feed->abandon();
  expect_throws_with([&] { handle.get(); }, "never came");
}

}  // namespace
