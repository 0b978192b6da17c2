#include "runner/measure/round_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace mtc::bench {
namespace {

TEST(RoundOrder, RunsEveryCaseOncePerRound) {
  for (uint64_t round = 0; round < 50; ++round) {
    std::vector<size_t> order = round_order(9, 42, round, 3);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8})) << round;
  }
}

TEST(RoundOrder, IsReproducibleFromTheSeed) {
  EXPECT_EQ(round_order(9, 42, 3, 1), round_order(9, 42, 3, 1));
  EXPECT_NE(round_order(9, 42, 3, 1), round_order(9, 43, 3, 1));
}

TEST(RoundOrder, ChangesFromRoundToRound) {
  std::set<std::vector<size_t>> seen;
  for (uint64_t round = 0; round < 20; ++round) seen.insert(round_order(9, 0, round, 0));
  EXPECT_GE(seen.size(), 18u);  // 9! orders: repeats are rare
  // Every case comes first in some round: no strategy always runs after the others.
  std::set<size_t> firsts;
  for (uint64_t round = 0; round < 200; ++round) firsts.insert(round_order(4, 5, round, 0).front());
  EXPECT_EQ(firsts.size(), 4u);
}

TEST(RoundOrder, HandlesTinyCounts) {
  EXPECT_TRUE(round_order(0, 1, 1, 1).empty());
  EXPECT_EQ(round_order(1, 1, 1, 1), std::vector<size_t>{0});
}

TEST(RoundCpus, DrawsDistinctAllowedCpus) {
  const std::vector<int> allowed{0, 1, 2, 3, 8, 9, 10, 11, 30};
  std::set<int> ever;
  for (uint64_t round = 0; round < 200; ++round) {
    const std::vector<int> cpus = round_cpus(allowed, 2, 7, round, 5);
    ASSERT_EQ(cpus.size(), 2u);
    EXPECT_NE(cpus[0], cpus[1]);
    for (int c : cpus) {
      EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), c) != allowed.end()) << c;
      ever.insert(c);
    }
  }
  EXPECT_EQ(ever.size(), allowed.size());  // every CPU's luck is drawn sometimes
}

TEST(RoundCpus, IsReproducibleAndMovesBetweenRounds) {
  const std::vector<int> allowed{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  EXPECT_EQ(round_cpus(allowed, 2, 42, 3, 1), round_cpus(allowed, 2, 42, 3, 1));
  std::set<std::vector<int>> seen;
  for (uint64_t round = 0; round < 20; ++round) seen.insert(round_cpus(allowed, 2, 42, round, 1));
  EXPECT_GE(seen.size(), 15u);  // 240 ordered pairs: repeats are rare
}

TEST(RoundCpus, TakesAllWhenAskedForAsManyOrMore) {
  const std::vector<int> allowed{4, 5, 6};
  EXPECT_EQ(round_cpus(allowed, 3, 1, 1, 1), allowed);
  EXPECT_EQ(round_cpus(allowed, 8, 1, 1, 1), allowed);
  EXPECT_TRUE(round_cpus({}, 2, 1, 1, 1).empty());
}

std::vector<bool> coins(PairOrder order, size_t count) {
  std::vector<bool> out;
  for (size_t i = 0; i < count; ++i) out.push_back(order.a_first());
  return out;
}

TEST(PairOrder, IsReproducibleFromTheSeed) {
  EXPECT_EQ(coins(PairOrder(42, 3, 1), 64), coins(PairOrder(42, 3, 1), 64));
  EXPECT_NE(coins(PairOrder(42, 3, 1), 64), coins(PairOrder(43, 3, 1), 64));
  EXPECT_NE(coins(PairOrder(42, 3, 1), 64), coins(PairOrder(42, 4, 1), 64));  // another round
  EXPECT_NE(coins(PairOrder(42, 3, 1), 64),
            coins(PairOrder(42, 3, 2), 64));  // another block or GPU
}

TEST(PairOrder, PutsEachSideFirstAboutHalfTheTime) {
  // A fair coin: over 10,000 steps the count of A-first lies within 4.5 standard deviations
  // (50) of 5,000 for any fixed seed, and neither side leads for long.
  for (uint64_t seed : {0ULL, 1ULL, 12345ULL}) {
    const std::vector<bool> c = coins(PairOrder(seed, 0, 0), 10000);
    const auto a_first = std::count(c.begin(), c.end(), true);
    EXPECT_NEAR(static_cast<double>(a_first), 5000.0, 225.0) << seed;
    size_t run = 1;
    size_t longest = 1;
    for (size_t i = 1; i < c.size(); ++i) {
      run = c[i] == c[i - 1] ? run + 1 : 1;
      longest = std::max(longest, run);
    }
    EXPECT_LT(longest, 30u) << seed;
  }
}

}  // namespace
}  // namespace mtc::bench
