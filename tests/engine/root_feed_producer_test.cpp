// A fed root whose elements the copy's own threads may make (mtc::RootFeed with a producer):
// whoever claims an element first puts it or declines it to the feeder, every element arrives
// once, and the feeder's wait_settled() returns only when no producer is still at work.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/arange.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu_test_support.h"
#include "mtc/copier.h"
#include "watchdog.h"

namespace {

using mtc::CopyOptions;
using mtc::RootFeed;
using mtc::start_copy;
using mtc::test::expect_throws_with;
using mtc::test::kCpu;
using mtc::test::Watchdog;

constexpr std::chrono::seconds kLimit{60};

// `elements` root elements, each a list of `per_element` small tensors.
c10::impl::GenericList root_of(int64_t elements, int64_t per_element) {
  c10::impl::GenericList root(c10::AnyType::get());
  for (int64_t e = 0; e < elements; ++e) {
    c10::impl::GenericList element(c10::AnyType::get());
    for (int64_t k = 0; k < per_element; ++k)
      element.push_back(at::arange(e * 100 + k, e * 100 + k + 1 + k % 5));
    root.push_back(std::move(element));
  }
  return root;
}

// The feeder's part: claims from the last element back, produces what it claimed with
// `produce_here`, waits for the producers, then puts whatever was declined.
void feed_as_binding(RootFeed& feed, const c10::impl::GenericList& root,
                     const std::function<bool(int64_t)>& produce_here) {
  for (int64_t i = feed.size(); i-- > 0;)
    if (feed.claim(i) && !produce_here(i)) feed.decline(i);
  feed.wait_settled();
  for (int64_t i = 0; i < feed.size(); ++i)
    if (feed.declined(i)) feed.put_at(i, root.get(static_cast<size_t>(i)));
}

TEST(RootFeedProducer, EveryElementArrivesOnceWhoeverMakesIt) {
  const Watchdog watchdog(kLimit, "a fed copy with a producer");
  // Small (one walking thread) and large enough for a walk in parts (16 x 40 leaves).
  for (const int64_t per_element : {2, 40}) {
    const c10::impl::GenericList root = root_of(16, per_element);
    std::atomic<int64_t> made_by_workers{0};
    std::shared_ptr<RootFeed> feed;
    feed = std::make_shared<RootFeed>(16, [&](int64_t i) {
      made_by_workers.fetch_add(1);
      feed->put_at(i, root.get(static_cast<size_t>(i)));
      return true;
    });
    mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
    int64_t made_here = 0;
    feed_as_binding(*feed, root, [&](int64_t i) {
      ++made_here;
      feed->put_at(i, root.get(static_cast<size_t>(i)));
      return true;
    });
    EXPECT_EQ(feed->arrived(), 16);
    mtc::test::expect_same_structure_same_tensors(handle.get(), c10::IValue(root));
    EXPECT_EQ(made_by_workers.load() + made_here, 16);
    EXPECT_EQ(handle.stats().feed_produced, made_by_workers.load());
    EXPECT_EQ(handle.stats().feed_declined, 0);
  }
}

TEST(RootFeedProducer, DeclinedAndFailedElementsAreLeftToTheFeeder) {
  const Watchdog watchdog(kLimit, "declined elements");
  const c10::impl::GenericList root = root_of(16, 40);
  std::atomic<int64_t> put{0};
  std::atomic<int64_t> refused{0};
  std::shared_ptr<RootFeed> feed;
  feed = std::make_shared<RootFeed>(16, [&](int64_t i) {
    if (i % 3 != 0) refused.fetch_add(1);
    if (i % 3 == 1) return false;
    if (i % 3 == 2) throw std::runtime_error("a producer that fails");
    put.fetch_add(1);
    feed->put_at(i, root.get(static_cast<size_t>(i)));
    return true;
  });
  mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
  // The feeder declines what it claims too, and puts everything declined at the end.
  feed_as_binding(*feed, root, [](int64_t) { return false; });
  mtc::test::expect_same_structure_same_tensors(handle.get(), c10::IValue(root));
  const mtc::CopyStats stats = handle.stats();
  EXPECT_EQ(stats.feed_produced, put.load());
  EXPECT_EQ(stats.feed_declined, refused.load());
  EXPECT_EQ(feed->arrived(), 16);
}

TEST(RootFeedProducer, WaitSettledWaitsForAProducerStillAtWork) {
  const Watchdog watchdog(kLimit, "a slow producer");
  const c10::impl::GenericList root = root_of(16, 40);
  std::atomic<bool> in_producer{false};
  std::atomic<bool> release{false};
  std::shared_ptr<RootFeed> feed;
  feed = std::make_shared<RootFeed>(16, [&](int64_t i) {
    if (!in_producer.exchange(true)) {
      // The first producer holds its element until the feeder has claimed every other.
      while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    feed->put_at(i, root.get(static_cast<size_t>(i)));
    return true;
  });
  mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
  while (!in_producer.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  for (int64_t i = 16; i-- > 0;)
    if (feed->claim(i)) feed->put_at(i, root.get(static_cast<size_t>(i)));
  std::atomic<bool> settled{false};
  std::thread feeder_wait([&] {
    feed->wait_settled();
    settled.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(settled.load()) << "wait_settled() returned while a producer was at work";
  release.store(true);
  feeder_wait.join();
  EXPECT_TRUE(settled.load());
  mtc::test::expect_same_structure_same_tensors(handle.get(), c10::IValue(root));
}

TEST(RootFeedProducer, ClaimsAndPutsAreChecked) {
  const c10::impl::GenericList root = root_of(4, 1);
  RootFeed plain(4);
  EXPECT_FALSE(plain.has_producer());
  EXPECT_FALSE(plain.claim(0));
  EXPECT_THROW(plain.put_at(0, root.get(0)), c10::Error);
  EXPECT_THROW(RootFeed(4, nullptr), c10::Error);

  RootFeed feed(4, [](int64_t) { return false; });
  EXPECT_TRUE(feed.has_producer());
  expect_throws_with([&] { feed.put(root.get(0)); }, "put_at");
  expect_throws_with([&] { feed.put_at(1, root.get(1)); }, "was not claimed");
  EXPECT_TRUE(feed.claim(1));
  EXPECT_FALSE(feed.claim(1));
  EXPECT_FALSE(feed.claim(4));
  EXPECT_FALSE(feed.claim(-1));
  feed.put_at(1, root.get(1));
  expect_throws_with([&] { feed.put_at(1, root.get(1)); }, "was put already");
  EXPECT_FALSE(feed.decline(1));  // put already
  EXPECT_TRUE(feed.claim(2));
  EXPECT_TRUE(feed.decline(2));
  EXPECT_TRUE(feed.declined(2));
  feed.wait_settled();  // both claims settled: returns at once
  feed.put_at(2, root.get(2));
  EXPECT_EQ(feed.arrived(), 2);
  EXPECT_TRUE(feed.claim(3));
  feed.abandon();
  expect_throws_with([&] { feed.put_at(3, root.get(3)); }, "after abandon()");
}

TEST(RootFeedProducer, AnElementDeclinedAndNeverPutFailsTheCopy) {
  const Watchdog watchdog(kLimit, "a declined element never put");
  const c10::impl::GenericList root = root_of(8, 40);
  auto feed = std::make_shared<RootFeed>(8, [](int64_t) { return false; });
  mtc::CopyHandle handle = start_copy(feed, kCpu, CopyOptions{}, nullptr);
  for (int64_t i = 8; i-- > 0;)
    if (feed->claim(i)) feed->decline(i);
  feed->wait_settled();
  feed->put_at(0, root.get(0));
  feed->abandon();
  expect_throws_with([&] { handle.get(); }, "never came");
}

}  // namespace
