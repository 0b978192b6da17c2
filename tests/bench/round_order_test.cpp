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

}  // namespace
}  // namespace mtc::bench
