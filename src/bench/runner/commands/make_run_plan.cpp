#include "runner/commands/make_run_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "errors.h"
#include "runner/cli/options.h"
#include "runner/cli/parse.h"
#include "runner/strategies/catalog.h"
#include "shown.h"
#include "workload/config.h"

namespace mtc::bench {
namespace {

// `step` becomes the step patterns of the gap mode: sleep -> step, busy -> step-busy, both ->
// both, in that order; a pattern named outright (step-busy) stays as it is, each once.
std::vector<Pattern> with_gaps(const std::vector<Pattern>& patterns, const std::string& gap_mode) {
  std::vector<Pattern> out;
  const auto add = [&](Pattern p) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  for (Pattern p : patterns) {
    if (p != Pattern::kStep) {
      add(p);
      continue;
    }
    if (gap_mode != "busy") add(Pattern::kStep);
    if (gap_mode != "sleep") add(Pattern::kStepBusy);
  }
  return out;
}

// The --set or --sweep point of this run that gives `pointer`, as an error shows it, or "".
std::string assignment_of(const RunOptions& options, const std::vector<std::string>& point,
                          std::string_view pointer) {
  for (const std::string& set : options.sets) {
    if (parse_assignment(set).name == pointer) return "--set " + shown(set);
  }
  for (const std::string& set : point) {
    if (parse_assignment(set).name == pointer) return "--sweep point " + shown(set);
  }
  return "";
}

// Without a GPU a run measures h2h only: the default does so with a note on stderr, so that the
// plain command runs anywhere. A GPU direction or a GPU named on the command line (an option, a
// --set or a --sweep point) is refused instead: a CI job that asked for h2d on a runner without a
// GPU would otherwise measure CPU->CPU copies and pass. `--direction all` asks for what the
// machine has.
void refuse_gpu_requests(const Config& config, const RunOptions& options,
                         const std::vector<std::string>& point) {
  const std::string no_gpu =
      "needs a CUDA device, and this machine has none (h2h runs without one)";
  if (options.directions && !options.all_directions) {
    for (Direction d : *options.directions) {
      if (d != Direction::kH2H)
        throw UsageError(fmt::format("--direction {}: {}", to_string(d), no_gpu));
    }
  }
  if (options.devices && !options.devices->empty()) {
    throw UsageError(fmt::format("--devices {}: this machine has no CUDA device",
                                 fmt::join(*options.devices, ",")));
  }
  if (const std::string set = assignment_of(options, point, "/directions"); !set.empty()) {
    for (const std::string& name : config.directions) {
      if (name != "h2h") throw UsageError(fmt::format("{}: {} {}", set, name, no_gpu));
    }
  }
  if (const std::string set = assignment_of(options, point, "/bench/devices");
      !set.empty() && !config.bench.devices.empty()) {
    throw UsageError(fmt::format("{}: this machine has no CUDA device", set));
  }
}

// A run in which no strategy can copy in any direction would pass having measured nothing (every
// row "skipped"), as a CI job asking for GPU strategies on a runner without a GPU would.
void refuse_an_empty_run(const RunPlan& plan) {
  std::string why;
  for (const std::string& name : plan.strategies) {
    for (Direction direction : plan.directions) {
      const std::string reason =
          unsupported_reason(*find_strategy(name), direction, plan.cuda_device_count > 0);
      if (reason.empty()) return;
      if (why.empty()) why = fmt::format("{} {}: {}", name, to_string(direction), reason);
    }
  }
  if (why.empty()) return;  // nothing asked for: the strategies' own check speaks
  throw UsageError(fmt::format(
      "nothing to measure: no strategy asked for can copy in any direction of the run ({})", why));
}

}  // namespace

RunPlan make_run_plan(const Config& config, const RunOptions& options, int cuda_device_count,
                      const std::vector<std::string>& sweep_point) {
  RunPlan plan;
  plan.cuda_device_count = cuda_device_count;
  plan.profile = options.profile;

  if (cuda_device_count == 0) {
    refuse_gpu_requests(config, options, sweep_point);
    plan.directions = {Direction::kH2H};
  } else if (options.directions) {
    plan.directions = *options.directions;
    // Named outright on one GPU, d2d would be skipped and the run pass having measured nothing
    // of it (the config's directions and "all" still skip it with a note).
    const bool d2d = std::find(plan.directions.begin(), plan.directions.end(), Direction::kD2D) !=
                     plan.directions.end();
    if (d2d && cuda_device_count < 2 && !options.all_directions) {
      throw UsageError("--direction d2d: needs two GPUs, and this machine has one");
    }
  } else {
    for (const std::string& name : config.directions) {
      const auto d = parse_direction(name);
      if (!d) throw ConfigError(config.file, "/directions", "unknown direction " + shown(name));
      plan.directions.push_back(*d);
    }
    if (plan.directions.empty()) plan.directions = {Direction::kH2D};
  }

  const std::vector<std::string> wanted = options.strategies.value_or(config.bench.strategies);
  for (const std::string& name : wanted) {
    if (find_strategy(name) == nullptr) {
      throw ConfigError(config.file, "/bench/strategies",
                        fmt::format("unknown strategy {} (known: {})", shown(name),
                                    fmt::join(strategy_names(), ", ")));
    }
  }
  // Catalog order whatever order was asked for, so tables of different runs line up and the
  // baseline comes first; a variant copying with a loaded build follows its variant.
  for (const StrategyInfo& info : strategy_catalog()) {
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), info.name) != wanted.end()) {
      plan.strategies.emplace_back(info.name);
    }
    for (const std::string& name : wanted) {
      const auto loaded = split_loaded_variant(name);
      if (!loaded || loaded->variant != info.name) continue;
      if (!options.engine_libraries.contains(std::string(loaded->label))) {
        throw UsageError(fmt::format(
            "strategy {}: no engine build is loaded as `{}` (give --engine-lib {}=PATH)", name,
            loaded->label, loaded->label));
      }
      plan.strategies.push_back(name);
    }
  }
  plan.engine_libraries = options.engine_libraries;
  refuse_an_empty_run(plan);

  if (cuda_device_count > 0) {
    plan.devices = options.devices.value_or(config.bench.devices);
    if (plan.devices.empty()) plan.devices = {kDefaultDevice};
    for (int d : plan.devices) {
      if (d < 0 || d >= cuda_device_count) {
        throw UsageError(fmt::format("GPU {} does not exist: this machine has {} CUDA device{}", d,
                                     cuda_device_count, cuda_device_count == 1 ? "" : "s"));
      }
    }
  }

  CaseSettings& s = plan.settings;
  s.warmup = options.warmup.value_or(config.bench.warmup);
  s.stopping.min_samples = options.min_samples.value_or(config.bench.min_samples);
  s.stopping.min_time_s = options.min_time_s.value_or(config.bench.min_time_s);
  s.stopping.noise_target = options.noise_target.value_or(config.bench.noise_target);
  s.stopping.timeout_s = options.timeout_s.value_or(config.bench.timeout_s);
  s.overlap_s = options.overlap_us.value_or(config.bench.overlap_us) * 1e-6;
  s.raw_samples = options.raw_samples || config.bench.raw_samples;
  if (options.patterns) {
    s.patterns = *options.patterns;
  } else {
    s.patterns.clear();
    for (const std::string& name : config.bench.patterns)
      s.patterns.push_back(*parse_pattern(name));
  }
  s.patterns = with_gaps(s.patterns, options.gap_mode.value_or(config.bench.gap_mode));
  s.inputs = options.inputs.value_or(config.bench.inputs);
  s.gap_s = options.gap_us.value_or(config.bench.gap_us) * 1e-6;
  s.gap_touch_bytes = options.gap_touch_bytes.value_or(config.bench.gap_touch_bytes);
  s.stopping.min_rounds = options.min_rounds.value_or(config.bench.min_rounds);
  s.stopping.max_rounds = options.max_rounds.value_or(config.bench.max_rounds);
  s.stopping.round_time_s = options.round_time_s.value_or(config.bench.round_time_s);
  if (options.quick) {
    const QuickSettings quick;
    s.warmup = options.warmup.value_or(std::min(s.warmup, quick.max_warmup));
    // A limit given beside --quick moves the other one with it where they would cross: --quick
    // --min-rounds 5 measures 5 rounds (it was refused as "max_rounds (3) is below min_rounds (5)",
    // naming neither option).
    s.stopping.min_rounds = options.min_rounds.value_or(
        std::min(quick.rounds, options.max_rounds.value_or(quick.rounds)));
    s.stopping.max_rounds = options.max_rounds.value_or(
        std::max(quick.rounds, options.min_rounds.value_or(quick.rounds)));
    s.stopping.round_time_s = options.round_time_s.value_or(quick.round_time_s);
    s.stopping.min_samples = options.min_samples.value_or(quick.min_samples);
    s.stopping.min_time_s = options.min_time_s.value_or(quick.min_time_s);
  }
  // The one check of the limits a run uses, wherever each came from (the loader has already
  // rejected a config whose own limits disagree, naming its JSON pointer).
  if (const std::string error = round_limits_error(s.stopping.min_rounds, s.stopping.max_rounds);
      !error.empty()) {
    throw UsageError(error);
  }
  s.order_seed = config.seed;
  if (options.round_cpus) s.round_cpus = *options.round_cpus;
  if (options.profile) {
    s.fixed_samples = options.profile_samples.value_or(ProfileSettings{}.samples);
  }
  plan.process_index = static_cast<int>(std::max<int64_t>(options.child_index, 0));
  // Several processes by default (see commands/processes.h); one for --quick and --profile,
  // whose point is a short run or one timeline.
  plan.processes = static_cast<int>(
      options.processes.value_or(options.quick || options.profile ? 1 : config.bench.processes));
  if (options.child_count > 1) {
    // A child of --processes N measures its share of the rounds.
    const auto share = [&](int64_t rounds) {
      return (rounds + options.child_count - 1) / options.child_count;
    };
    s.stopping.min_rounds = share(s.stopping.min_rounds);
    s.stopping.max_rounds = share(s.stopping.max_rounds);
  }
  plan.quick = options.quick;
  plan.engine = options.engine;
  return plan;
}

void check_rounds_per_process(const RunPlan& plan) {
  const int64_t rounds = plan.settings.stopping.max_rounds;
  if (plan.processes <= rounds) return;
  throw UsageError(fmt::format(
      "{} processes with at most {} round{}: each process measures at least one round; give "
      "--max-rounds {} or more, or --processes {} or fewer",
      plan.processes, rounds, rounds == 1 ? "" : "s", plan.processes, rounds));
}

}  // namespace mtc::bench
