#include "compare/change.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "errors.h"
#include "stats/distributions.h"

namespace mtc::bench::compare {
namespace {

TEST(PairedChange, GeometricMeanOfRoundRatiosWithATInterval) {
  // Host state moves both sides together; the ratio per round is 1.10 * (1 + small jitter).
  const std::vector<double> base{1.00, 1.18, 0.91, 1.10, 0.95, 1.25};
  const std::vector<double> jitter{1.000, 1.004, 0.997, 1.002, 0.999, 1.003};
  std::vector<double> cand;
  std::vector<double> logs;
  for (size_t i = 0; i < base.size(); ++i) {
    cand.push_back(base[i] * 1.10 * jitter[i]);
    logs.push_back(std::log(1.10 * jitter[i]));
  }
  double mean = 0;
  for (double x : logs) mean += x / 6;
  double ss = 0;
  for (double x : logs) ss += (x - mean) * (x - mean);
  const double half = student_t_quantile(0.975, 5) * std::sqrt(ss / 5) / std::sqrt(6.0);

  const Change c = paired_change(base, cand, 0.95);
  EXPECT_EQ(c.rounds, 6);
  EXPECT_NEAR(c.ratio, std::exp(mean), 1e-12);
  EXPECT_NEAR(c.low, std::exp(mean - half), 1e-12);
  EXPECT_NEAR(c.high, std::exp(mean + half), 1e-12);
  EXPECT_GT(c.low, 1.09);  // the host's 25 % swings cancel
  EXPECT_LT(c.high, 1.11);
}

TEST(PairedChange, OneRoundHasNoInterval) {
  const Change c = paired_change(std::vector<double>{2.0}, std::vector<double>{3.0}, 0.95);
  EXPECT_DOUBLE_EQ(c.ratio, 1.5);
  EXPECT_EQ(c.low, 0.0);
  EXPECT_TRUE(std::isinf(c.high));
}

TEST(ClusteredChange, FromLogRatiosIsTheSameAsFromTheirTimes) {
  const std::vector<double> base{1.00, 1.18, 0.91, 1.10, 0.95, 1.25};
  const std::vector<double> cand{1.12, 1.29, 1.00, 1.23, 1.03, 1.41};
  const std::vector<int64_t> process{0, 0, 1, 1, 2, 2};
  std::vector<double> logs;
  for (size_t i = 0; i < base.size(); ++i) logs.push_back(std::log(cand[i] / base[i]));
  const ClusteredChange a = clustered_paired_change(base, cand, process, 0.95);
  const ClusteredChange b = clustered_log_change(logs, process, 0.95);
  EXPECT_EQ(b.processes, 3);
  EXPECT_EQ(b.change.rounds, 6);
  EXPECT_NEAR(a.change.ratio, b.change.ratio, 1e-12);
  EXPECT_NEAR(a.change.low, b.change.low, 1e-12);
  EXPECT_NEAR(a.change.high, b.change.high, 1e-12);
  EXPECT_THROW(clustered_log_change(logs, std::vector<int64_t>{0, 1}, 0.95), std::invalid_argument);
}

TEST(UnpairedChange, HalfWidthsAddInQuadratureInLogSpace) {
  // Baseline 100 in [100/1.03, 100*1.04]; candidate 110 in [110/1.05, 110*1.02].
  const Estimate b{100.0, 100.0 / 1.03, 100.0 * 1.04, 0.95, 6};
  const Estimate c{110.0, 110.0 / 1.05, 110.0 * 1.02, 0.95, 5};
  const Change ch = unpaired_change(b, c);
  EXPECT_DOUBLE_EQ(ch.ratio, 1.1);
  EXPECT_EQ(ch.rounds, 5);
  // Below: the candidate's lower and the baseline's upper half-width.
  EXPECT_NEAR(std::log(1.1 / ch.low), std::hypot(std::log(1.05), std::log(1.04)), 1e-12);
  // Above: the candidate's upper and the baseline's lower half-width.
  EXPECT_NEAR(std::log(ch.high / 1.1), std::hypot(std::log(1.02), std::log(1.03)), 1e-12);
}

TEST(UnpairedChange, AnUnboundedSideLeavesTheChangeUnbounded) {
  const Estimate b{1.0, 0.0, std::nullopt, 0.95, 1};
  const Estimate c{1.0, 0.99, 1.01, 0.95, 6};
  const Change ch = unpaired_change(b, c);
  EXPECT_EQ(ch.low, 0.0);
  EXPECT_TRUE(std::isinf(ch.high));
}

TEST(UnpairedChange, RefusesIntervalsAtDifferentLevels) {
  EXPECT_THROW(unpaired_change({1.0, 0.9, 1.1, 0.95, 6}, {1.0, 0.9, 1.1, 0.90, 6}), UsageError);
}

Change interval(double low, double high, int64_t rounds = 6) {
  Change c;
  c.ratio = std::sqrt(low * high);
  c.low = low;
  c.high = high;
  c.rounds = rounds;
  return c;
}

TEST(Judge, VerdictsAgainstASymmetricBand) {
  const double t = 0.05;
  EXPECT_EQ(judge(interval(0.98, 1.03), t, Metric::kWall), Verdict::kSame);
  EXPECT_EQ(judge(interval(1.08, 1.12), t, Metric::kWall), Verdict::kSlower);
  EXPECT_EQ(judge(interval(0.80, 0.90), t, Metric::kWall), Verdict::kFaster);
  EXPECT_EQ(judge(interval(1.02, 1.09), t, Metric::kWall), Verdict::kUnsure);  // straddles 1.05
  EXPECT_EQ(judge(interval(0.90, 1.10), t, Metric::kWall),
            Verdict::kUnsure);  // straddles both edges
  // The band is symmetric in log space: 1 / 1.05 = 0.952, not 0.95.
  EXPECT_EQ(judge(interval(0.949, 0.951), t, Metric::kWall), Verdict::kFaster);
}

TEST(Judge, ALargerSpeedupIsFaster) {
  EXPECT_EQ(judge(interval(1.08, 1.12), 0.05, Metric::kSpeedup), Verdict::kFaster);
  EXPECT_EQ(judge(interval(0.80, 0.90), 0.05, Metric::kSpeedup), Verdict::kSlower);
}

TEST(Judge, TooFewRoundsIsUnsureWhateverTheInterval) {
  EXPECT_EQ(judge(interval(1.5, 1.6, kMinRounds - 1), 0.05, Metric::kWall), Verdict::kUnsure);
  EXPECT_EQ(judge(interval(1.5, 1.6, kMinRounds), 0.05, Metric::kWall), Verdict::kSlower);
}

}  // namespace
}  // namespace mtc::bench::compare
