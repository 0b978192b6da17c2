#include "compare/compare_options.h"

#include <gtest/gtest.h>

#include "errors.h"

namespace mtc::bench::compare {
namespace {

TEST(CompareOptions, ThresholdsArePercentages) {
  EXPECT_DOUBLE_EQ(parse_threshold_percent("5"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold_percent("2.5%"), 0.025);
  for (const char* bad : {"", "%", "five", "5x", "0", "-3", "1000", "nan"}) {
    EXPECT_THROW(parse_threshold_percent(bad), UsageError) << bad;
  }
}

TEST(CompareOptions, PerMetricThresholds) {
  const auto t = parse_metric_thresholds("wall=5,speedup=10%");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t.at(Metric::kWall), 0.05);
  EXPECT_DOUBLE_EQ(t.at(Metric::kSpeedup), 0.10);
  EXPECT_EQ(parse_metric_thresholds("speedup=7").size(), 1u);
  EXPECT_DOUBLE_EQ(parse_metric_thresholds("over_memcpy_batch=50").at(Metric::kOverMemcpyBatch),
                   0.5);
  for (const char* bad : {"wall", "gpu=5", "wall=5,wall=6", "wall=", "wall=5,"}) {
    EXPECT_THROW(parse_metric_thresholds(bad), UsageError) << bad;
  }
}

TEST(CompareOptions, FailOnAndBaselineKind) {
  EXPECT_EQ(parse_fail_on("slower"), FailOn::kSlower);
  EXPECT_EQ(parse_fail_on("faster"), FailOn::kFaster);
  EXPECT_EQ(parse_fail_on("any"), FailOn::kAny);
  EXPECT_EQ(parse_fail_on("none"), FailOn::kNone);
  EXPECT_THROW(parse_fail_on("regress"), UsageError);
  EXPECT_EQ(parse_baseline_kind("stored"), BaselineKind::kStored);
  EXPECT_EQ(parse_baseline_kind("fresh"), BaselineKind::kFresh);
  EXPECT_EQ(parse_baseline_kind("auto"), BaselineKind::kAuto);
  EXPECT_THROW(parse_baseline_kind("old"), UsageError);
}

}  // namespace
}  // namespace mtc::bench::compare
