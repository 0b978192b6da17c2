#include "runner/measure/stopping.h"

#include <gtest/gtest.h>

namespace mtc::bench {
namespace {

StoppingParams params() {
  StoppingParams p;
  p.min_rounds = 5;
  p.max_rounds = 20;
  p.min_samples = 10;
  p.min_time_s = 0.1;
  p.noise_target = 0.01;
  p.timeout_s = 10.0;
  p.round_time_s = 0.05;
  p.round_min_samples = 3;
  return p;
}

CaseProgress satisfied() {
  return CaseProgress{
      .rounds = 5, .samples = 100, .sample_time_s = 1.0, .loop_time_s = 1.0, .noise = 0.005};
}

TEST(CaseVerdict, SatisfiedOnceEveryMinimumIsMetAndTheNoiseIsLow) {
  EXPECT_EQ(case_verdict(params(), satisfied()), StopReason::kNoiseTarget);
}

TEST(CaseVerdict, WantsMoreUntilEachMinimumIsMet) {
  CaseProgress p = satisfied();
  p.rounds = 4;
  EXPECT_EQ(case_verdict(params(), p), StopReason::kNone);
  p = satisfied();
  p.samples = 9;
  EXPECT_EQ(case_verdict(params(), p), StopReason::kNone);
  p = satisfied();
  p.sample_time_s = 0.05;
  EXPECT_EQ(case_verdict(params(), p), StopReason::kNone);
  p = satisfied();
  p.noise = 0.02;
  EXPECT_EQ(case_verdict(params(), p), StopReason::kNone);
}

TEST(CaseVerdict, LimitsEndAnUnsatisfiedCase) {
  CaseProgress p = satisfied();
  p.noise = 0.5;
  p.rounds = 20;
  EXPECT_EQ(case_verdict(params(), p), StopReason::kMaxRounds);
  p.rounds = 6;
  p.loop_time_s = 10.0;
  EXPECT_EQ(case_verdict(params(), p), StopReason::kTimeout);
  p.loop_time_s = 1.0;
  p.samples = params().max_samples;
  EXPECT_EQ(case_verdict(params(), p), StopReason::kMaxSamples);
}

TEST(CaseVerdict, TimeoutWinsOverTheMinimums) {
  CaseProgress p{
      .rounds = 1, .samples = 1, .sample_time_s = 0.0, .loop_time_s = 11.0, .noise = 1.0};
  EXPECT_EQ(case_verdict(params(), p), StopReason::kTimeout);
}

TEST(RoundComplete, NeedsBothTheSamplesAndTheTime) {
  const CaseProgress before{};
  EXPECT_FALSE(round_complete(params(), 2, 1.0, before));
  EXPECT_FALSE(round_complete(params(), 100, 0.01, before));
  EXPECT_TRUE(round_complete(params(), 3, 0.05, before));
}

TEST(RoundComplete, EndsAtTheCaseTimeoutAfterOneSample) {
  CaseProgress before{};
  before.loop_time_s = 9.99;
  EXPECT_FALSE(round_complete(params(), 0, 0.02, before));
  EXPECT_TRUE(round_complete(params(), 1, 0.02, before));
}

TEST(StopReason, Names) {
  EXPECT_EQ(to_string(StopReason::kMaxRounds), "max_rounds");
  EXPECT_EQ(to_string(StopReason::kNoiseTarget), "noise_target");
}

}  // namespace
}  // namespace mtc::bench
