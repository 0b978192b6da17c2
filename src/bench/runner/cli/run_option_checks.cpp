// The checks of a parsed command line that no single option can make: settings given two ways,
// options that do not mix, something to run.
#include "runner/cli/run_options.h"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "runner/cli/parse.h"

namespace mtc::bench {
namespace {

// Each setting is given once: a --sweep axis put after the --set values (and --seed after
// both) used to win silently over the value the user also wrote.
void check_set_once(const RunOptions& run) {
  std::vector<std::pair<std::string, std::string>> given;  // the setting, the option as written
  for (const std::string& set : run.sets)
    given.emplace_back(parse_assignment(set).name, "--set " + set);
  for (const SweepAxis& axis : run.sweeps) given.emplace_back(axis.name, "--sweep " + axis.name);
  if (run.seed) given.emplace_back("/seed", "--seed");
  for (size_t i = 0; i < given.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      // Two --set of one name stay allowed: the later one is an override written on purpose.
      if (given[j].first != given[i].first || given[i].second.starts_with("--set ")) continue;
      throw UsageError(fmt::format("{} and {}: both set {}; give one of them", given[i].second,
                                   given[j].second, given[i].first));
    }
  }
}

// A command-line option wins over the config at every sweep point, so a --sweep of the setting
// it also gives would label points with values none of them ran with (--sweep /bench/warmup=1,2
// --warmup 3 ran warmup 3 twice). --quick sets the rounds' limits, the samples and the warm-up.
void check_sweeps_against_options(const RunOptions& run) {
  const bool q = run.quick;
  const std::vector<std::pair<std::string, const char*>> given_by_option{
      {"/directions", run.directions ? "--direction" : nullptr},
      {"/bench/devices", run.devices ? "--devices" : nullptr},
      {"/bench/strategies", run.strategies ? "--strategy" : nullptr},
      {"/bench/warmup", run.warmup ? "--warmup"
                        : q        ? "--quick"
                                   : nullptr},
      {"/bench/min_samples", run.min_samples ? "--min-samples"
                             : q             ? "--quick"
                                             : nullptr},
      {"/bench/min_time_s", run.min_time_s ? "--min-time"
                            : q            ? "--quick"
                                           : nullptr},
      {"/bench/noise_target", run.noise_target ? "--noise-target" : nullptr},
      {"/bench/timeout_s", run.timeout_s ? "--timeout" : nullptr},
      {"/bench/overlap_us", run.overlap_us ? "--overlap-us" : nullptr},
      {"/bench/patterns", run.patterns ? "--pattern" : nullptr},
      {"/bench/inputs", run.inputs ? "--inputs" : nullptr},
      {"/bench/gap_us", run.gap_us ? "--gap-us" : nullptr},
      {"/bench/gap_mode", run.gap_mode ? "--gap-mode" : nullptr},
      {"/bench/gap_touch_bytes", run.gap_touch_bytes ? "--gap-touch-bytes" : nullptr},
      {"/bench/min_rounds", run.min_rounds ? "--min-rounds"
                            : q            ? "--quick"
                                           : nullptr},
      {"/bench/max_rounds", run.max_rounds ? "--max-rounds"
                            : q            ? "--quick"
                                           : nullptr},
      {"/bench/round_time_s", run.round_time_s ? "--round-time"
                              : q              ? "--quick"
                                               : nullptr},
      {"/bench/processes", run.processes ? "--processes"
                           : q           ? "--quick"
                           : run.profile ? "--profile"
                                         : nullptr},
  };
  for (const SweepAxis& axis : run.sweeps) {
    for (const auto& [pointer, option] : given_by_option) {
      if (option == nullptr || axis.name != pointer) continue;
      throw UsageError(
          fmt::format("--sweep {} and {}: the option sets {} at every point; give one of them",
                      axis.name, option, pointer));
    }
  }
}

}  // namespace

void check_run_options(const RunOptions& run) {
  check_set_once(run);
  check_sweeps_against_options(run);
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
