// The statistics of rounds on synthetic samples where the truth is known.
#include "stats/rounds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace mtc::bench {
namespace {

// A round: `n` samples around `center` with a relative spread `spread` (lognormal), as a
// host in one state gives.
Round make_round(std::mt19937_64& rng, double center, double spread, int n, int process = 0) {
  std::normal_distribution<double> noise(0.0, spread);
  Round r{{}, process};
  for (int i = 0; i < n; ++i) r.samples.push_back(center * std::exp(noise(rng)));
  return r;
}

double width(const Interval& i) { return i.high / i.low; }

TEST(Rounds, SummarizesEachRoundAndThePool) {
  const std::vector<Round> rounds{{{1.0, 2.0, 3.0}, 0}, {{4.0, 5.0, 6.0, 7.0}, 1}};
  const RoundsSummary s = summarize_rounds(rounds);
  EXPECT_EQ(s.rounds, 2);
  EXPECT_EQ(s.medians, (std::vector<double>{2.0, 5.5}));
  EXPECT_EQ(s.samples, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(s.process, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(s.median, 4.0);
}

TEST(Rounds, OneRoundLeavesTheIntervalUnbounded) {
  std::mt19937_64 rng(1);
  const std::vector<Round> rounds{make_round(rng, 1e-4, 0.01, 200)};
  const RoundsSummary s = summarize_rounds(rounds);
  EXPECT_TRUE(std::isinf(s.interval.high));
  EXPECT_EQ(s.interval.low, 0.0);
}

TEST(Rounds, DriftBetweenRoundsWidensTheInterval) {
  std::mt19937_64 rng(7);
  std::vector<Round> steady, drifting;
  for (int r = 0; r < 8; ++r) {
    steady.push_back(make_round(rng, 100e-6, 0.02, 300));
    drifting.push_back(make_round(rng, 100e-6 * (1.0 + 0.05 * r), 0.02, 300));
  }
  const RoundsSummary a = summarize_rounds(steady);
  const RoundsSummary b = summarize_rounds(drifting);
  EXPECT_GT(width(b.interval), 3.0 * (width(a.interval) - 1.0) + 1.0);
  EXPECT_GT(b.between, 5.0 * a.between);
  EXPECT_DOUBLE_EQ(b.reported(), std::max(b.within, b.between));
  // The within-sample figure (all that v1 reports showed) understates it.
  EXPECT_GT(b.between, b.within);
}

// Round effects: each round's host state scales its samples by exp(N(0, sigma_round)). The
// truth a rerun estimates is the center.
std::vector<Round> run_with_round_effects(std::mt19937_64& rng, double center, int rounds,
                                          double sigma_round) {
  std::normal_distribution<double> effect(0.0, sigma_round);
  std::vector<Round> out;
  for (int r = 0; r < rounds; ++r)
    out.push_back(make_round(rng, center * std::exp(effect(rng)), 0.03, 100));
  return out;
}

TEST(Rounds, TwoRunsOfOneDistributionGiveOverlappingIntervals) {
  std::mt19937_64 rng(11);
  int overlapping = 0;
  constexpr int kTrials = 400;
  for (int t = 0; t < kTrials; ++t) {
    const RoundsSummary a = summarize_rounds(run_with_round_effects(rng, 1e-4, 6, 0.05));
    const RoundsSummary b = summarize_rounds(run_with_round_effects(rng, 1e-4, 6, 0.05));
    if (a.interval.low <= b.interval.high && b.interval.low <= a.interval.high) ++overlapping;
  }
  EXPECT_GE(overlapping, kTrials * 98 / 100);
}

TEST(Rounds, TheIntervalCoversTheTruthAtItsLevel) {
  std::mt19937_64 rng(13);
  int covered = 0;
  constexpr int kTrials = 1000;
  for (int t = 0; t < kTrials; ++t) {
    const RoundsSummary s = summarize_rounds(run_with_round_effects(rng, 1e-4, 5, 0.05));
    if (s.interval.low <= 1e-4 && 1e-4 <= s.interval.high) ++covered;
  }
  EXPECT_GE(covered, kTrials * 90 / 100);
  EXPECT_LE(covered, kTrials * 995 / 1000);  // not vacuously wide
}

// Rounds of one process share its state: without the process term, an interval from one
// process would claim precision it does not have.
TEST(Rounds, ProcessesWidenTheIntervalWhenTheyDiffer) {
  std::mt19937_64 rng(17);
  std::vector<Round> rounds;
  for (int p = 0; p < 3; ++p) {
    const double state = p == 1 ? 1.4 : 1.0;  // one process in a slow mode
    for (int r = 0; r < 4; ++r) rounds.push_back(make_round(rng, 1e-4 * state, 0.02, 200, p));
  }
  std::vector<Round> unlabelled = rounds;
  for (Round& r : unlabelled) r.process = 0;
  EXPECT_GT(width(summarize_rounds(rounds).interval), width(summarize_rounds(unlabelled).interval));
}

TEST(PairedRatio, ContainsTheTrueRatioAtItsLevel) {
  // Round effects hit both strategies of a round alike (the pairing cancels them); each
  // strategy also has its own noise per round.
  std::mt19937_64 rng(19);
  std::normal_distribution<double> host(0.0, 0.15);
  std::normal_distribution<double> own(0.0, 0.04);
  constexpr double kTrueRatio = 40.0;
  int covered = 0;
  constexpr int kTrials = 1000;
  for (int t = 0; t < kTrials; ++t) {
    std::vector<double> base, fast;
    for (int r = 0; r < 5; ++r) {
      const double state = std::exp(host(rng));
      base.push_back(4e-3 * state * std::exp(own(rng)));
      fast.push_back(4e-3 / kTrueRatio * state * std::exp(own(rng)));
    }
    const auto ratio = paired_ratio(base, fast);
    ASSERT_TRUE(ratio && ratio->low && ratio->high);
    if (*ratio->low <= kTrueRatio && kTrueRatio <= *ratio->high) ++covered;
  }
  EXPECT_GE(covered, kTrials * 90 / 100);
}

TEST(PairedRatio, NeedsTwoPairsForAnInterval) {
  const auto one = paired_ratio(std::vector<double>{4.0}, std::vector<double>{2.0});
  ASSERT_TRUE(one);
  EXPECT_DOUBLE_EQ(one->estimate, 2.0);
  EXPECT_FALSE(one->low);
  EXPECT_FALSE(paired_ratio(std::vector<double>{}, std::vector<double>{}));
  const auto zeros = paired_ratio(std::vector<double>{0.0, 1.0}, std::vector<double>{1.0, 0.0});
  EXPECT_FALSE(zeros);
}

TEST(PairedRatio, IsTheGeometricMeanOfTheRoundRatios) {
  const auto r = paired_ratio(std::vector<double>{2.0, 8.0}, std::vector<double>{1.0, 1.0});
  ASSERT_TRUE(r && r->low && r->high);
  EXPECT_NEAR(r->estimate, 4.0, 1e-12);
  EXPECT_LT(*r->low, 4.0);
  EXPECT_GT(*r->high, 4.0);
  EXPECT_EQ(r->pairs, 2);
}

}  // namespace
}  // namespace mtc::bench
