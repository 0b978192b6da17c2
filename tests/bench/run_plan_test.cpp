#include <gtest/gtest.h>

#include <optional>
#include <utility>

#include "errors.h"
#include "runner/cli/options.h"
#include "runner/commands/make_run_plan.h"
#include "runner/strategies/catalog.h"
#include "workload/config.h"

namespace mtc::bench {
namespace {

Config config_with(const std::string& bench) {
  const std::string text = R"({"name": "t", "seed": 3, "directions": ["h2d", "d2h"],)" + bench +
                           R"("structure": {"tensor": {"dtype": "float32", "shape": [4]}}})";
  return parse_config(text, "inline.json");
}

TEST(RunPlan, DefaultsFromTheConfig) {
  const Config config =
      config_with(R"("bench": {"warmup": 2, "min_samples": 30, "timeout_s": 4.0},)");
  const RunPlan plan = make_run_plan(config, RunOptions{}, 1);
  EXPECT_EQ(plan.directions, (std::vector<Direction>{Direction::kH2D, Direction::kD2H}));
  EXPECT_EQ(plan.strategies, strategy_names());
  EXPECT_EQ(plan.devices, std::vector<int>{0});
  EXPECT_EQ(plan.settings.warmup, 2);
  EXPECT_EQ(plan.settings.stopping.min_samples, 30);
  EXPECT_DOUBLE_EQ(plan.settings.stopping.timeout_s, 4.0);
  EXPECT_DOUBLE_EQ(plan.settings.stopping.min_time_s, 0.25);
  // `step` with both gaps: the sleeping caller's and the busy one's.
  EXPECT_EQ(plan.settings.patterns,
            (std::vector<Pattern>{Pattern::kHot, Pattern::kStep, Pattern::kStepBusy}));
  EXPECT_EQ(plan.settings.gap_touch_bytes, int64_t{32} << 20);
  EXPECT_EQ(plan.settings.inputs, 8);
  EXPECT_DOUBLE_EQ(plan.settings.gap_s, 0.002);
  EXPECT_EQ(plan.settings.stopping.min_rounds, 5);
  EXPECT_EQ(plan.settings.fixed_samples, 0);
}

// The measuring structs start from the config's defaults: a case measured without a plan
// measures as a run without a "bench" object does.
TEST(RunPlan, WithoutABenchObjectTheSettingsAreCaseSettingsDefaults) {
  const RunPlan plan = make_run_plan(config_with(""), RunOptions{}, 1);
  RunPlan expected = plan;
  expected.settings = CaseSettings{};
  expected.settings.order_seed = plan.settings.order_seed;  // the config's seed
  EXPECT_EQ(plan_to_json(plan), plan_to_json(expected));
}

TEST(RunPlan, QuickIsThreeShortRounds) {
  RunOptions o;
  o.quick = true;
  const RunPlan plan = make_run_plan(config_with(""), o, 1);
  EXPECT_EQ(plan.settings.stopping.min_rounds, 3);
  EXPECT_EQ(plan.settings.stopping.max_rounds, 3);
  EXPECT_LT(plan.settings.stopping.round_time_s, 0.05);
  EXPECT_TRUE(plan.quick);
  EXPECT_EQ(plan_to_json(plan)["quick"], true);
}

TEST(RunPlan, RoundsAndPatternsFromTheConfigAndTheCommandLine) {
  const Config config = config_with(
      R"("bench": {"patterns": ["step"], "inputs": 3, "gap_us": 500, "min_rounds": 2, "max_rounds": 4},)");
  RunPlan plan = make_run_plan(config, RunOptions{}, 1);
  EXPECT_EQ(plan.settings.patterns, (std::vector<Pattern>{Pattern::kStep, Pattern::kStepBusy}));
  EXPECT_EQ(plan.settings.inputs, 3);
  EXPECT_DOUBLE_EQ(plan.settings.gap_s, 500e-6);
  EXPECT_EQ(plan.settings.stopping.max_rounds, 4);
  RunOptions o;
  o.patterns = std::vector<Pattern>{Pattern::kHot};
  o.max_rounds = 9;
  plan = make_run_plan(config, o, 1);
  EXPECT_EQ(plan.settings.patterns, std::vector<Pattern>{Pattern::kHot});
  EXPECT_EQ(plan.settings.stopping.max_rounds, 9);
  o.max_rounds = 1;
  EXPECT_THROW(make_run_plan(config, o, 1), UsageError);  // below min_rounds 2
}

TEST(RunPlan, TheGapModeSaysWhichStepsRun) {
  const Config config = config_with(R"("bench": {"gap_mode": "busy", "gap_touch_bytes": 4096},)");
  RunPlan plan = make_run_plan(config, RunOptions{}, 1);
  EXPECT_EQ(plan.settings.patterns, (std::vector<Pattern>{Pattern::kHot, Pattern::kStepBusy}));
  EXPECT_EQ(plan.settings.gap_touch_bytes, 4096);
  EXPECT_EQ(plan_to_json(plan)["patterns"], nlohmann::json({"hot", "step-busy"}));
  RunOptions o;
  o.gap_mode = "sleep";
  o.gap_touch_bytes = 1 << 20;
  plan = make_run_plan(config, o, 1);
  EXPECT_EQ(plan.settings.patterns, (std::vector<Pattern>{Pattern::kHot, Pattern::kStep}));
  EXPECT_EQ(plan.settings.gap_touch_bytes, 1 << 20);
  // A step pattern named outright stays, whatever the mode; none twice.
  o.patterns = std::vector<Pattern>{Pattern::kStepBusy, Pattern::kStep};
  plan = make_run_plan(config, o, 1);
  EXPECT_EQ(plan.settings.patterns, (std::vector<Pattern>{Pattern::kStepBusy, Pattern::kStep}));
  o.gap_mode = "both";
  plan = make_run_plan(config, o, 1);
  EXPECT_EQ(plan.settings.patterns, (std::vector<Pattern>{Pattern::kStepBusy, Pattern::kStep}));
}

// The round limits are checked once, in the plan, whichever source each came from; the
// loader checks a config's own pair (tests/workload/validation_test.cpp).
TEST(RunPlan, RoundLimitsThatDisagreeAreAUsageError) {
  const auto message = [](const Config& config, const RunOptions& o) {
    try {
      make_run_plan(config, o, 1);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  RunOptions o;
  o.min_rounds = 5;
  o.max_rounds = 3;
  EXPECT_EQ(message(config_with(""), o), "max_rounds (3) is below min_rounds (5)");
  RunOptions max_only;
  max_only.max_rounds = 2;  // below the config's 5
  EXPECT_EQ(message(config_with(""), max_only), "max_rounds (2) is below min_rounds (5)");
  RunOptions quick;
  quick.quick = true;
  quick.min_rounds = 3;
  quick.max_rounds = 2;
  EXPECT_EQ(message(config_with(""), quick), "max_rounds (2) is below min_rounds (3)");
}

// --quick's 3 rounds are its two limits: one limit given beside it moves the other where they
// would cross (--quick --min-rounds 5 was refused as "max_rounds (3) is below min_rounds (5)").
TEST(RunPlan, ALimitBesideQuickMovesTheOther) {
  const int64_t rounds = QuickSettings{}.rounds;
  const auto limits = [](std::optional<int64_t> min, std::optional<int64_t> max) {
    RunOptions o;
    o.quick = true;
    o.min_rounds = min;
    o.max_rounds = max;
    const StoppingParams s = make_run_plan(config_with(""), o, 1).settings.stopping;
    return std::pair<int64_t, int64_t>(s.min_rounds, s.max_rounds);
  };
  EXPECT_EQ(limits(std::nullopt, std::nullopt), std::make_pair(rounds, rounds));
  EXPECT_EQ(limits(rounds + 2, std::nullopt), std::make_pair(rounds + 2, rounds + 2));
  EXPECT_EQ(limits(std::nullopt, rounds - 1), std::make_pair(rounds - 1, rounds - 1));
  EXPECT_EQ(limits(1, std::nullopt), std::make_pair(int64_t{1}, rounds));
  EXPECT_EQ(limits(std::nullopt, rounds + 4), std::make_pair(rounds, rounds + 4));
}

// --processes 2 --max-rounds 1 measured 2 rounds: every process measures one at least.
TEST(RunPlan, MoreProcessesThanRoundsIsAUsageError) {
  RunOptions o;
  o.processes = 2;
  o.min_rounds = 1;
  o.max_rounds = 1;
  try {
    check_rounds_per_process(make_run_plan(config_with(""), o, 1));
    ADD_FAILURE() << "2 processes with 1 round were accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "2 processes with at most 1 round: each process measures at least one round; give "
              "--max-rounds 2 or more, or --processes 1 or fewer");
  }
  o.max_rounds = 2;
  EXPECT_NO_THROW(check_rounds_per_process(make_run_plan(config_with(""), o, 1)));
  // The config's default of 3 processes meets a config's 2 rounds alike.
  EXPECT_THROW(
      check_rounds_per_process(make_run_plan(
          config_with(R"("bench": {"min_rounds": 1, "max_rounds": 2},)"), RunOptions{}, 1)),
      UsageError);
}

TEST(RunPlan, RoundCpusAndProfileSamplesDefaultFromTheirStructs) {
  RunOptions o;
  o.profile = true;
  RunPlan plan = make_run_plan(config_with(""), o, 1);
  EXPECT_EQ(plan.settings.fixed_samples, ProfileSettings{}.samples);
  EXPECT_EQ(plan.settings.round_cpus, CaseSettings{}.round_cpus);
  o.round_cpus = 2;
  o.profile_samples = 4;
  plan = make_run_plan(config_with(""), o, 1);
  EXPECT_EQ(plan.settings.fixed_samples, 4);
  EXPECT_EQ(plan.settings.round_cpus, 2);
  EXPECT_EQ(plan_to_json(plan)["round_cpus"], 2);
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
  // The config's directions (h2d, d2h) and "--direction all" fall back to what the machine has.
  const RunPlan plan = make_run_plan(config_with(""), RunOptions{}, 0);
  EXPECT_EQ(plan.directions, std::vector<Direction>{Direction::kH2H});
  EXPECT_TRUE(plan.devices.empty());
  RunOptions all;
  all.directions = all_directions();
  all.all_directions = true;
  EXPECT_EQ(make_run_plan(config_with(""), all, 0).directions,
            std::vector<Direction>{Direction::kH2H});
  // "h2h,all" lists the directions in another order: still all.
  all.directions =
      std::vector<Direction>{Direction::kH2H, Direction::kH2D, Direction::kD2H, Direction::kD2D};
  EXPECT_EQ(make_run_plan(config_with(""), all, 0).directions,
            std::vector<Direction>{Direction::kH2H});
}

// The four directions named one by one are four demands, not "all": the list passed on a machine
// without a GPU, measuring h2h only. So did a --set or --sweep point of /directions or
// /bench/devices, which a CI job writes as surely as --direction.
TEST(RunPlan, WithoutAGpuEveryGpuRequestOfTheCommandLineIsAUsageError) {
  RunOptions four;
  four.directions =
      std::vector<Direction>{Direction::kH2D, Direction::kD2H, Direction::kD2D, Direction::kH2H};
  EXPECT_THROW(make_run_plan(config_with(""), four, 0), UsageError);
  const auto refusal = [](const std::vector<std::string>& sets,
                          const std::vector<std::string>& point) -> std::string {
    RunOptions options;
    options.sets = sets;
    std::vector<std::string> all_sets = sets;
    all_sets.insert(all_sets.end(), point.begin(), point.end());
    const std::string text = R"({"name": "t", "directions": ["h2d"],
        "structure": {"tensor": {"dtype": "float32", "shape": [4]}}})";
    try {
      make_run_plan(parse_config(text, "inline.json", all_sets), options, 0, point);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal({R"(/directions=["h2h","d2h"])"}, {}),
            R"(--set /directions=["h2h","d2h"]: d2h needs a CUDA device, and this machine has )"
            "none (h2h runs without one)");
  EXPECT_EQ(refusal({}, {R"(/directions=["h2d"])"}),
            R"(--sweep point /directions=["h2d"]: h2d needs a CUDA device, and this machine has )"
            "none (h2h runs without one)");
  EXPECT_EQ(refusal({"/bench/devices=[3]"}, {}),
            "--set /bench/devices=[3]: this machine has no CUDA device");
  // h2h asked for, and no GPU named: what the machine can do.
  EXPECT_EQ(refusal({R"(/directions=["h2h"])", "/bench/devices=[]"}, {}), "");
  // The config's own directions still fall back to h2h, as without --set.
  EXPECT_EQ(refusal({"/bench/warmup=1"}, {}), "");
}

TEST(RunPlan, WithoutAGpuAGpuDirectionOrDeviceAskedForIsAUsageError) {
  RunOptions h2d;
  h2d.directions = std::vector<Direction>{Direction::kH2H, Direction::kH2D};
  try {
    make_run_plan(config_with(""), h2d, 0);
    ADD_FAILURE() << "h2d ran without a GPU";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "--direction h2d: needs a CUDA device, and this machine has none (h2h runs "
                 "without one)");
  }
  RunOptions devices;
  devices.directions = std::vector<Direction>{Direction::kH2H};
  devices.devices = std::vector<int>{3};
  EXPECT_THROW(make_run_plan(config_with(""), devices, 0), UsageError);
  RunOptions h2h;
  h2h.directions = std::vector<Direction>{Direction::kH2H};
  EXPECT_EQ(make_run_plan(config_with(""), h2h, 0).directions, h2h.directions);
}

// Every row "skipped" would pass a job that measured nothing.
TEST(RunPlan, NoStrategyThatCanRunIsAUsageError) {
  RunOptions gpu_only;
  gpu_only.strategies = std::vector<std::string>{"memcpy_batch"};
  try {
    make_run_plan(config_with(""), gpu_only, 0);
    ADD_FAILURE() << "a run of nothing was planned";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("nothing to measure"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("memcpy_batch h2h: needs a CUDA device"),
              std::string::npos)
        << e.what();
  }
  // One strategy that can run is enough; the others are listed as skipped.
  RunOptions mixed;
  mixed.strategies = std::vector<std::string>{"memcpy_batch", "to"};
  EXPECT_EQ(make_run_plan(config_with(""), mixed, 0).strategies.size(), 2u);
  // Not only without a GPU: a strategy that pins host sources cannot copy GPU->CPU.
  RunOptions wrong_direction;
  wrong_direction.strategies = std::vector<std::string>{"pin_to_nb"};
  wrong_direction.directions = std::vector<Direction>{Direction::kD2H};
  EXPECT_THROW(make_run_plan(config_with(""), wrong_direction, 1), UsageError);
}

TEST(RunPlan, GpuToGpuAskedForOnOneGpuIsAUsageError) {
  RunOptions d2d;
  d2d.directions = std::vector<Direction>{Direction::kH2D, Direction::kD2D};
  EXPECT_THROW(make_run_plan(config_with(""), d2d, 1), UsageError);
  EXPECT_EQ(make_run_plan(config_with(""), d2d, 2).directions, *d2d.directions);
  RunOptions all;
  all.directions = all_directions();
  all.all_directions = true;
  EXPECT_EQ(make_run_plan(config_with(""), all, 1).directions, all_directions());  // d2d skipped
  // The four named one by one: d2d is a demand like the others.
  all.all_directions = false;
  EXPECT_THROW(make_run_plan(config_with(""), all, 1), UsageError);
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
  // Where the step patterns free the previous output: compare refuses to judge steps of reports
  // that say otherwise (or nothing).
  EXPECT_EQ(j["step_frees_previous_output"], "after_start");
}

}  // namespace
}  // namespace mtc::bench
