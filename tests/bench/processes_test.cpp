#include "runner/commands/processes.h"

#include <gtest/gtest.h>

namespace mtc::bench {
namespace {

using json = nlohmann::json;
using Strings = std::vector<std::string>;

TEST(Processes, ChildArgumentsDropWhatTheParentHandles) {
  const Strings parent{"mtc-bench", "--config", "streampetr", "--processes", "3", "--json", "out.json",
                       "--md=out.md", "-q", "--raw-samples", "--strategy", "to,engine"};
  EXPECT_EQ(child_arguments(parent, 2, 3, "/tmp/x/2.json"),
            (Strings{"mtc-bench", "--config", "streampetr", "--strategy", "to,engine", "--quiet", "--raw-samples",
                     "--child-index", "2", "--child-count", "3", "--json", "/tmp/x/2.json"}));
}

// A child's report of one case: rounds of samples as `--raw-samples` writes them.
json child_report(std::vector<std::vector<double>> rounds_of_to, std::vector<std::vector<double>> rounds_of_engine) {
  const auto entry = [](const std::string& strategy, const std::vector<std::vector<double>>& rounds) {
    json raw{{"round", json::array()}, {"wall_s", json::array()}, {"caller_blocked_s", json::array()},
             {"cpu_s", json::array()}, {"gpu_s", nullptr},          {"exposed_s", nullptr}};
    for (size_t r = 0; r < rounds.size(); ++r) {
      for (double v : rounds[r]) {
        raw["round"].push_back(r);
        raw["wall_s"].push_back(v);
        raw["caller_blocked_s"].push_back(v / 10);
        raw["cpu_s"].push_back(v);
      }
    }
    return json{{"device", -1},       {"direction", "h2h"}, {"strategy", strategy}, {"pattern", "hot"},
                {"source", "cpu"},    {"target", "cpu"},    {"status", "ok"},       {"reason", ""},
                {"verified", true},   {"stop_reason", "max_rounds"}, {"warmup", 2}, {"measure_time_s", 1.0},
                {"raw_samples", raw}};
  };
  json run{{"sweep_point", json::object()},
           {"config", {{"file", "c.json"}, {"name", "c"}, {"seed", 0}, {"given", json::object()}, {"resolved", json::object()}}},
           {"settings", {{"interval_level", 0.95}}},
           {"workload", {{"hash", "0123456789abcdef"}, {"tensors", 10}, {"bytes", 1000}, {"summary", json::object()}}},
           {"results", json::array({entry("to", rounds_of_to), entry("engine", rounds_of_engine)})},
           {"aggregates", json::array()},
           {"notes", json::array()}};
  return json{{"schema_version", 2}, {"context", {{"host_state", {{"busy", false}}}}}, {"profile", false},
              {"ab", nullptr},        {"runs", json::array({run})},                     {"exit_code", 0}};
}

TEST(Processes, MergingPoolsTheRoundsAndLabelsTheirProcess) {
  const std::vector<json> reports{child_report({{10, 10}, {11, 11}}, {{1, 1}, {1.1, 1.1}}),
                                  child_report({{20, 20}, {21, 21}}, {{2, 2}, {2.1, 2.1}})};
  const Report merged = merge_process_reports(reports, false);
  ASSERT_EQ(merged.runs.size(), 1u);
  const Entry& to = merged.runs[0].entries[0];
  EXPECT_EQ(to.rounds.rounds, 4);
  EXPECT_EQ(to.rounds.process, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(to.wall.count, 8);
  EXPECT_EQ(to.warmup, 4);
  EXPECT_DOUBLE_EQ(to.measure_time_s, 2.0);
  EXPECT_TRUE(to.raw_samples.is_null());
  // The two processes disagree by 2x: the interval must say so.
  EXPECT_LT(to.rounds.interval.low, 10.0);
  EXPECT_GT(to.rounds.interval.high, 21.0);
  // Paired per round across both processes: exactly 10x in every round.
  const Entry& engine = merged.runs[0].entries[1];
  ASSERT_TRUE(engine.speedup);
  EXPECT_NEAR(engine.speedup->estimate, 10.0, 1e-9);
  EXPECT_EQ(engine.speedup->pairs, 4);
  EXPECT_EQ(merged.context["host_state_by_process"].size(), 2u);
  EXPECT_EQ(merged.runs[0].settings["processes"], 2);
}

TEST(Processes, MergingKeepsThePairedStepsAlignedWithTheRounds) {
  std::vector<json> reports{child_report({{10, 10}, {11, 11}}, {{1, 1}, {1.1, 1.1}}),
                            child_report({{20, 20}, {21, 21}}, {{2, 2}, {2.1, 2.1}})};
  reports[0]["runs"][0]["results"][1]["paired_steps"] = {{"baseline", "engine@base"}, {"median_log_ratio", {0.01, nullptr}}};
  reports[1]["runs"][0]["results"][1]["paired_steps"] = {{"baseline", "engine@base"}, {"median_log_ratio", {0.02, 0.03}}};
  const Report merged = merge_process_reports(reports, false);
  const Entry& engine = merged.runs[0].entries[1];
  ASSERT_TRUE(engine.paired_steps);
  EXPECT_EQ(engine.paired_steps->baseline, "engine@base");
  EXPECT_EQ(engine.paired_steps->median_log_ratio,
            (std::vector<std::optional<double>>{0.01, std::nullopt, 0.02, 0.03}));
  EXPECT_FALSE(merged.runs[0].entries[0].paired_steps);
  // A process without them (or against another baseline): none, rather than misaligned ones.
  reports[1]["runs"][0]["results"][1]["paired_steps"]["baseline"] = "engine@old";
  EXPECT_FALSE(merge_process_reports(reports, false).runs[0].entries[1].paired_steps);
  reports[1]["runs"][0]["results"][1].erase("paired_steps");
  EXPECT_FALSE(merge_process_reports(reports, false).runs[0].entries[1].paired_steps);
}

TEST(Processes, AFailureInOneProcessFailsTheCase) {
  std::vector<json> reports{child_report({{1}}, {{1}}), child_report({{1}}, {{1}})};
  reports[1]["runs"][0]["results"][1]["status"] = "failed";
  reports[1]["runs"][0]["results"][1]["reason"] = "out of memory";
  const Report merged = merge_process_reports(reports, true);
  const Entry& engine = merged.runs[0].entries[1];
  EXPECT_EQ(engine.status, EntryStatus::kFailed);
  EXPECT_EQ(engine.reason, "process 1: out of memory");
  EXPECT_EQ(merged.exit_code, 3);
  EXPECT_TRUE(merged.runs[0].entries[0].raw_samples.is_object());
}

}  // namespace
}  // namespace mtc::bench
