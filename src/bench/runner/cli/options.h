// What the command line asked for, after parsing and before any config is loaded. Every
// override is optional: unset means "as the config says", or where the config has no say, as
// the plan's defaults say (commands/make_run_plan.h). Nothing here holds a default of a setting:
// each option is declared once, in cli/run_options.cpp, with its help.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare_options.h"
#include "runner/cli/parse.h"
#include "runner/strategies/engine_overrides.h"
#include "types.h"

namespace mtc::bench {

// Each value has one handler in commands/dispatch.cpp.
enum class Command { kRun, kList, kValidate, kCompare };

struct RunOptions {
  std::string config_path;  // --config (a file, or the name of a shipped config)
  std::string input_path;   // --input batch.pt instead of a config
  std::optional<std::vector<int>> devices;
  std::optional<std::vector<Direction>> directions;
  // `--direction all` (alone or in a list) asks for what the machine has; directions named one by
  // one, all four included, are each a demand.
  bool all_directions = false;
  std::optional<std::vector<std::string>> strategies;
  std::optional<int64_t> warmup;
  std::optional<int64_t> min_samples;
  std::optional<double> min_time_s;
  std::optional<double> noise_target;
  std::optional<double> timeout_s;
  std::optional<double> overlap_us;
  std::optional<uint64_t> seed;
  // Rounds and patterns (measure/stopping.h; Pattern in types.h).
  std::optional<std::vector<Pattern>> patterns;
  std::optional<int64_t> inputs;
  std::optional<double> gap_us;
  std::optional<std::string> gap_mode;  // sleep, busy or both
  std::optional<int64_t> gap_touch_bytes;
  std::optional<int64_t> min_rounds;
  std::optional<int64_t> max_rounds;
  std::optional<double> round_time_s;
  bool quick = false;                // few short rounds: wide intervals, reported as they are
  std::optional<int64_t> processes;  // fresh processes whose rounds are merged
  std::optional<AbLabel> ab_label;
  std::string pin_cpu;                // "", "auto" (the GPU's local CPUs) or a CPU list "0-7,16"
  std::optional<int64_t> round_cpus;  // > 0: each round confined to this many CPUs
  int64_t child_index = -1;           // internal: this process is child I of --processes N ...
  int64_t child_count = 0;            // ... and N
  bool raw_samples = false;
  std::string json_path;
  std::string md_path;
  bool quiet = false;
  bool profile = false;
  std::optional<int64_t> profile_samples;
  EngineOverrides engine;
  // --engine-lib LABEL=PATH: other builds of the engine, for the `VARIANT@LABEL` strategies.
  std::map<std::string, std::string> engine_libraries;
  std::vector<std::string> sets;  // "NAME=VALUE", validated
  std::vector<SweepAxis> sweeps;
};

struct ValidateOptions {
  std::vector<std::string> config_paths;
  std::vector<std::string> sets;
  bool build = true;  // also build the workload and print its summary
};

struct ListOptions {
  bool strategies = true;
  bool configs = true;
};

struct CommandLine {
  Command command = Command::kRun;
  RunOptions run;
  ValidateOptions validate;
  ListOptions list;
  compare::CompareOptions compare;
  std::vector<std::string> arguments;  // argv, for the report
};

}  // namespace mtc::bench
