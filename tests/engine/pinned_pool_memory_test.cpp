// What the pinned pool does when host memory runs out inside its own bookkeeping: release
// allocates nothing (it runs in destructors and completion callbacks, where a throw ends the
// process), and a request that fails leaves the pool as it was: no extent lost from a slab, no
// slab allocated and left out of the books. No GPU needed; skipped under a sanitizer, whose
// runtime owns operator new (failing_new.h).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "detail/pinned_pool.h"
#include "failing_new.h"

namespace mtc::detail {
namespace {

using mtc::test::NextAllocationFails;

// Slabs from aligned_alloc, counted without operator new, so that the one allocation made to fail
// is the pool's own.
struct QuietSlabs {
  static inline std::atomic<int> live{0};
  static void* allocate(int64_t bytes) {
    void* p = std::aligned_alloc(4096, static_cast<size_t>((bytes + 4095) / 4096 * 4096));
    if (p == nullptr) throw std::bad_alloc();
    live.fetch_add(1);
    return p;
  }
  static void free(void* base) noexcept {
    live.fetch_sub(1);
    std::free(base);
  }
  static SlabSource source() { return SlabSource{&QuietSlabs::allocate, &QuietSlabs::free}; }
};

class PinnedPoolMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NextAllocationFails::available()) GTEST_SKIP() << NextAllocationFails::kUnavailable;
  }
};

TEST_F(PinnedPoolMemoryTest, ReleasesAllocateNothing) {
  PinnedPool pool(QuietSlabs::source());
  pool.release(pool.acquire(64 * 1024));  // one slab, idle again
  // Every other block goes first: each release then starts an extent of its own (no neighbour
  // is free), the case that needs a node in the free list.
  std::vector<PinnedBlock> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(pool.acquire(256));
  for (size_t pass : {0, 1}) {
    const NextAllocationFails failure;
    for (size_t i = pass; i < blocks.size(); i += 2) pool.release(blocks[i]);
    EXPECT_FALSE(failure.fired()) << "a release allocated (pass " << pass << ")";
  }
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
  const PinnedBlock whole = pool.acquire(64 * 1024);
  EXPECT_EQ(whole.slab, 0) << "the freed blocks did not join into the slab's one extent";
  pool.release(whole);
  EXPECT_EQ(pool.stats().slab_allocations, 1);
}

TEST_F(PinnedPoolMemoryTest, ARequestThatRunsOutOfMemoryLeavesThePoolAsItWas) {
  const int live_before = QuietSlabs::live.load();
  {
    PinnedPool pool(QuietSlabs::source());
    {
      const NextAllocationFails failure;  // the first request: nothing there yet
      EXPECT_THROW(pool.acquire(4096), std::bad_alloc);
      EXPECT_TRUE(failure.fired());
    }
    EXPECT_EQ(QuietSlabs::live.load(), live_before) << "a slab was allocated and lost";
    EXPECT_EQ(pool.stats().reserved_bytes, 0);
    EXPECT_EQ(pool.stats().slabs, 0);

    pool.release(pool.acquire(64 * 1024));
    std::vector<PinnedBlock> held;
    held.reserve(200);
    // Requests that each need room made ahead for their release: some of them fail part way.
    int failed = 0;
    for (int i = 0; i < 200; ++i) {
      const NextAllocationFails failure;
      try {
        held.push_back(pool.acquire(256));
      } catch (const std::bad_alloc&) {
        ++failed;
      }
    }
    EXPECT_GT(failed, 0) << "no request allocated: the test tests nothing";
    for (const PinnedBlock& b : held) pool.release(b);
    EXPECT_EQ(pool.stats().in_use_bytes, 0);
    // Nothing of the slab was lost: the whole of it is one block again, from the same slab.
    const PinnedBlock whole = pool.acquire(64 * 1024);
    EXPECT_EQ(whole.slab, 0);
    pool.release(whole);
    EXPECT_EQ(pool.stats().slab_allocations, 1);
  }
  EXPECT_EQ(QuietSlabs::live.load(), live_before);
}

TEST_F(PinnedPoolMemoryTest, AFailedRequestBesideIdleSlabsLosesNone) {
  const int live_before = QuietSlabs::live.load();
  {
    PinnedPool pool(QuietSlabs::source());
    // Two slabs, both idle: the next request merges them into one.
    const PinnedBlock a = pool.acquire(64 * 1024);
    const PinnedBlock b = pool.acquire(1024 * 1024);
    ASSERT_NE(a.slab, b.slab);
    pool.release(a);
    pool.release(b);
    ASSERT_EQ(pool.stats().slabs, 2);
    {
      const NextAllocationFails failure;
      EXPECT_THROW(pool.acquire(256), std::bad_alloc);
    }
    EXPECT_EQ(QuietSlabs::live.load() - live_before, pool.stats().slabs)
        << "slabs in memory and in the pool's books differ";
    pool.release(pool.acquire(256));  // the merge, this time without a failure
    EXPECT_EQ(QuietSlabs::live.load() - live_before, pool.stats().slabs);
  }
  EXPECT_EQ(QuietSlabs::live.load(), live_before);
}

}  // namespace
}  // namespace mtc::detail
