// The pinned pools of several devices (PinnedPoolSet): each keeps its own blocks and statistics,
// the process-wide calls reach them all, and no pool holds its lock while its SlabSource
// allocates or frees (cudaHostAlloc, cudaFreeHost: milliseconds). Over plain host memory: no
// GPU needed.
#include "detail/pinned_pool_set.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "fake_slabs.h"

namespace mtc::detail {
namespace {

using test::FakeSlabs;

constexpr int64_t kMiB = 1024 * 1024;

class PinnedPoolSetTest : public test::FakeSlabsTest {};

TEST_F(PinnedPoolSetTest, EachDeviceKeepsItsOwnBlocksAndStatistics) {
  PinnedPoolSet pools(FakeSlabs::source());
  EXPECT_NE(&pools.for_device(0), &pools.for_device(1));
  EXPECT_EQ(&pools.for_device(1), &pools.for_device(1));
  const PinnedBlock a = pools.for_device(0).acquire(kMiB);
  const PinnedBlock b = pools.for_device(1).acquire(3 * kMiB);
  const PinnedBlock c = pools.for_device(1).acquire(kMiB);
  EXPECT_EQ(a.pool, &pools.for_device(0));
  EXPECT_EQ(b.pool, &pools.for_device(1));

  const PinnedPoolStats zero = pools.stats(0);
  const PinnedPoolStats one = pools.stats(1);
  EXPECT_EQ(zero.in_use_bytes, kMiB);
  EXPECT_EQ(zero.slabs, 1);
  EXPECT_EQ(one.in_use_bytes, 4 * kMiB);
  EXPECT_EQ(one.slabs, 2);
  EXPECT_EQ(pools.stats(2).reserved_bytes, 0) << "a device no copy used has no pool";
  EXPECT_EQ(pools.stats(2).slab_allocations, 0);

  const PinnedPoolStats all = pools.stats();
  EXPECT_EQ(all.in_use_bytes, zero.in_use_bytes + one.in_use_bytes);
  EXPECT_EQ(all.reserved_bytes, zero.reserved_bytes + one.reserved_bytes);
  EXPECT_EQ(all.peak_in_use_bytes, zero.peak_in_use_bytes + one.peak_in_use_bytes);
  EXPECT_EQ(all.slabs, 3);
  EXPECT_EQ(all.slab_allocations, 3);

  // A block goes back to the pool it came from, and only that one.
  PinnedPool::give_back(b);
  EXPECT_EQ(pools.stats(1).in_use_bytes, kMiB);
  EXPECT_EQ(pools.stats(0).in_use_bytes, kMiB);
  PinnedPool::give_back(PinnedBlock{});  // nothing
  PinnedPool::give_back(a);
  PinnedPool::give_back(c);
  EXPECT_EQ(pools.stats().in_use_bytes, 0);
}

TEST_F(PinnedPoolSetTest, AnIdlePoolMergesWhileAnotherDeviceHasCopiesInFlight) {
  // One pool for every GPU merged its slabs only when no GPU had staging in flight.
  PinnedPoolSet pools(FakeSlabs::source());
  const PinnedBlock busy = pools.for_device(1).acquire(kMiB);
  PinnedPool& zero = pools.for_device(0);
  std::vector<PinnedBlock> held;
  for (int i = 0; i < 4; ++i) held.push_back(zero.acquire(kMiB));
  EXPECT_GT(pools.stats(0).slabs, 1);
  for (const PinnedBlock& b : held) PinnedPool::give_back(b);
  PinnedPool::give_back(zero.acquire(kMiB));
  EXPECT_EQ(pools.stats(0).slabs, 1) << "device 0's pool did not merge its idle slabs";
  PinnedPool::give_back(busy);
}

TEST_F(PinnedPoolSetTest, TheLimitIsEachPoolsAndReachesPoolsMadeLater) {
  PinnedPoolSet pools(FakeSlabs::source(), 2 * kMiB);
  EXPECT_EQ(pools.stats().limit_bytes, 2 * kMiB);
  EXPECT_EQ(pools.stats(5).limit_bytes, 2 * kMiB);
  const PinnedBlock a = pools.for_device(0).acquire(2 * kMiB);
  const PinnedBlock b = pools.for_device(1).acquire(2 * kMiB);  // its own 2 MiB
  EXPECT_THROW(pools.for_device(1).acquire(kMiB), c10::Error);
  pools.set_limit(8 * kMiB);
  EXPECT_EQ(pools.for_device(0).stats().limit_bytes, 8 * kMiB);
  EXPECT_EQ(pools.for_device(3).stats().limit_bytes, 8 * kMiB);
  const PinnedBlock c = pools.for_device(1).acquire(kMiB);
  for (const PinnedBlock& blk : {a, b, c}) PinnedPool::give_back(blk);
  EXPECT_THROW(pools.set_limit(-1), c10::Error);
}

TEST_F(PinnedPoolSetTest, ReleaseIdleAndResetPeaksReachEveryPool) {
  PinnedPoolSet pools(FakeSlabs::source());
  PinnedPool::give_back(pools.for_device(0).acquire(kMiB));
  PinnedPool::give_back(pools.for_device(4).acquire(2 * kMiB));
  const PinnedPoolStats before = pools.stats();
  EXPECT_GT(before.peak_in_use_bytes, 0);
  pools.reset_peaks();
  EXPECT_EQ(pools.stats().peak_in_use_bytes, 0);
  EXPECT_EQ(pools.release_idle(), before.reserved_bytes);
  EXPECT_EQ(pools.stats().reserved_bytes, 0);
  EXPECT_TRUE(FakeSlabs::live.empty());
}

TEST_F(PinnedPoolSetTest, RejectsANegativeDeviceIndex) {
  PinnedPoolSet pools(FakeSlabs::source());
  EXPECT_THROW(pools.for_device(-1), c10::Error);
  EXPECT_THROW(pools.stats(-1), c10::Error);
  EXPECT_NO_THROW(pools.for_device(PinnedPoolSet::kMaxDevices - 1));
}

// A SlabSource whose next allocation or free waits until the test opens it, so the test can act
// on the pool while the source is busy.
struct GatedSlabs {
  static inline std::mutex mutex;
  static inline std::condition_variable changed;
  static inline bool gate_allocate = false;
  static inline bool gate_free = false;
  static inline bool inside = false;  // a call is waiting at the gate

