// The deterministic generator and distributions: recorded sequences, ranges and moments.
#include "workload/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

namespace mtc::bench {
namespace {

// SplitMix64 is specified bit for bit; these outputs pin the seeding and the mix.
TEST(Rng, RecordedSequence) {
  Rng rng(0, 0);
  const std::vector<uint64_t> expected{0xbfef8030ddc2d772ULL, 0x5f552ce482f2aa47ULL,
                                       0x70335fc3daf3d8a7ULL};
  std::vector<uint64_t> got;
  for (size_t i = 0; i < expected.size(); ++i) got.push_back(rng.next_u64());
  EXPECT_EQ(got, expected);
}

TEST(Rng, Mix64IsTheSplitMix64Finalizer) {
  // Reference value of the SplitMix64 generator seeded with 0: its first output is mix64(gamma).
  EXPECT_EQ(mix64(0x9e3779b97f4a7c15ULL), 0xe220a8397b1dcdafULL);
}

TEST(Rng, StreamsAndSeedsDiffer) {
  std::set<uint64_t> firsts;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    for (uint64_t stream = 0; stream < 64; ++stream) firsts.insert(Rng(seed, stream).next_u64());
  }
  EXPECT_EQ(firsts.size(), 4u * 64u);
}

TEST(Rng, NextDoubleIsInUnitInterval) {
  Rng rng(1, 2);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.next_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
}

TEST(Distributions, UniformIntCoversItsRangeEvenly) {
  Rng rng(3, 0);
  std::vector<int> counts(7);
  for (int i = 0; i < 70000; ++i) {
    const int64_t v = uniform_int(rng, -3, 3);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
    ++counts[static_cast<size_t>(v + 3)];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
  EXPECT_EQ(uniform_int(rng, 5, 5), 5);
  // The whole int64 range and its ends.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  bool negative = false;
  bool positive = false;
  for (int i = 0; i < 64; ++i) {
    const int64_t v = uniform_int(rng, kMin, kMax);
    negative |= v < 0;
    positive |= v > 0;
  }
  EXPECT_TRUE(negative && positive);
  EXPECT_EQ(uniform_int(rng, kMax, kMax), kMax);
}

TEST(Distributions, UniformRealStaysInRange) {
  Rng rng(4, 0);
  for (int i = 0; i < 10000; ++i) {
    const double v = uniform_real(rng, -2.0, 6.0);
    ASSERT_GE(v, -2.0);
    ASSERT_LT(v, 6.0);
  }
  EXPECT_EQ(uniform_real(rng, 1.5, 1.5), 1.5);
}

TEST(Distributions, StandardNormalMoments) {
  Rng rng(5, 0);
  constexpr int kN = 200000;
  double sum = 0;
  double squares = 0;
  int beyond_two = 0;
  for (int i = 0; i < kN; ++i) {
    const double z = standard_normal(rng);
    sum += z;
    squares += z * z;
    beyond_two += std::fabs(z) > 2.0;
  }
  EXPECT_NEAR(sum / kN, 0.0, 0.01);
  EXPECT_NEAR(squares / kN, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(beyond_two) / kN, 0.0455, 0.003);
}

TEST(Distributions, PoissonMeanAndVarianceOnBothMethods) {
  for (double mean : {0.0, 0.5, 4.0, 30.0, kPoissonExactMax + 1, 1000.0}) {
    Rng rng(6, static_cast<uint64_t>(mean));
    constexpr int kN = 50000;
    double sum = 0;
    double squares = 0;
    for (int i = 0; i < kN; ++i) {
      const auto k = static_cast<double>(poisson(rng, mean));
      ASSERT_GE(k, 0.0);
      sum += k;
      squares += k * k;
    }
    const double m = sum / kN;
    const double var = squares / kN - m * m;
    EXPECT_NEAR(m, mean, 0.03 * mean + 0.01) << "mean " << mean;
    EXPECT_NEAR(var, mean, 0.06 * mean + 0.01) << "mean " << mean;
  }
}

TEST(Distributions, BernoulliFrequency) {
  Rng rng(7, 0);
  int hits = 0;
  for (int i = 0; i < 100000; ++i) hits += bernoulli(rng, 0.3);
  EXPECT_NEAR(hits / 100000.0, 0.3, 0.005);
  EXPECT_FALSE(bernoulli(rng, 0.0));
  EXPECT_TRUE(bernoulli(rng, 1.0));
}

TEST(Distributions, RoundClampedRoundsHalvesAwayAndSaturates) {
  EXPECT_EQ(round_clamped(2.5, 0, 10), 3);
  EXPECT_EQ(round_clamped(-2.5, -10, 10), -3);
  EXPECT_EQ(round_clamped(2.49, 0, 10), 2);
  EXPECT_EQ(round_clamped(-7.0, 0, 10), 0);
  EXPECT_EQ(round_clamped(1e300, 0, std::numeric_limits<int64_t>::max()),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(round_clamped(std::nan(""), 3, 10), 3);
}

TEST(PortableMath, LogAndExpAgreeWithLibmToAFewUlp) {
  for (double x :
       {1e-300, 1e-10, 0.1, 0.5, 0.70710678, 1.0, 1.0 + 1e-12, 2.0, 3.14159, 1e10, 1e300}) {
    EXPECT_NEAR(portable_log(x), std::log(x), 4e-16 * std::max(1.0, std::fabs(std::log(x)))) << x;
  }
  EXPECT_EQ(portable_log(1.0), 0.0);
  for (double x : {-700.0, -64.0, -1.0, -1e-9, 0.0, 0.5, 1.0, 10.0, 700.0}) {
    EXPECT_NEAR(portable_exp(x) / std::exp(x), 1.0, 1e-15) << x;
  }
  EXPECT_EQ(portable_exp(-1000.0), 0.0);
  EXPECT_TRUE(std::isinf(portable_exp(1000.0)));
}

}  // namespace
}  // namespace mtc::bench
