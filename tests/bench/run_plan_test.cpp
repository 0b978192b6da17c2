#include "runner/commands/run_plan.h"

#include "errors.h"
#include "runner/strategies/catalog.h"

#include <gtest/gtest.h>

namespace mtc::bench {
namespace {

Config config_with(const std::string& bench) {
  const std::string text = R"({"name": "t", "seed": 3, "directions": ["h2d", "d2h"],)" + bench +
                           R"("structure": {"tensor": {"dtype": "float32", "shape": [4]}}})";
  return parse_config(text, "inline.json");
}

TEST(RunPlan, DefaultsFromTheConfig) {
  const Config config = config_with(R"("bench": {"warmup": 2, "min_samples": 30, "timeout_s": 4.0},)");
  const RunPlan plan = make_run_plan(config, RunOptions{}, 1);
  EXPECT_EQ(plan.directions, (std::vector<Direction>{Direction::kH2D, Direction::kD2H}));
  EXPECT_EQ(plan.strategies, strategy_names());
  EXPECT_EQ(plan.devices, std::vector<int>{0});
  EXPECT_EQ(plan.settings.warmup, 2);
  EXPECT_EQ(plan.settings.stopping.min_samples, 30);
  EXPECT_DOUBLE_EQ(plan.settings.stopping.timeout_s, 4.0);
  EXPECT_DOUBLE_EQ(plan.settings.stopping.min_time_s, 0.5);
  EXPECT_EQ(plan.settings.fixed_samples, 0);
}

TEST(RunPlan, CommandLineWins) {
  RunOptions o;
  o.directions = std::vector<Direction>{Direction::kD2D};
  o.strategies = std::vector<std::string>{"engine", "to"};
  o.devices = std::vector<int>{1, 0};
  o.warmup = 0;
  o.noise_target = 0.02;
  o.overlap_us = 100.0;
  o.profile = true;
  o.profile_samples = 7;
  const RunPlan plan = make_run_plan(config_with(R"("bench": {"warmup": 9},)"), o, 2);
  EXPECT_EQ(plan.directions, std::vector<Direction>{Direction::kD2D});
  EXPECT_EQ(plan.strategies, (std::vector<std::string>{"to", "engine"}));  // catalog order
  EXPECT_EQ(plan.devices, (std::vector<int>{1, 0}));
  EXPECT_EQ(plan.settings.warmup, 0);
  EXPECT_DOUBLE_EQ(plan.settings.stopping.noise_target, 0.02);
  EXPECT_DOUBLE_EQ(plan.settings.overlap_s, 100e-6);
  EXPECT_EQ(plan.settings.fixed_samples, 7);
}

TEST(RunPlan, WithoutAGpuOnlyHostToHost) {
  RunOptions o;
  o.directions = std::vector<Direction>{Direction::kH2D};
  o.devices = std::vector<int>{3};
  const RunPlan plan = make_run_plan(config_with(""), o, 0);
  EXPECT_EQ(plan.directions, std::vector<Direction>{Direction::kH2H});
  EXPECT_TRUE(plan.devices.empty());
}

TEST(RunPlan, MissingGpuIsAUsageError) {
  RunOptions o;
  o.devices = std::vector<int>{0, 1};
  EXPECT_THROW(make_run_plan(config_with(""), o, 1), UsageError);
}

TEST(RunPlan, SettingsJson) {
  const nlohmann::json j = plan_to_json(make_run_plan(config_with(""), RunOptions{}, 1));
  EXPECT_EQ(j["directions"], nlohmann::json({"h2d", "d2h"}));
  EXPECT_EQ(j["min_samples"], 10);
  EXPECT_TRUE(j["fixed_samples"].is_null());
  EXPECT_TRUE(j["noise_estimator"].is_string());
}

}  // namespace
}  // namespace mtc::bench