  static void wait_at_gate(bool& gated) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!gated) return;
    inside = true;
    changed.notify_all();
    changed.wait(lock, [&] { return !gated; });
    inside = false;
  }
  static void* allocate(int64_t bytes) {
    wait_at_gate(gate_allocate);
    return FakeSlabs::allocate(bytes);
  }
  static void free(void* base) noexcept {
    wait_at_gate(gate_free);
    FakeSlabs::free(base);
  }
  static SlabSource source() { return SlabSource{&GatedSlabs::allocate, &GatedSlabs::free}; }
  static void until_inside() {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [] { return inside; }));
  }
  static void open() {
    std::lock_guard<std::mutex> lock(mutex);
    gate_allocate = gate_free = false;
    changed.notify_all();
  }
};

// Runs `work` on another thread and expects it to finish while the source waits at its gate.
void expect_done_meanwhile(const std::function<void()>& work, const char* what) {
  auto done = std::async(std::launch::async, work);
  EXPECT_EQ(done.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << what << " waited for a slab allocation or free of the same pool";
  if (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) GatedSlabs::open();
  done.get();
}

TEST_F(PinnedPoolSetTest, APoolServesOthersWhileItsSourceAllocates) {
  PinnedPool pool(GatedSlabs::source());
  const PinnedBlock held = pool.acquire(kMiB);
  const PinnedBlock spare = pool.acquire(1024);  // same slab, returned while the source waits
  {
    std::lock_guard<std::mutex> lock(GatedSlabs::mutex);
    GatedSlabs::gate_allocate = true;
  }
  auto grower = std::async(std::launch::async, [&pool] { return pool.acquire(64 * kMiB); });
  GatedSlabs::until_inside();
  expect_done_meanwhile([&] { pool.release(spare); }, "release");
  expect_done_meanwhile([&] { (void)pool.stats(); }, "stats");
  expect_done_meanwhile([&] { pool.release(pool.acquire(1024)); }, "a request that fits");
  EXPECT_GE(pool.stats().reserved_bytes, 64 * kMiB) << "the slab being allocated is counted";
  GatedSlabs::open();
  const PinnedBlock grown = grower.get();
  EXPECT_EQ(grown.bytes, 64 * kMiB);
  pool.release(grown);
  pool.release(held);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

// Asks `pool` for `first` bytes and, while the source allocates the slab for them, for `second`
// bytes on another thread; returns both blocks once the source went on.
std::pair<PinnedBlock, PinnedBlock> two_requests_while_growing(PinnedPool& pool, int64_t first,
                                                               int64_t second) {
  {
    std::lock_guard<std::mutex> lock(GatedSlabs::mutex);
    GatedSlabs::gate_allocate = true;
  }
  auto a = std::async(std::launch::async, [&pool, first] { return pool.acquire(first); });
  GatedSlabs::until_inside();
  auto b = std::async(std::launch::async, [&pool, second] { return pool.acquire(second); });
  // Time for the second request to reach the pool: had it gone to allocate, it would now be at
  // the closed gate as well.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  GatedSlabs::open();
  return {a.get(), b.get()};
}

// The workers of one copy ask for staging at the same moment: while one of them allocates a
// slab sized for everything in flight, the others wait for it rather than each allocating one
// (on an H200 host they made a slab allocation per copy, and the pool never settled).
TEST_F(PinnedPoolSetTest, RequestsThatDoNotFitWaitForTheSlabBeingAllocated) {
  PinnedPool pool(GatedSlabs::source());
  const auto [a, b] = two_requests_while_growing(pool, kMiB, 64 * 1024);
  EXPECT_EQ(pool.stats().slab_allocations, 1) << "the second request allocated a slab of its own";
  EXPECT_EQ(a.slab, b.slab);
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

// A request that waited for another's slab and still does not fit adds its own.
TEST_F(PinnedPoolSetTest, ARequestLargerThanTheSlabItWaitedForAddsItsOwn) {
  PinnedPool pool(GatedSlabs::source());
  const auto [a, b] = two_requests_while_growing(pool, kMiB, 8 * kMiB);
  EXPECT_EQ(b.bytes, 8 * kMiB);
  EXPECT_NE(a.slab, b.slab);
  EXPECT_EQ(pool.stats().slab_allocations, 2);
  pool.release(a);
  pool.release(b);
}

TEST_F(PinnedPoolSetTest, APoolServesOthersWhileItsSourceFrees) {
  PinnedPool pool(GatedSlabs::source());
  const PinnedBlock held = pool.acquire(kMiB);
  const PinnedBlock idle = pool.acquire(64 * kMiB);  // a second slab
  pool.release(idle);
  {
    std::lock_guard<std::mutex> lock(GatedSlabs::mutex);
    GatedSlabs::gate_free = true;
  }
  auto releaser = std::async(std::launch::async, [&pool] { return pool.release_idle(); });
  GatedSlabs::until_inside();
  expect_done_meanwhile([&] { (void)pool.stats(); }, "stats");
  expect_done_meanwhile([&] { pool.release(pool.acquire(1024)); }, "a request that fits");
  GatedSlabs::open();
  EXPECT_GT(releaser.get(), 64 * kMiB - 1);
  pool.release(held);
}

}  // namespace
}  // namespace mtc::detail
