#include "runner/cli/command_line.h"

#include "errors.h"
#include "runner/cli/compare_subcommand.h"
#include "runner/cli/parse.h"
#include "runner/strategies/catalog.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "mtc_git_revision.h"  // generated at build time: MTC_GIT_REVISION

#ifndef MTC_VERSION
#define MTC_VERSION "unknown"
#endif

namespace mtc::bench {
namespace {

constexpr const char* kDescription =
    "mtc-bench: measures copies of nested tensor structures between devices.\n"
    "It builds the config's workload (deterministic for a seed), then for each direction and\n"
    "strategy: warms up, verifies the output once (bitwise values, structure, dtypes, shapes,\n"
    "devices), and samples until the median is known well enough. Each sample is the wall time\n"
    "from the start call until the data is usable on the target (device synchronized), the\n"
    "time the start call kept the caller, the GPU span (CUDA events) and the process CPU time.";

std::string footer_text() {
  std::string strategies;
  for (const StrategyInfo& info : strategy_catalog()) {
    strategies += fmt::format("  {:<17}{}\n", info.name, info.summary);
  }
  return fmt::format(
      "Directions (--direction):\n"
      "  h2d  CPU tensors as the config builds them -> cuda:D\n"
      "  d2h  the workload moved to cuda:D beforehand (untimed) -> CPU\n"
      "  d2d  cuda:D -> the next GPU; needs two GPUs (skipped with one: nothing would move)\n"
      "  h2h  CPU -> CPU; the only direction on a machine without a GPU\n"
      "\n"
      "Strategies (--strategy; speedups are against `to`):\n{}"
      "\n"
      "Rounds: every strategy of a direction and pattern runs once per round, in an order\n"
      "shuffled by the seed, for --round-time seconds. Rounds go on until every case has\n"
      "--min-rounds rounds, --min-samples samples and --min-time seconds of samples and its\n"
      "noise (the larger of the within- and between-round standard errors of the median) is\n"
      "under --noise-target; at most --max-rounds, and a case stops after --timeout seconds.\n"
      "The interval of each median (95 %) includes the variation between rounds.\n"
      "\n"
      "Exit codes: 0 success, 1 regression (compare), 2 usage or config error,\n"
      "            3 runtime or CUDA error, 4 a strategy's output failed verification,\n"
      "            130 interrupted (SIGINT or SIGTERM; the reports hold what was measured).\n"
      "\n"
      "Examples:\n"
      "  mtc-bench --config configs/streampetr.json\n"
      "  mtc-bench --config streampetr --direction h2d,d2h --strategy to,engine --json out.json\n"
      "  mtc-bench --config streampetr --sweep samples=1,4,16,64 --md sweep.md\n"
      "  mtc-bench --config streampetr --devices 0,1\n"
      "  mtc-bench --config streampetr --overlap-us 500\n"
      "  mtc-bench list\n"
      "  mtc-bench validate configs/*.json\n"
      "  nsys profile -t cuda,nvtx,osrt --capture-range=cudaProfilerApi -o report \\\n"
      "      mtc-bench --config streampetr --profile\n",
      strategies);
}

// Values CLI11 collects as text and parse.h checks, so every error names the bad text.
struct RawValues {
  std::vector<std::string> devices;
  std::vector<std::string> directions;
  std::vector<std::string> strategies;
  std::vector<std::string> sweeps;
  std::string noise_target;
  std::string engine_alignment;
  std::string engine_max_chunk;
  int64_t warmup = 0;
  int64_t min_samples = 0;
  double min_time_s = 0;
  double timeout_s = 0;
  double overlap_us = 0;
  uint64_t seed = 0;
  bool pinned_staging = true;
  bool pack = true;
  bool background_thread = true;
  std::vector<std::string> patterns;
  std::string ab_label;
  int64_t inputs = 0;
  double gap_us = 0;
  int64_t min_rounds = 0;
  int64_t max_rounds = 0;
  double round_time_s = 0;
  int64_t processes = 0;
  std::vector<std::string> engine_libraries;
};

struct Options {
  CLI::Option* devices;
  CLI::Option* directions;
  CLI::Option* strategies;
  CLI::Option* noise_target;
  CLI::Option* engine_alignment;
  CLI::Option* engine_max_chunk;
  CLI::Option* warmup;
  CLI::Option* min_samples;
  CLI::Option* min_time;
  CLI::Option* timeout;
  CLI::Option* overlap;
  CLI::Option* seed;
  CLI::Option* pinned_staging;
  CLI::Option* pack;
  CLI::Option* background_thread;
  CLI::Option* patterns;
  CLI::Option* ab_label;
  CLI::Option* inputs;
  CLI::Option* gap;
  CLI::Option* min_rounds;
  CLI::Option* max_rounds;
  CLI::Option* round_time;
  CLI::Option* processes;
};

// The rounds, the patterns and the host: what makes figures repeatable (measure/stopping.h).
void add_round_options(CLI::App& app, RunOptions& run, RawValues& raw, Options& o) {
  const std::string rounds = "Rounds and patterns";
  o.patterns = app.add_option("--pattern", raw.patterns,
                              "hot (same input back to back), step (new input after an idle gap, previous "
                              "output freed inside the sample) or hot,step (default: the config's, else both)")
                   ->type_name("LIST")
                   ->group(rounds);
  o.inputs = app.add_option("--inputs", raw.inputs, "Step pattern: inputs in rotation, successive seeds (default 8)")
                 ->check(CLI::Range(int64_t{1}, int64_t{1024}))
                 ->group(rounds);
  o.gap = app.add_option("--gap-us", raw.gap_us, "Step pattern: idle gap before each sample, outside the clock (default 2000)")
              ->check(CLI::Range(0.0, 1e7))
              ->group(rounds);
  o.min_rounds = app.add_option("--min-rounds", raw.min_rounds, "Fewest rounds per case (default 5)")
                     ->check(CLI::Range(int64_t{1}, int64_t{10000}))
                     ->group(rounds);
  o.max_rounds = app.add_option("--max-rounds", raw.max_rounds, "Most rounds per case (default 20)")
                     ->check(CLI::Range(int64_t{1}, int64_t{10000}))
                     ->group(rounds);
  o.round_time = app.add_option("--round-time", raw.round_time_s, "Loop time per case and round, seconds (default 0.05)")
                     ->check(CLI::NonNegativeNumber)
                     ->group(rounds);
  app.add_flag("--quick", run.quick, "3 short rounds per case: a run of seconds, with the wide intervals it earns")
      ->group(rounds);
  o.processes = app.add_option("--processes", raw.processes,
                               "Measure in N fresh processes one after another, each with 1/N of the rounds, "
                               "and merge them: the interval then covers what differs between processes "
                               "(default: the config's, else 3; 1 with --quick or --profile)")
                    ->check(CLI::Range(int64_t{1}, int64_t{64}))
                    ->group(rounds);
  app.add_option("--pin-cpu", run.pin_cpu, "Bind the process to CPUs: auto (the first GPU's local CPUs) or a list such as 0-7,16")
      ->type_name("auto|LIST")
      ->group(rounds);
  app.add_option("--round-cpus", run.round_cpus,
                 "Run each round of each case on N CPUs drawn anew per round from the seed, every thread "
                 "of the process confined to them: both builds of an A/B pair then share the CPUs' "
                 "speed (0: off, the default)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}))
      ->group(rounds);
  o.ab_label = app.add_option("--ab-label", raw.ab_label, "Label the report as one side of an A/B job, for `compare`")
                   ->type_name("JOB:SIDE:ROUND")
                   ->group(rounds);
  app.add_option("--child-index", run.child_index, "Internal: set by --processes in the processes it starts")
      ->group("");
  app.add_option("--child-count", run.child_count, "Internal: set by --processes in the processes it starts")
      ->check(CLI::Range(int64_t{1}, int64_t{64}))
      ->group("");
}

Options add_run_options(CLI::App& app, RunOptions& run, RawValues& raw) {
  Options o{};
  const std::string input = "Input";
  app.add_option("-c,--config", run.config_path,
                 "Benchmark config (JSON): a file, or the name of a shipped one (see `list`)")
      ->type_name("FILE")
      ->group(input);
  app.add_option("--input", run.input_path, "Benchmark a saved batch (.pt) instead of a config")
      ->type_name("FILE")
      ->group(input);
  app.add_option("--set", run.sets, "Override a config value: a parameter (samples=64) or a JSON pointer (/bench/warmup=3)")
      ->type_name("NAME=VALUE")
      ->group(input);
  app.add_option("--sweep", raw.sweeps,
                 "Run once per value (repeatable: the cartesian product of the axes)")
      ->type_name("NAME=V1,V2,...")
      ->group(input);
  o.seed = app.add_option("--seed", raw.seed, "Workload seed (default: the config's)")->group(input);

  const std::string selection = "Selection";
  o.devices = app.add_option("-d,--devices", raw.devices,
                             "GPU indices, e.g. 0,1: one thread per GPU, all at once (default: 0)")
                  ->type_name("LIST")
                  ->group(selection);
  o.directions = app.add_option("--direction", raw.directions, "h2d, d2h, d2d, h2h or all (default: the config's directions)")
                     ->type_name("LIST")
                     ->group(selection);
  o.strategies = app.add_option("-s,--strategy", raw.strategies, "Strategies to run (default: all; see below)")
                     ->type_name("LIST")
                     ->group(selection);

  const std::string measurement = "Measurement";
  o.warmup = app.add_option("--warmup", raw.warmup, "Warm-up runs per case (default: the config's bench.warmup, else 5)")
                 ->check(CLI::NonNegativeNumber)
                 ->group(measurement);
  o.min_samples = app.add_option("--min-samples", raw.min_samples, "Minimum samples per case (default 10)")
                      ->check(CLI::PositiveNumber)
                      ->group(measurement);
  o.min_time = app.add_option("--min-time", raw.min_time_s, "Minimum accumulated sample time, seconds (default 0.25)")
                   ->check(CLI::NonNegativeNumber)
                   ->group(measurement);
  o.noise_target = app.add_option("--noise-target", raw.noise_target,
                                  "Stop once the median's relative noise is under this (0.01 or 1%, the default)")
                       ->type_name("X")
                       ->group(measurement);
  o.timeout = app.add_option("--timeout", raw.timeout_s, "Stop a case after this many seconds (default 15)")
                  ->check(CLI::PositiveNumber)
                  ->group(measurement);
  o.overlap = app.add_option("--overlap-us", raw.overlap_us,
                             "Simulated caller work between start and get (us); reports the exposed copy")
                  ->check(CLI::NonNegativeNumber)
                  ->group(measurement);
  app.add_flag("--profile", run.profile,
               "Fixed samples per case between cudaProfilerStart/Stop, for nsys --capture-range=cudaProfilerApi")
      ->group(measurement);
  app.add_option("--profile-samples", run.profile_samples, "Samples per case with --profile")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group(measurement);

  const std::string output = "Output";
  app.add_option("--json", run.json_path, "Write the JSON report here")->type_name("PATH")->group(output);
  app.add_option("--md", run.md_path, "Write the markdown summary here")->type_name("PATH")->group(output);
  app.add_flag("--raw-samples", run.raw_samples, "Include every sample in the JSON report")->group(output);
  app.add_flag("-q,--quiet", run.quiet, "No progress bar or workload summary")->group(output);

  const std::string engine = "Engine (CopyOptions of the `engine` strategies)";
  o.pinned_staging = app.add_option("--engine-pinned-staging", raw.pinned_staging,
                                    "Stage CPU sources through pooled pinned memory (default on)")
                         ->type_name("on|off")
                         ->group(engine);
  o.pack = app.add_option("--engine-pack", raw.pack, "Pack small CPU tensors into chunks (default on)")
               ->type_name("on|off")
               ->group(engine);
  o.engine_alignment = app.add_option("--engine-alignment", raw.engine_alignment,
                                      "Minimum alignment of packed tensors (default 16)")
                           ->type_name("BYTES")
                           ->group(engine);
  o.engine_max_chunk = app.add_option("--engine-max-chunk", raw.engine_max_chunk,
                                      "Payload limit of one packed chunk (default 32MiB)")
                           ->type_name("BYTES")
                           ->group(engine);
  o.background_thread = app.add_option("--engine-background-thread", raw.background_thread,
                                       "Plan, stage and submit on the worker pool (default on)")
                            ->type_name("on|off")
                            ->group(engine);
  app.add_option("--engine-lib", raw.engine_libraries,
                 "Load a build of the engine (src/engine_plugin/standalone builds one) as LABEL: the strategies "
                 "VARIANT@LABEL copy with it. VARIANT@base (the baseline) is measured sample by sample against "
                 "VARIANT@cand, or VARIANT without a `cand` build (repeatable)")
      ->type_name("LABEL=PATH")
      ->group(engine);
  add_round_options(app, run, raw, o);
  return o;
}

// Turns what CLI11 collected into typed, validated options; throws UsageError.
void finish_run_options(const Options& o, const RawValues& raw, RunOptions& run) {
  if (o.devices->count() > 0) run.devices = parse_devices(raw.devices);
  if (o.directions->count() > 0) run.directions = parse_directions(raw.directions);
  if (o.strategies->count() > 0) run.strategies = parse_strategies(raw.strategies);
  if (o.noise_target->count() > 0) run.noise_target = parse_fraction(raw.noise_target);
  if (o.warmup->count() > 0) run.warmup = raw.warmup;
  if (o.min_samples->count() > 0) run.min_samples = raw.min_samples;
  if (o.min_time->count() > 0) run.min_time_s = raw.min_time_s;
  if (o.timeout->count() > 0) run.timeout_s = raw.timeout_s;
  if (o.overlap->count() > 0) run.overlap_us = raw.overlap_us;
  if (o.seed->count() > 0) run.seed = raw.seed;
  if (o.pinned_staging->count() > 0) run.engine.pinned_staging = raw.pinned_staging;
  if (o.pack->count() > 0) run.engine.pack = raw.pack;
  if (o.background_thread->count() > 0) run.engine.background_thread = raw.background_thread;
  if (o.engine_alignment->count() > 0) run.engine.alignment_bytes = parse_bytes(raw.engine_alignment);
  if (o.engine_max_chunk->count() > 0) run.engine.max_chunk_bytes = parse_bytes(raw.engine_max_chunk);
  if (o.patterns->count() > 0) run.patterns = parse_patterns(raw.patterns);
  if (o.inputs->count() > 0) run.inputs = raw.inputs;
  if (o.gap->count() > 0) run.gap_us = raw.gap_us;
  if (o.min_rounds->count() > 0) run.min_rounds = raw.min_rounds;
  if (o.max_rounds->count() > 0) run.max_rounds = raw.max_rounds;
  if (o.round_time->count() > 0) run.round_time_s = raw.round_time_s;
  if (o.ab_label->count() > 0) run.ab_label = parse_ab_label(raw.ab_label);
  for (const std::string& item : raw.engine_libraries) {
    const size_t eq = item.find('=');
    const std::string label = item.substr(0, eq);
    if (eq == std::string::npos || eq + 1 == item.size()) {
      throw UsageError(fmt::format("--engine-lib {}: expected LABEL=PATH", item));
    }
    if (!split_loaded_variant("engine@" + label)) {
      throw UsageError(fmt::format("--engine-lib {}: the label must be letters, digits, _ or -", item));
    }
    if (!run.engine_libraries.emplace(label, item.substr(eq + 1)).second) {
      throw UsageError(fmt::format("--engine-lib {}: the label {} is given twice", item, label));
    }
  }
  if (run.min_rounds && run.max_rounds && *run.max_rounds < *run.min_rounds) {
    throw UsageError(fmt::format("--max-rounds {} is below --min-rounds {}", *run.max_rounds, *run.min_rounds));
  }
  if (o.processes->count() > 0) run.processes = raw.processes;
  if (run.processes.value_or(1) > 1 && run.profile) throw UsageError("--processes and --profile do not mix: profile one process");
  if (!run.pin_cpu.empty() && run.pin_cpu != "auto") parse_cpu_list(run.pin_cpu);
  for (const std::string& set : run.sets) parse_assignment(set);
  for (const std::string& sweep : raw.sweeps) run.sweeps.push_back(parse_sweep(sweep));
  expand_sweeps(run.sweeps);  // rejects an axis swept twice
  if (!run.config_path.empty() && !run.input_path.empty()) {
    throw UsageError("give --config or --input, not both");
  }
}

}  // namespace

ParseResult parse_command_line(int argc, const char* const* argv, std::ostream& out,
                               std::ostream& err) {
  CommandLine cl;
  for (int i = 0; i < argc; ++i) cl.arguments.emplace_back(argv[i]);

  CLI::App app{kDescription, "mtc-bench"};
  app.footer(footer_text());
  app.set_version_flag("--version", "mtc-bench " MTC_VERSION " (git " MTC_GIT_REVISION ")");
  app.require_subcommand(0, 1);
  RawValues raw;
  const Options options = add_run_options(app, cl.run, raw);

  CLI::App* list = app.add_subcommand("list", "List the strategies and the shipped configs");
  bool only_strategies = false;
  bool only_configs = false;
  list->add_flag("--strategies", only_strategies, "Only the strategies");
  list->add_flag("--configs", only_configs, "Only the shipped configs");

  CLI::App* validate = app.add_subcommand(
      "validate", "Load configs (and build their workloads) without measuring anything");
  validate->add_option("configs", cl.validate.config_paths, "Config files or shipped names")->required();
  validate->add_option("--set", cl.validate.sets, "Override a config value: NAME=VALUE");
  bool no_build = false;
  validate->add_flag("--no-build", no_build, "Only parse and resolve; do not build the workloads");

  CompareArguments compare_arguments;
  CLI::App* compare = add_compare_subcommand(app, compare_arguments);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return {std::nullopt, code == 0 ? 0 : static_cast<int>(ExitCode::kUsage)};
  }

  try {
    if (list->parsed()) {
      cl.command = Command::kList;
      cl.list.strategies = only_strategies || !only_configs;
      cl.list.configs = only_configs || !only_strategies;
    } else if (validate->parsed()) {
      cl.command = Command::kValidate;
      cl.validate.build = !no_build;
      for (const std::string& set : cl.validate.sets) parse_assignment(set);
    } else if (compare->parsed()) {
      cl.command = Command::kCompare;
      cl.compare = finish_compare_options(compare_arguments);
    } else {
      cl.command = Command::kRun;
      finish_run_options(options, raw, cl.run);
      if (cl.run.config_path.empty() && cl.run.input_path.empty()) {
        throw UsageError("nothing to run: give --config FILE (or a shipped name; see `mtc-bench list`)");
      }
    }
  } catch (const UsageError& e) {
    err << "mtc-bench: error: " << e.what() << "\nRun with --help for more information.\n";
    return {std::nullopt, static_cast<int>(ExitCode::kUsage)};
  }
  return {std::move(cl), 0};
}

}  // namespace mtc::bench
