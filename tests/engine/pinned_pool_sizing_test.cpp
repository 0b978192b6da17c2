// How the pinned pool sizes itself (grows with the demand, merges into one slab when idle,
// levels off near the peak in flight), gives memory back, keeps its peaks and obeys its limit.
// Over plain host memory (an injected SlabSource): no GPU needed.
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "detail/pinned_pool.h"
#include "fake_slabs.h"

namespace mtc::detail {
namespace {

using test::FakeSlabs;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

class PinnedPoolSizing : public test::FakeSlabsTest {};

// One copy as the engine stages it: blocks taken one after another while the copy is in flight
// (a walk in parts takes one per part, of sizes that vary with how the elements were shared
// out), all given back once it has completed.
void run_copy(PinnedPool& pool, const std::vector<int64_t>& blocks) {
  std::vector<PinnedBlock> held;
  for (const int64_t bytes : blocks) held.push_back(pool.acquire(bytes));
  for (const PinnedBlock& b : held) pool.release(b);
}

// About the reference batch's staging (150 KiB) in 5 parts whose sizes vary by up to 2 KiB.
std::vector<int64_t> reference_like_parts(std::mt19937& rng) {
  std::vector<int64_t> parts;
  for (int p = 0; p < 5; ++p) parts.push_back(30 * kKiB + static_cast<int64_t>(rng() % (2 * kKiB)));
  return parts;
}

TEST_F(PinnedPoolSizing, GrowsWithTheDemandThenMergesIntoOneSlabWhenIdle) {
  PinnedPool pool(FakeSlabs::source());
  std::vector<PinnedBlock> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(pool.acquire(kMiB));
  const PinnedPoolStats grown = pool.stats();
  // Each new slab has room for all in flight: few slabs (made at 1, 2, 4 and 8 MiB in flight),
  // not one per block, and at most 1.125 x (1 + 2 + 4 + 8) / 8 of the peak.
  EXPECT_EQ(grown.slabs, 4);
  EXPECT_LE(grown.reserved_bytes * 64, grown.peak_in_use_bytes * 135);
  for (const PinnedBlock& b : blocks) pool.release(b);
  EXPECT_EQ(pool.stats().slabs, 4) << "nothing is freed while no one asks";

  // The next request finds the pool idle with several slabs: one slab for the 8 MiB seen.
  const PinnedBlock next = pool.acquire(kMiB);
  const PinnedPoolStats merged = pool.stats();
  EXPECT_EQ(merged.slabs, 1);
  EXPECT_EQ(merged.slab_frees, 4);
  EXPECT_EQ(merged.reserved_bytes, 9 * kMiB);  // 8 MiB plus an eighth
  pool.release(next);
  blocks.clear();
  for (int i = 0; i < 8; ++i) blocks.push_back(pool.acquire(kMiB));
  EXPECT_EQ(pool.stats().slab_allocations, merged.slab_allocations)
      << "the merged slab does not fit the demand";
  for (const PinnedBlock& b : blocks) pool.release(b);
}

TEST_F(PinnedPoolSizing, ARepeatedWorkloadLevelsOffWithinAQuarterOfItsPeak) {
  for (const bool with_large : {false, true}) {
    SCOPED_TRACE(with_large ? "small parts and large pipeline slots" : "small parts");
    PinnedPool pool(FakeSlabs::source());
    std::mt19937 rng(7);
    int64_t allocations_after_warmup = -1;
    for (int copy = 0; copy < 10000; ++copy) {
      std::vector<int64_t> blocks = reference_like_parts(rng);
      if (with_large) blocks.push_back(16 * kMiB);
      run_copy(pool, blocks);
      if (copy == 9) allocations_after_warmup = pool.stats().slab_allocations;
    }
    const PinnedPoolStats s = pool.stats();
    EXPECT_EQ(s.slab_allocations, allocations_after_warmup)
        << "the pool still grew after 10 copies";
    EXPECT_EQ(s.slabs, 1);
    EXPECT_LE(s.reserved_bytes * 4, s.peak_in_use_bytes * 5)
        << s.reserved_bytes << " bytes reserved for a peak of " << s.peak_in_use_bytes
        << " in flight";
    EXPECT_GE(s.reserved_bytes, s.peak_in_use_bytes);
  }
}

TEST_F(PinnedPoolSizing, ReleaseIdleFreesOnlySlabsWithNothingInUse) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedBlock held = pool.acquire(kMiB);
  const int64_t first_slab = pool.stats().reserved_bytes;
  const PinnedBlock other = pool.acquire(first_slab);  // too large for what is left: a second slab
  ASSERT_EQ(pool.stats().slabs, 2);
  EXPECT_EQ(pool.release_idle(), 0) << "both slabs are in use";
  pool.release(other);
  const int64_t second_slab = pool.stats().reserved_bytes - first_slab;
  EXPECT_EQ(pool.release_idle(), second_slab);
  EXPECT_EQ(FakeSlabs::live.size(), 1u);
  PinnedPoolStats s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, first_slab);
  EXPECT_EQ(s.slab_frees, 1);
  // The slab still in use keeps working; once idle it goes too.
  const PinnedBlock more = pool.acquire(4 * kKiB);
  EXPECT_EQ(more.slab, held.slab);
  pool.release(more);
  pool.release(held);
  EXPECT_EQ(pool.release_idle(), first_slab);
  s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.slabs, 0);
  EXPECT_TRUE(FakeSlabs::live.empty());
  // An empty pool starts over, sized for what comes next rather than for the past demand.
  const PinnedBlock again = pool.acquire(kKiB);
  EXPECT_EQ(pool.stats().reserved_bytes, 4 * kKiB);
  pool.release(again);
}

