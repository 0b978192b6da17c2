// PinnedPool's carving logic over plain host memory (an injected SlabSource), and the
// WorkerPool that runs copy orchestration and parallel staging fills. No GPU needed.
#include "detail/pinned_pool.h"
#include "detail/worker_pool.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace mtc::detail {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

// A SlabSource over aligned host memory that counts what it hands out and takes back.
struct FakeSlabs {
  static inline std::mutex mutex;
  static inline std::vector<int64_t> allocated_sizes;
  static inline std::set<void*> live;
  static inline int frees = 0;
  static inline bool fail_next = false;

  static void reset() {
    std::lock_guard<std::mutex> lock(mutex);
    allocated_sizes.clear();
    live.clear();
    frees = 0;
    fail_next = false;
  }
  static void* allocate(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    if (fail_next) {
      fail_next = false;
      TORCH_CHECK(false, "fake slab allocation failure");
    }
    void* p = std::aligned_alloc(4096, static_cast<size_t>(bytes));
    if (p == nullptr) throw std::bad_alloc();
    allocated_sizes.push_back(bytes);
    live.insert(p);
    return p;
  }
  static void free(void* base) noexcept {
    std::lock_guard<std::mutex> lock(mutex);
    live.erase(base);
    ++frees;
    std::free(base);
  }
  static SlabSource source() { return SlabSource{&FakeSlabs::allocate, &FakeSlabs::free}; }
};

class PinnedPoolTest : public ::testing::Test {
 protected:
  void SetUp() override { FakeSlabs::reset(); }
  void TearDown() override { FakeSlabs::reset(); }
};

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

TEST_F(PinnedPoolTest, FirstSlabHasTheMinimumSize) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedBlock a = pool.acquire(1000);
  ASSERT_EQ(FakeSlabs::allocated_sizes.size(), 1u);
  EXPECT_EQ(FakeSlabs::allocated_sizes[0], PinnedPool::kMinSlabBytes);
  EXPECT_EQ(PinnedPool::kMinSlabBytes, 8 * kMiB);
  const PinnedPoolStats s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, PinnedPool::kMinSlabBytes);
  EXPECT_EQ(s.slabs, 1);
  EXPECT_EQ(s.slab_allocations, 1);
  EXPECT_EQ(s.in_use_bytes, 1024);
  pool.release(a);
}

TEST_F(PinnedPoolTest, LargeRequestsGetASlabRoundedTo2MiB) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedBlock big = pool.acquire(9 * kMiB + 1);
  ASSERT_EQ(FakeSlabs::allocated_sizes.size(), 1u);
  EXPECT_EQ(FakeSlabs::allocated_sizes[0], 10 * kMiB);
  EXPECT_EQ(big.bytes, 9 * kMiB + 256);
  const PinnedBlock exact = pool.acquire(12 * kMiB);  // does not fit the 1 MiB left
  ASSERT_EQ(FakeSlabs::allocated_sizes.size(), 2u);
  EXPECT_EQ(FakeSlabs::allocated_sizes[1], 12 * kMiB);
  EXPECT_EQ(exact.slab, 1);
  EXPECT_EQ(pool.stats().reserved_bytes, 22 * kMiB);
  pool.release(big);
  pool.release(exact);
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
  std::vector<PinnedBlock> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(pool.acquire(kMiB));
  EXPECT_EQ(pool.stats().slab_allocations, 1);
  EXPECT_EQ(pool.stats().in_use_bytes, 8 * kMiB);
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
    // Three blocks that together with the tail cover the slab.
    const PinnedBlock blocks[3] = {pool.acquire(kMiB), pool.acquire(3 * kMiB),
                                   pool.acquire(512 * 1024)};
    EXPECT_EQ(blocks[1].data, blocks[0].data + blocks[0].bytes);
    EXPECT_EQ(blocks[2].data, blocks[1].data + blocks[1].bytes);
    for (const int i : order) pool.release(blocks[i]);
    EXPECT_EQ(pool.stats().in_use_bytes, 0);
    const PinnedBlock whole = pool.acquire(PinnedPool::kMinSlabBytes);
    EXPECT_EQ(whole.data, blocks[0].data);
    EXPECT_EQ(whole.slab, 0);
    EXPECT_EQ(pool.stats().slab_allocations, 1) << "the freed extents did not coalesce";
    pool.release(whole);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(PinnedPoolTest, HoleIsReusedFirstFit) {
  PinnedPool pool(FakeSlabs::source());
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
  const PinnedBlock whole = pool.acquire(PinnedPool::kMinSlabBytes);
  EXPECT_EQ(whole.data, a.data);
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
  FakeSlabs::fail_next = true;
  EXPECT_THROW(pool.acquire(16 * kMiB), c10::Error);
  const PinnedPoolStats s = pool.stats();
  EXPECT_EQ(s.in_use_bytes, kMiB);
  EXPECT_EQ(s.slabs, 1);
  EXPECT_EQ(s.slab_allocations, 1);
  EXPECT_EQ(s.reserved_bytes, PinnedPool::kMinSlabBytes);
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
  // Everything coalesced: each slab can be handed out whole again.
  for (int64_t i = 0; i < s.slabs; ++i) {
    const PinnedBlock whole = pool.acquire(PinnedPool::kMinSlabBytes);
    EXPECT_EQ(pool.stats().slab_allocations, s.slab_allocations);
    (void)whole;
  }
}

