// The checks of a parsed command line that no single option can make: settings given two ways,
// options that do not mix, something to run.
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "runner/cli/parse.h"
#include "runner/cli/run_options.h"
#include "shown.h"

namespace mtc::bench {
namespace {

// Each setting is given once: a --sweep axis put after the --set values (and --seed after
// both) used to win silently over the value the user also wrote.
void check_set_once(const RunOptions& run) {
  std::vector<std::pair<std::string, std::string>> given;  // the setting, the option as shown
  for (const std::string& set : run.sets)
    given.emplace_back(parse_assignment(set).name, "--set " + shown(set));
  for (const SweepAxis& axis : run.sweeps)
    given.emplace_back(axis.name, "--sweep " + shown(axis.name));
  if (run.seed) given.emplace_back("/seed", "--seed");
  for (size_t i = 0; i < given.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      // Two --set of one name stay allowed: the later one is an override written on purpose.
      if (given[j].first != given[i].first || given[i].second.starts_with("--set ")) continue;
      throw UsageError(fmt::format("{} and {}: both set {}; give one of them", given[i].second,
                                   given[j].second, shown(given[i].first)));
    }
  }
}

// A command-line option wins over the config at every sweep point, so a --sweep of the setting
// it also gives would label points with values none of them ran with (--sweep /bench/warmup=1,2
// --warmup 3 ran warmup 3 twice), and a --set of it was dropped without a word while the report's
// resolved config kept the --set value (--set /bench/min_rounds=7 --quick ran 3 rounds). --quick
// sets the rounds' limits, the samples and the warm-up.
void check_sets_and_sweeps_against_options(const RunOptions& run) {
  // The option that gives the setting, or null; `quick`: --quick gives it too.
  const auto by = [&](bool given, const char* option, bool quick = false) -> const char* {
    if (given) return option;
    if (quick && run.quick) return "--quick";
    return nullptr;
  };
  const std::vector<std::pair<std::string, const char*>> given_by_option{
      {"/directions", by(run.directions.has_value(), "--direction")},
      {"/bench/devices", by(run.devices.has_value(), "--devices")},
      {"/bench/strategies", by(run.strategies.has_value(), "--strategy")},
      {"/bench/warmup", by(run.warmup.has_value(), "--warmup", true)},
      {"/bench/min_samples", by(run.min_samples.has_value(), "--min-samples", true)},
      {"/bench/min_time_s", by(run.min_time_s.has_value(), "--min-time", true)},
      {"/bench/noise_target", by(run.noise_target.has_value(), "--noise-target")},
      {"/bench/timeout_s", by(run.timeout_s.has_value(), "--timeout")},
      {"/bench/overlap_us", by(run.overlap_us.has_value(), "--overlap-us")},
      {"/bench/patterns", by(run.patterns.has_value(), "--pattern")},
      {"/bench/inputs", by(run.inputs.has_value(), "--inputs")},
      {"/bench/gap_us", by(run.gap_us.has_value(), "--gap-us")},
      {"/bench/gap_mode", by(run.gap_mode.has_value(), "--gap-mode")},
      {"/bench/gap_touch_bytes", by(run.gap_touch_bytes.has_value(), "--gap-touch-bytes")},
      {"/bench/min_rounds", by(run.min_rounds.has_value(), "--min-rounds", true)},
      {"/bench/max_rounds", by(run.max_rounds.has_value(), "--max-rounds", true)},
      {"/bench/round_time_s", by(run.round_time_s.has_value(), "--round-time", true)},
      // --profile measures in one process as --quick does.
      {"/bench/processes", run.profile && !run.processes && !run.quick
                               ? "--profile"
                               : by(run.processes.has_value(), "--processes", true)},
  };
  const auto option_giving = [&](const std::string& name) -> const char* {
    for (const auto& [pointer, option] : given_by_option) {
      if (option != nullptr && name == pointer) return option;
    }
    return nullptr;
  };
  for (const SweepAxis& axis : run.sweeps) {
    if (const char* option = option_giving(axis.name)) {
      throw UsageError(
          fmt::format("--sweep {} and {}: the option sets {} at every point; give one of them",
                      shown(axis.name), option, shown(axis.name)));
    }
  }
  for (const std::string& set : run.sets) {
    const std::string name = parse_assignment(set).name;
    if (const char* option = option_giving(name)) {
      throw UsageError(fmt::format("--set {} and {}: the option sets {} too; give one of them",
                                   shown(set), option, shown(name)));
    }
  }
}

// --profile measures a fixed count of samples in one round: the rules that end rounds and cases
// do not apply, and an option that sets one was accepted and did nothing (--profile --timeout 2
// ran past a minute).
void check_profile_options(const RunOptions& run) {
  if (!run.profile) {
    if (run.profile_samples) {
      throw UsageError("--profile-samples: counts the samples of --profile; give --profile too");
    }
    return;
  }
  const std::vector<std::pair<bool, const char*>> stopping{
      {run.timeout_s.has_value(), "--timeout"},
      {run.min_rounds.has_value(), "--min-rounds"},
      {run.max_rounds.has_value(), "--max-rounds"},
      {run.round_time_s.has_value(), "--round-time"},
      {run.min_samples.has_value(), "--min-samples"},
      {run.min_time_s.has_value(), "--min-time"},
      {run.noise_target.has_value(), "--noise-target"},
  };
  for (const auto& [given, option] : stopping) {
    if (!given) continue;
    throw UsageError(fmt::format(
        "--profile and {}: --profile measures --profile-samples samples per case in one round, "
        "so {} would do nothing; give one of them",
        option, option));
  }
}

}  // namespace

void check_run_options(const RunOptions& run) {
  check_profile_options(run);
  check_set_once(run);
  check_sets_and_sweeps_against_options(run);
  if (run.processes.value_or(1) > 1 && run.profile) {
    throw UsageError("--processes and --profile do not mix: profile one process");
  }
  if (!run.config_path.empty() && !run.input_path.empty()) {
    throw UsageError("give --config or --input, not both");
  }
  if (run.config_path.empty() && run.input_path.empty()) {
    throw UsageError(
        "nothing to run: give --config FILE (or a shipped name; see `mtc-bench list`)");
  }
}

}  // namespace mtc::bench
