// What one run does: the directions, strategies, GPUs and how each case is measured, as the
// runner takes it (made from a config and the command line by commands/make_run_plan.h), and
// the defaults of --quick and --profile. Pure (no ATen).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runner/measure/case_settings.h"
#include "runner/strategies/engine_overrides.h"
#include "types.h"

namespace mtc::bench {

// --quick: seconds, not a minute. What it sets where the command line leaves a value unset;
// the intervals widen accordingly and are reported as they are.
struct QuickSettings {
  int64_t rounds = 3;  // the fewest and the most
  double round_time_s = 0.02;
  int64_t min_samples = 3;
  double min_time_s = 0.0;
  int64_t max_warmup = 2;  // the config's warm-up, capped
};

// The GPU a run drives when neither the command line nor the config names one.
inline constexpr int kDefaultDevice = 0;

// --profile: a fixed number of samples per case, in one round, for one timeline.
struct ProfileSettings {
  int64_t samples = 20;  // --profile-samples
};
inline constexpr SettingBounds<int64_t> kProfileSamplesBounds{1, 10'000'000};

struct RunPlan {
  std::vector<Direction> directions;
  std::vector<std::string> strategies;  // catalog names, in catalog order
  std::vector<int> devices;             // GPUs driven at once; empty without a GPU
  int cuda_device_count = 0;
  CaseSettings settings;
  EngineOverrides engine;                               // what the `engine` variants start from
  std::map<std::string, std::string> engine_libraries;  // --engine-lib: label -> path
  bool profile = false;   // settings.fixed_samples is then the sample count
  int process_index = 0;  // which of --processes N measured (labels rounds)
  int processes = 1;      // --processes
  bool quick = false;     // --quick
};

// Where the step patterns free the previous output (measure/case_runner.cpp), as the report's
// settings say it: "after_start", once the next copy has started and before it is waited for
// (since 2026-11-27, 42fe133); reports without the field, written before it existed, do not say
// (those before that commit freed it after the copy, "after_copy"). `compare` reads it so that
// steps measured both ways are not judged against each other.
inline constexpr const char* kStepFreesPreviousOutput = "after_start";

// The plan as the report's "settings" block (engine options are added by the caller, which
// knows the engine's defaults).
nlohmann::json plan_to_json(const RunPlan& plan);

}  // namespace mtc::bench