// ---------------------------------------------------------------------------------------------
// WorkerPool

TEST(WorkerPool, RunsEverySubmittedTask) {
  WorkerPool pool(3, std::chrono::microseconds(50));
  EXPECT_EQ(pool.size(), 3);
  std::atomic<int> done{0};
  constexpr int kTasks = 5000;
  for (int i = 0; i < kTasks; ++i) pool.submit([&done] { done.fetch_add(1); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done.load() < kTasks && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(done.load(), kTasks);
}

TEST(WorkerPool, WakesASleepingWorker) {
  // Submissions spaced past the spin window must still run (no lost wake-up).
  WorkerPool pool(2, std::chrono::microseconds(10));
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.submit([&done] { done.fetch_add(1); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (done.load() <= i && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    ASSERT_EQ(done.load(), i + 1) << "task " << i << " never ran";
  }
}

TEST(WorkerPool, InstanceHasOneToFourWorkers) {
  WorkerPool& pool = WorkerPool::instance();
  EXPECT_GE(pool.size(), 1);
  EXPECT_LE(pool.size(), 4);
  EXPECT_EQ(&pool, &WorkerPool::instance());
}

TEST(WorkerPool, ParallelForRunsEachPartExactlyOnce) {
  WorkerPool pool(4, std::chrono::microseconds(50));
  for (const int64_t parts : {0, 1, 2, 3, 5, 17, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(parts));
    pool.parallel_for(parts, [&hits](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
    for (int64_t i = 0; i < parts; ++i) EXPECT_EQ(hits[i].load(), 1) << parts << " parts, part " << i;
  }
}

TEST(WorkerPool, ParallelForWithOnePartRunsOnTheCaller) {
  WorkerPool pool(2, std::chrono::microseconds(50));
  std::thread::id ran_on;
  pool.parallel_for(1, [&ran_on](int64_t) { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(WorkerPool, ParallelForRethrowsAfterEveryPartRan) {
  WorkerPool pool(3, std::chrono::microseconds(50));
  std::atomic<int> ran{0};
  try {
    pool.parallel_for(64, [&ran](int64_t i) {
      ran.fetch_add(1);
      if (i == 37) throw std::runtime_error("part 37 failed");
    });
    ADD_FAILURE() << "parallel_for swallowed the exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 37 failed");
  }
  EXPECT_EQ(ran.load(), 64);
}

TEST(WorkerPool, NestedParallelForFromWorkersDoesNotDeadlock) {
  // The engine calls parallel_for from a worker (a background copy's staging fill) while the
  // pool's other workers may be busy: the caller must be able to finish alone.
  WorkerPool pool(2, std::chrono::microseconds(50));
  std::atomic<int64_t> sum{0};
  std::atomic<int> finished{0};
  for (int t = 0; t < 6; ++t) {
    pool.submit([&] {
      pool.parallel_for(50, [&sum](int64_t i) { sum.fetch_add(i); });
      finished.fetch_add(1);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (finished.load() < 6 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(finished.load(), 6);
  EXPECT_EQ(sum.load(), 6 * (49 * 50 / 2));
}

TEST(WorkerPool, ConcurrentParallelForCallers) {
  WorkerPool pool(3, std::chrono::microseconds(50));
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&pool, &bad] {
      for (int round = 0; round < 200; ++round) {
        std::vector<std::atomic<int>> hits(13);
        pool.parallel_for(13, [&hits](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
        for (auto& h : hits)
          if (h.load() != 1) bad.fetch_add(1);
      }
    });
  }
  for (std::thread& th : callers) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace mtc::detail
