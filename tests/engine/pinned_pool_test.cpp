// PinnedPool's carving logic over plain host memory (an injected SlabSource): blocks, rounding,
// coalescing, failures and threads. How the pool sizes itself is in pinned_pool_sizing_test.cpp.
// No GPU needed.
#include "detail/pinned_pool.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "fake_slabs.h"

namespace mtc::detail {
namespace {

using test::FakeSlabs;

constexpr int64_t kMiB = 1024 * 1024;

// The size of a slab made for `demand` bytes in flight: the demand plus an eighth, in pages.
int64_t slab_for(int64_t demand) { return (demand + demand / 8 + 4095) / 4096 * 4096; }

// A pool whose first slab is made for `bytes` and is idle again: blocks carved after this come
// from that one slab, one behind the other.
void presize(PinnedPool& pool, int64_t bytes) { pool.release(pool.acquire(bytes)); }

class PinnedPoolTest : public test::FakeSlabsTest {};

TEST_F(PinnedPoolTest, StartsEmpty) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedPoolStats s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.in_use_bytes, 0);
  EXPECT_EQ(s.slabs, 0);
  EXPECT_EQ(s.slab_allocations, 0);
  EXPECT_TRUE(FakeSlabs::allocated_sizes.empty());
}

TEST_F(PinnedPoolTest, RequestsRoundUpToTheGranularity) {
  PinnedPool pool(FakeSlabs::source());
  EXPECT_EQ(PinnedPool::kGranularity, 256);
  const PinnedBlock a = pool.acquire(1);
  const PinnedBlock b = pool.acquire(256);
  const PinnedBlock c = pool.acquire(257);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a.bytes, 256);
  EXPECT_EQ(b.bytes, 256);
  EXPECT_EQ(c.bytes, 512);
  EXPECT_EQ(pool.stats().in_use_bytes, 1024);
  // Blocks are disjoint, granularity-aligned slices of one slab.
  EXPECT_EQ(a.slab, 0);
  EXPECT_EQ(b.slab, 0);
  EXPECT_EQ(c.slab, 0);
  for (const PinnedBlock* blk : {&a, &b, &c})
    EXPECT_EQ(reinterpret_cast<uintptr_t>(blk->data) % PinnedPool::kGranularity, 0u);
  EXPECT_GE(b.data, a.data + a.bytes);
  EXPECT_GE(c.data, b.data + b.bytes);
  pool.release(a);
  pool.release(b);
  pool.release(c);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

TEST_F(PinnedPoolTest, FirstSlabFitsItsRequestPlusAnEighthInPages) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedBlock a = pool.acquire(1000);
  ASSERT_EQ(FakeSlabs::allocated_sizes.size(), 1u);
  EXPECT_EQ(FakeSlabs::allocated_sizes[0], 4096);  // 1,024 + 128 bytes, in whole pages
  const PinnedPoolStats s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, 4096);
  EXPECT_EQ(s.slabs, 1);
  EXPECT_EQ(s.slab_allocations, 1);
  EXPECT_EQ(s.in_use_bytes, 1024);
  pool.release(a);
}

TEST_F(PinnedPoolTest, ANewSlabHasRoomForEverythingInFlight) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedBlock big = pool.acquire(9 * kMiB + 1);
  ASSERT_EQ(FakeSlabs::allocated_sizes.size(), 1u);
  EXPECT_EQ(big.bytes, 9 * kMiB + 256);
  EXPECT_EQ(FakeSlabs::allocated_sizes[0], slab_for(9 * kMiB + 256));
  // Does not fit what is left: the next slab is made for both blocks.
  const PinnedBlock next = pool.acquire(2 * kMiB);
  ASSERT_EQ(FakeSlabs::allocated_sizes.size(), 2u);
  EXPECT_EQ(FakeSlabs::allocated_sizes[1], slab_for(11 * kMiB + 256));
  EXPECT_EQ(next.slab, 1);
  EXPECT_EQ(pool.stats().reserved_bytes,
            FakeSlabs::allocated_sizes[0] + FakeSlabs::allocated_sizes[1]);
  pool.release(big);
  pool.release(next);
}