TEST_F(PinnedPoolSizing, PeaksFollowTheHighestFiguresUntilReset) {
  PinnedPool pool(FakeSlabs::source());
  const PinnedBlock a = pool.acquire(3 * kMiB);
  const PinnedBlock b = pool.acquire(kMiB);
  pool.release(a);
  PinnedPoolStats s = pool.stats();
  EXPECT_EQ(s.in_use_bytes, kMiB);
  EXPECT_EQ(s.peak_in_use_bytes, 4 * kMiB);
  EXPECT_EQ(s.peak_reserved_bytes, s.reserved_bytes);
  pool.reset_peaks();
  s = pool.stats();
  EXPECT_EQ(s.peak_in_use_bytes, kMiB);
  pool.release(b);
  const int64_t reserved = s.reserved_bytes;
  pool.release_idle();
  s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.peak_reserved_bytes, reserved) << "the peak outlives the memory";
  EXPECT_EQ(s.peak_in_use_bytes, kMiB);
}

// Runs fn, which must throw c10::Error, and returns its message.
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no c10::Error thrown";
  return "";
}

TEST_F(PinnedPoolSizing, ARequestPastTheLimitFailsClearlyAndChangesNothing) {
  PinnedPool pool(FakeSlabs::source(), 64 * kKiB);
  const std::string message = error_of([&] { pool.acquire(100 * kKiB); });
  EXPECT_NE(message.find("limit of 65536 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find(kPinnedPoolLimitVariable), std::string::npos) << message;
  EXPECT_NE(message.find("set_pinned_pool_limit"), std::string::npos) << message;
  EXPECT_FALSE(pool.try_acquire(100 * kKiB)) << "try_acquire returns an empty block instead";
  PinnedPoolStats s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.slab_allocations, 0);
  EXPECT_EQ(s.limit_bytes, 64 * kKiB);

  // Within the limit it works; a second block that only a larger pool could hold fails while
  // the first is in use, and succeeds once the first is back (its idle slab makes room).
  const PinnedBlock a = pool.acquire(32 * kKiB);
  EXPECT_THROW(pool.acquire(40 * kKiB), c10::Error);
  EXPECT_EQ(pool.stats().in_use_bytes, 32 * kKiB);
  pool.release(a);
  const PinnedBlock b = pool.acquire(40 * kKiB);
  s = pool.stats();
  EXPECT_LE(s.reserved_bytes, 64 * kKiB);
  EXPECT_LE(s.peak_reserved_bytes, 64 * kKiB);
  pool.release(b);
}

TEST_F(PinnedPoolSizing, TheLimitCapsTheSizeOfANewSlab) {
  PinnedPool pool(FakeSlabs::source(), 10 * kMiB);
  const PinnedBlock a = pool.acquire(9 * kMiB);  // would get 10.125 MiB without the limit
  EXPECT_EQ(pool.stats().reserved_bytes, 10 * kMiB);
  const PinnedBlock b = pool.acquire(kMiB);  // exactly what is left
  EXPECT_EQ(pool.stats().slabs, 1);
  EXPECT_THROW(pool.acquire(1), c10::Error);
  pool.release(a);
  pool.release(b);
}

TEST_F(PinnedPoolSizing, LoweringTheLimitFreesIdleSlabsAndRemovingItLiftsIt) {
  PinnedPool pool(FakeSlabs::source());
  run_copy(pool, {4 * kMiB});
  EXPECT_GT(pool.stats().reserved_bytes, 0);
  pool.set_limit(kMiB);
  EXPECT_EQ(pool.stats().reserved_bytes, 0);
  EXPECT_THROW(pool.acquire(2 * kMiB), c10::Error);
  pool.set_limit(0);
  run_copy(pool, {2 * kMiB});
  EXPECT_EQ(pool.stats().limit_bytes, 0);
  EXPECT_THROW(pool.set_limit(-1), c10::Error);
  EXPECT_THROW(PinnedPool(FakeSlabs::source(), -1), c10::Error);
}

TEST(PinnedPoolLimitVariable, ParsesByteCounts) {
  EXPECT_EQ(parse_pinned_pool_limit(nullptr), 0);
  EXPECT_EQ(parse_pinned_pool_limit(""), 0);
  EXPECT_EQ(parse_pinned_pool_limit("0"), 0);
  EXPECT_EQ(parse_pinned_pool_limit("268435456"), 268435456);
  EXPECT_EQ(parse_pinned_pool_limit("9223372036854775807"), INT64_MAX);
}

TEST(PinnedPoolLimitVariable, RejectsAnythingElseNamingTheVariable) {
  for (const char* bad : {"abc", "-1", "1.5", "12 ", " 12", "256MiB", "1e9", "9223372036854775808",
                          "99999999999999999999999"}) {
    SCOPED_TRACE(bad);
    const std::string message = error_of([bad] { parse_pinned_pool_limit(bad); });
    EXPECT_NE(message.find(std::string(kPinnedPoolLimitVariable) + "='" + bad + "'"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace mtc::detail
