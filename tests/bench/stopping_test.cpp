#include "runner/measure/stopping.h"

#include <gtest/gtest.h>

namespace mtc::bench {
namespace {

StoppingParams fast_params() {
  StoppingParams p;
  p.min_samples = 10;
  p.min_time_s = 0.0;
  p.noise_target = 0.005;
  p.timeout_s = 100.0;
  return p;
}

TEST(StoppingRule, NeedsTheMinimumSamples) {
  StoppingRule rule(fast_params());
  for (int i = 0; i < 9; ++i) {
    rule.add(1.0);
    EXPECT_EQ(rule.check(0.0), StopReason::kNone) << i;
  }
  EXPECT_FALSE(rule.evaluated());
  rule.add(1.0);
  EXPECT_EQ(rule.check(0.0), StopReason::kNoiseTarget);  // identical samples: no noise
  EXPECT_TRUE(rule.evaluated());
}

TEST(StoppingRule, NeedsTheMinimumTime) {
  StoppingParams p = fast_params();
  p.min_time_s = 0.5;
  StoppingRule rule(p);
  for (int i = 0; i < 49; ++i) {
    rule.add(0.01);
    EXPECT_EQ(rule.check(0.0), StopReason::kNone) << i;
  }
  rule.add(0.011);  // accumulated 0.501 s
  EXPECT_EQ(rule.check(0.0), StopReason::kNoiseTarget);
  EXPECT_NEAR(rule.accumulated_s(), 0.501, 1e-12);
}

TEST(StoppingRule, TimeoutWinsOverTheMinimums) {
  StoppingParams p = fast_params();
  p.min_samples = 1000;
  p.timeout_s = 2.0;
  StoppingRule rule(p);
  rule.add(1.0);
  EXPECT_EQ(rule.check(1.0), StopReason::kNone);
  rule.add(1.0);
  EXPECT_EQ(rule.check(2.0), StopReason::kTimeout);
}

TEST(StoppingRule, MaxSamples) {
  StoppingParams p = fast_params();
  p.max_samples = 3;
  p.min_samples = 100;
  StoppingRule rule(p);
  for (int i = 0; i < 3; ++i) rule.add(1.0);
  EXPECT_EQ(rule.check(0.0), StopReason::kMaxSamples);
}

TEST(StoppingRule, StationaryNoiseReachesTheTarget) {
  // Spread of +-10 %: the standard error of the median falls as 1/sqrt(n) until it is under
  // 0.5 %, long before the stability rule could fire.
  StoppingRule rule(fast_params());
  StopReason reason = StopReason::kNone;
  int64_t n = 0;
  while (reason == StopReason::kNone && n < 100000) {
    rule.add(1.0 + 0.1 * ((n * 7919) % 21 - 10) / 10.0);
    ++n;
    reason = rule.check(0.0);
  }
  EXPECT_EQ(reason, StopReason::kNoiseTarget);
  EXPECT_LE(rule.noise(), 0.005);
  EXPECT_GT(n, 100);
}

TEST(StoppingRule, DriftingSamplesStopAsStable) {
  // The median drifts upwards as samples accumulate, so the MAD grows with n and the noise of
  // the median stops falling: more samples would not help.
  StoppingRule rule(fast_params());
  StopReason reason = StopReason::kNone;
  int64_t n = 0;
  while (reason == StopReason::kNone && n < 100000) {
    rule.add(1.0 + 0.01 * static_cast<double>(n));
    ++n;
    reason = rule.check(0.0);
  }
  EXPECT_EQ(reason, StopReason::kNoiseStable);
  EXPECT_GT(rule.noise(), 0.005);
  EXPECT_GE(n, fast_params().stable_min_samples);
}

TEST(StoppingRule, ReasonsHaveNames) {
  EXPECT_EQ(to_string(StopReason::kNoiseTarget), "noise_target");
  EXPECT_EQ(to_string(StopReason::kNoiseStable), "noise_stable");
  EXPECT_EQ(to_string(StopReason::kTimeout), "timeout");
  EXPECT_EQ(to_string(StopReason::kMaxSamples), "max_samples");
  EXPECT_EQ(to_string(StopReason::kFixedCount), "fixed_count");
}

}  // namespace
}  // namespace mtc::bench