TEST_F(PinnedPoolTest, ReleasedMemoryIsReusedWithoutANewSlab) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedBlock a = pool.acquire(4096);
  std::byte* const first = a.data;
  pool.release(a);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
  for (int i = 0; i < 1000; ++i) {
    const PinnedBlock b = pool.acquire(4096);
    EXPECT_EQ(b.data, first) << "iteration " << i;
    pool.release(b);
  }
  EXPECT_EQ(pool.stats().slab_allocations, 1);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

TEST_F(PinnedPoolTest, ASlabFilledExactlyNeedsNoSecondSlab) {
  PinnedPool pool(FakeSlabs::source());
  presize(pool, 8 * kMiB);
  const int64_t slab = pool.stats().reserved_bytes;
  ASSERT_EQ(slab % kMiB, 0) << "the test wants a slab of whole MiB";
  std::vector<PinnedBlock> blocks;
  for (int64_t i = 0; i < slab / kMiB; ++i) blocks.push_back(pool.acquire(kMiB));
  EXPECT_EQ(pool.stats().slab_allocations, 1);
  EXPECT_EQ(pool.stats().in_use_bytes, slab);
  // Full: the next byte needs a new slab.
  const PinnedBlock extra = pool.acquire(1);
  EXPECT_EQ(pool.stats().slab_allocations, 2);
  EXPECT_EQ(extra.slab, 1);
  pool.release(extra);
  for (const PinnedBlock& b : blocks) pool.release(b);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

// Every order of releasing three neighbours must coalesce back into one free extent: afterwards
// the whole slab can be handed out again as a single block.
TEST_F(PinnedPoolTest, NeighboursCoalesceInEveryReleaseOrder) {
  std::vector<int> order{0, 1, 2};
  do {
    SCOPED_TRACE(::testing::Message() << "release order " << order[0] << order[1] << order[2]);
    PinnedPool pool(FakeSlabs::source());
    presize(pool, 8 * kMiB);
    // Three blocks that together with the tail cover the slab.
    const PinnedBlock blocks[3] = {pool.acquire(kMiB), pool.acquire(3 * kMiB),
                                   pool.acquire(512 * 1024)};
    EXPECT_EQ(blocks[1].data, blocks[0].data + blocks[0].bytes);
    EXPECT_EQ(blocks[2].data, blocks[1].data + blocks[1].bytes);
    for (const int i : order) pool.release(blocks[i]);
    EXPECT_EQ(pool.stats().in_use_bytes, 0);
    const PinnedBlock whole = pool.acquire(pool.stats().reserved_bytes);
    EXPECT_EQ(whole.data, blocks[0].data);
    EXPECT_EQ(whole.slab, 0);
    EXPECT_EQ(pool.stats().slab_allocations, 1) << "the freed extents did not coalesce";
    pool.release(whole);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(PinnedPoolTest, HoleIsReusedFirstFit) {
  PinnedPool pool(FakeSlabs::source());
  presize(pool, 8 * kMiB);
  const PinnedBlock a = pool.acquire(kMiB);
  const PinnedBlock b = pool.acquire(kMiB);
  const PinnedBlock c = pool.acquire(kMiB);
  pool.release(b);
  // A request that fits the hole goes there; a larger one goes behind c.
  const PinnedBlock small = pool.acquire(512 * 1024);
  EXPECT_EQ(small.data, b.data);
  const PinnedBlock large = pool.acquire(2 * kMiB);
  EXPECT_EQ(large.data, c.data + c.bytes);
  // The rest of the hole is still free and usable.
  const PinnedBlock rest = pool.acquire(512 * 1024);
  EXPECT_EQ(rest.data, b.data + 512 * 1024);
  EXPECT_EQ(pool.stats().slab_allocations, 1);
  for (const PinnedBlock& blk : {a, c, small, large, rest}) pool.release(blk);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
  const PinnedBlock whole = pool.acquire(pool.stats().reserved_bytes);
  EXPECT_EQ(whole.data, a.data);
  EXPECT_EQ(pool.stats().slab_allocations, 1);
  pool.release(whole);
}

TEST_F(PinnedPoolTest, BlocksAreUsableMemory) {
  PinnedPool pool(FakeSlabs::source());
  std::vector<PinnedBlock> blocks;
  for (int i = 0; i < 20; ++i) {
    blocks.push_back(pool.acquire(1000 + i * 3000));
    std::memset(blocks.back().data, i, static_cast<size_t>(blocks.back().bytes));
  }
  for (int i = 0; i < 20; ++i) {
    const PinnedBlock& b = blocks[i];
    EXPECT_TRUE(std::all_of(b.data, b.data + b.bytes,
                            [i](std::byte x) { return x == static_cast<std::byte>(i); }))
        << "block " << i << " overlaps another";
  }
  for (const PinnedBlock& b : blocks) pool.release(b);
}

TEST_F(PinnedPoolTest, InvalidRequestsThrow) {
  PinnedPool pool(FakeSlabs::source());
  EXPECT_THROW(pool.acquire(0), c10::Error);
  EXPECT_THROW(pool.acquire(-256), c10::Error);
  EXPECT_EQ(pool.stats().slab_allocations, 0);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

TEST_F(PinnedPoolTest, ReleasingAnEmptyBlockDoesNothing) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedBlock a = pool.acquire(100);
  pool.release(PinnedBlock{});
  EXPECT_EQ(pool.stats().in_use_bytes, 256);
  pool.release(a);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

TEST_F(PinnedPoolTest, FailedSlabAllocationLeavesThePoolUnchanged) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedBlock a = pool.acquire(kMiB);
  const int64_t reserved = pool.stats().reserved_bytes;
  FakeSlabs::fail_next = true;
  EXPECT_THROW(pool.acquire(16 * kMiB), c10::Error);
  const PinnedPoolStats s = pool.stats();
  EXPECT_EQ(s.in_use_bytes, kMiB);
  EXPECT_EQ(s.slabs, 1);
  EXPECT_EQ(s.slab_allocations, 1);
  EXPECT_EQ(s.reserved_bytes, reserved);
  // And it still works afterwards.
  const PinnedBlock b = pool.acquire(16 * kMiB);
  EXPECT_EQ(pool.stats().slabs, 2);
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

TEST_F(PinnedPoolTest, DestructorFreesEverySlab) {
  {
    PinnedPool pool(FakeSlabs::source());
    const PinnedBlock a = pool.acquire(kMiB);
    const PinnedBlock b = pool.acquire(20 * kMiB);
    const PinnedBlock c = pool.acquire(30 * kMiB);
    pool.release(a);
    pool.release(b);
    pool.release(c);
    EXPECT_EQ(FakeSlabs::live.size(), 3u);
  }
  EXPECT_TRUE(FakeSlabs::live.empty());
  EXPECT_EQ(FakeSlabs::frees, 3);
}

TEST_F(PinnedPoolTest, ConcurrentAcquireAndReleaseKeepTheBooks) {
  PinnedPool pool(FakeSlabs::source());
  constexpr int kThreads = 4;
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &corrupted, t] {
      std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1u);
      std::vector<PinnedBlock> held;
      for (int i = 0; i < 2000; ++i) {
        if (held.size() < 8 && (rng() % 2 == 0 || held.empty())) {
          const int64_t bytes = 1 + static_cast<int64_t>(rng() % (512 * 1024));
          PinnedBlock b = pool.acquire(bytes);
          std::memset(b.data, t + 1, static_cast<size_t>(b.bytes));
          held.push_back(b);
        } else {
          const size_t k = rng() % held.size();
          const PinnedBlock b = held[k];
          const auto mark = static_cast<std::byte>(t + 1);
          if (!std::all_of(b.data, b.data + b.bytes, [mark](std::byte x) { return x == mark; }))
            corrupted.fetch_add(1);
          pool.release(b);
          held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
        }
      }
      for (const PinnedBlock& b : held) pool.release(b);
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(corrupted.load(), 0) << "two threads were handed overlapping blocks";
  const PinnedPoolStats s = pool.stats();
  EXPECT_EQ(s.in_use_bytes, 0);
  // At most 4 threads x 8 blocks x 512 KiB = 16 MiB live at once: the pool must not keep growing.
  EXPECT_LE(s.reserved_bytes, 64 * kMiB);
  // Everything coalesced: every slab is idle, so all of them can be given back.
  EXPECT_EQ(pool.release_idle(), s.reserved_bytes);
  EXPECT_EQ(pool.stats().slabs, 0);
}

}  // namespace
}  // namespace mtc::detail
