#include "compare/basis.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "errors.h"

namespace mtc::bench::compare {
namespace {

std::string joined(const std::vector<std::string>& notes) {
  std::string all;
  for (const std::string& note : notes) all += note + "\n";
  return all;
}

// A threshold of a metric the basis does not judge was dropped without a word
// (over_memcpy_batch against a fresh baseline, wall against a stored one). Where --baseline-kind
// chose the basis the two options contradict each other; where the reports chose it, one command
// line may serve both kinds, and a note says what was not used.
TEST(Basis, AThresholdOfAMetricNotJudgedIsRefusedOrSaid) {
  CompareOptions options;
  options.metric_thresholds = {{Metric::kWall, 0.05}, {Metric::kOverMemcpyBatch, 0.50}};
  std::vector<std::string> notes;
  const auto fresh = resolve_thresholds(options, BaselineKind::kFresh, notes);
  EXPECT_FALSE(fresh.contains(Metric::kOverMemcpyBatch));
  EXPECT_NE(joined(notes).find("--threshold-metric over_memcpy_batch: not judged against a fresh "
                               "baseline, which is judged on wall and speedup; it is not used"),
            std::string::npos)
      << joined(notes);
  notes.clear();
  EXPECT_DOUBLE_EQ(
      resolve_thresholds(options, BaselineKind::kStored, notes).at(Metric::kOverMemcpyBatch), 0.50);
  EXPECT_NE(joined(notes).find("--threshold-metric wall: not judged against a stored baseline"),
            std::string::npos)
      << joined(notes);

  options.baseline_kind = BaselineKind::kFresh;
  try {
    resolve_thresholds(options, BaselineKind::kFresh, notes);
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--threshold-metric over_memcpy_batch: not judged "
                                         "against a fresh baseline"),
              std::string::npos)
        << e.what();
  }
  options.metric_thresholds.erase(Metric::kOverMemcpyBatch);
  notes.clear();
  EXPECT_DOUBLE_EQ(resolve_thresholds(options, BaselineKind::kFresh, notes).at(Metric::kWall),
                   0.05);
}

}  // namespace
}  // namespace mtc::bench::compare
