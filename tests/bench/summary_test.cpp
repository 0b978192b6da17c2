#include "stats/summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace mtc::bench {
namespace {

TEST(Summary, EmptyIsAllZeros) {
  const Summary s = summarize(std::vector<double>{});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.median, 0.0);
  EXPECT_EQ(s.noise, 0.0);
}

TEST(Summary, OneToTen) {
  std::vector<double> v;
  for (int i = 10; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  const Summary s = summarize(v);
  EXPECT_EQ(s.count, 10);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_NEAR(s.stdev, 3.0276503540974917, 1e-12);  // numpy.std(ddof=1)
  EXPECT_NEAR(s.p10, 1.9, 1e-12);                   // numpy.percentile(.., 10)
  EXPECT_NEAR(s.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.p99, 9.91, 1e-12);
}

TEST(Summary, QuantileInterpolatesLinearly) {
  const std::vector<double> sorted{0.0, 10.0};
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 0.25), 2.5);
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 2.0), 10.0);  // clamped
}

TEST(Summary, MedianOfEvenAndOddCounts) {
  EXPECT_DOUBLE_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

TEST(Summary, MedianAbsoluteDeviation) {
  // median 2, deviations {1, 0, 0, 2, 98} -> 1
  EXPECT_DOUBLE_EQ(median_absolute_deviation(std::vector<double>{1, 2, 2, 4, 100}), 1.0);
}

TEST(Summary, NoiseFollowsTheFormula) {
  const std::vector<double> v{9, 10, 10, 11};  // median 10, MAD 0.5
  const double expected = 1.2533141 * 1.4826 * 0.5 / std::sqrt(4.0) / 10.0;
  EXPECT_NEAR(relative_median_noise(v), expected, 1e-9);
}

TEST(Summary, NoiseFallsWithMoreSamplesOfTheSameSpread) {
  std::vector<double> few;
  std::vector<double> many;
  for (int i = 0; i < 16; ++i) few.push_back(100.0 + (i % 4));
  for (int i = 0; i < 1024; ++i) many.push_back(100.0 + (i % 4));
  EXPECT_NEAR(relative_median_noise(many), relative_median_noise(few) / 8.0, 1e-9);
}

TEST(Summary, NoiseEdgeCases) {
  EXPECT_EQ(relative_median_noise(std::vector<double>{5.0}), 1.0);  // nothing known
  EXPECT_EQ(relative_median_noise(std::vector<double>{2.0, 2.0, 2.0}), 0.0);
  EXPECT_EQ(relative_median_noise(std::vector<double>{0.0, 0.0, 0.0}), 0.0);
  EXPECT_EQ(relative_median_noise(std::vector<double>{-1.0, 0.0, 1.0}), 1.0);  // median 0, spread
}

TEST(Summary, OutlierBarelyMovesTheNoise) {
  std::vector<double> v(100, 1.0);
  for (int i = 0; i < 100; i += 2) v[i] = 1.1;
  const double before = relative_median_noise(v);
  v[0] = 1000.0;  // one preempted sample
  EXPECT_NEAR(relative_median_noise(v), before, before * 0.05);
}

TEST(Summary, NonFiniteInputsGiveFiniteFields) {
  const Summary s = summarize(std::vector<double>{1.0, std::numeric_limits<double>::infinity()});
  for (double f : {s.min, s.p10, s.median, s.mean, s.stdev, s.p90, s.p99, s.max, s.noise}) {
    EXPECT_TRUE(std::isfinite(f));
  }
}

}  // namespace
}  // namespace mtc::bench
