#include "runner/cli/run_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "errors.h"
#include "runner/cli/parse.h"
#include "runner/measure/run_plan.h"
#include "runner/strategies/engine_overrides.h"
#include "shown.h"
#include "workload/bench_settings.h"

namespace mtc::bench {
namespace {

using Texts = std::vector<std::string>;

// What an option left out leaves to: the config's `bench` value, which a config without one
// has at BenchSettings' default.
template <typename T>
std::string config_default(const char* key, const T& value) {
  return fmt::format("(default: the config's bench.{}, else {})", key, value);
}

std::string on_off(bool value) { return value ? "on" : "off"; }

Texts checked_sets(const Texts& sets) {
  for (const std::string& set : sets) parse_assignment(set);
  return sets;
}

std::vector<SweepAxis> parse_sweeps(const Texts& items) {
  std::vector<SweepAxis> axes;
  for (const std::string& item : items) axes.push_back(parse_sweep(item));
  expand_sweeps(axes);  // rejects an axis swept twice
  return axes;
}

std::string checked_pin_cpu(const std::string& request) {
  if (request != "auto") parse_cpu_list(request);
  return request;
}

// A byte size of `option` within `bounds`, the bounds said in bytes' units.
auto checked_bytes(const char* option, SettingBounds<int64_t> bounds) {
  return [option, bounds](const std::string& text) {
    const int64_t bytes = parse_bytes(text);
    if (!bounds.contains(bytes)) {
      throw UsageError(fmt::format("{} {}: must be {} to {}", option, shown(text),
                                   bytes_text(bounds.min), bytes_text(bounds.max)));
    }
    return bytes;
  };
}

void add_input_options(CLI::App& app, RunOptions& run, OptionBinder& binder) {
  const std::string group = "Input";
  app.add_option("-c,--config", run.config_path,
                 "Benchmark config (JSON): a file, or the name of a shipped one (see `list`)")
      ->type_name("FILE")
      ->check(kNotEmpty)
      ->group(group);
  app.add_option("--input", run.input_path, "Benchmark a saved batch (.pt) instead of a config")
      ->type_name("FILE")
      ->check(kNotEmpty)
      ->group(group);
  binder
      .add<Texts>("--set", run.sets, checked_sets,
                  "Override a config value: a parameter (samples=64) or a JSON pointer "
                  "(/bench/warmup=3)")
      ->type_name("NAME=VALUE")
      ->group(group);
  binder
      .add<Texts>("--sweep", run.sweeps, parse_sweeps,
                  "Run once per value (repeatable: the cartesian product of the axes)")
      ->type_name("NAME=V1,V2,...")
      ->group(group);
  binder.add<std::string>("--seed", run.seed, parse_seed, "Workload seed (default: the config's)")
      ->type_name("N")
      ->group(group);
}

void add_selection_options(RunOptions& run, OptionBinder& binder) {
  const std::string group = "Selection";
  binder
      .add<Texts>("-d,--devices", run.devices, parse_devices,
                  "GPU indices, e.g. 0,1: one thread per GPU, all at once " +
                      config_default("devices", kDefaultDevice))
      ->type_name("LIST")
      ->group(group);
  binder
      .add<Texts>(
          "--direction", run.directions,
          [&run](const Texts& items) {
            const Texts named = split_list(items);
            run.all_directions = std::find(named.begin(), named.end(), "all") != named.end();
            return parse_directions(items);
          },
          "h2d, d2h, d2d, h2h or all (default: the config's directions)")
      ->type_name("LIST")
      ->group(group);
  binder
      .add<Texts>("-s,--strategy", run.strategies, parse_strategies,
                  "Strategies to run " + config_default("strategies", "all") + "; see below")
      ->type_name("LIST")
      ->group(group);
}

void add_measurement_options(CLI::App& app, RunOptions& run, OptionBinder& binder) {
  const std::string group = "Measurement";
  const BenchSettings defaults;
  binder
      .add_within("--warmup", run.warmup, kWarmupBounds,
                  "Warm-up runs per case " + config_default("warmup", defaults.warmup))
      ->group(group);
  binder
      .add_within("--min-samples", run.min_samples, kMinSamplesBounds,
                  "Minimum samples per case " + config_default("min_samples", defaults.min_samples))
      ->group(group);
  binder
      .add_within("--min-time", run.min_time_s, kMinTimeBounds,
                  "Minimum accumulated sample time, seconds " +
                      config_default("min_time_s", defaults.min_time_s))
      ->group(group);
  binder
      .add<std::string>(
          "--noise-target", run.noise_target,
          [](const std::string& text) {
            return checked_within("--noise-target", parse_fraction(text), kNoiseTargetBounds, text);
          },
          "Stop once the median's relative noise is under this, as 0.01 or 1% " +
              config_default("noise_target", defaults.noise_target))
      ->type_name("X")
      ->group(group);
  binder
      .add_within(
          "--timeout", run.timeout_s, kTimeoutBounds,
          "Stop a case after this many seconds " + config_default("timeout_s", defaults.timeout_s))
      ->group(group);
  binder
      .add_within("--overlap-us", run.overlap_us, kOverlapUsBounds,
                  "Simulated caller work between start and get (us); reports the exposed copy " +
                      config_default("overlap_us", defaults.overlap_us))
      ->group(group);
  app.add_flag("--profile", run.profile,
               "Fixed samples per case between cudaProfilerStart/Stop, for nsys "
               "--capture-range=cudaProfilerApi")
      ->group(group);
  binder
      .add_within(
          "--profile-samples", run.profile_samples, kProfileSamplesBounds,
          fmt::format("Samples per case with --profile (default {})", ProfileSettings{}.samples))
      ->group(group);
}

// The parent of --processes writes the merged report and the tables; each child gets its own
// report file and runs quietly (processes.cpp): these are the parent's alone.
void add_output_options(CLI::App& app, RunOptions& run, OptionBinder& binder) {
  const std::string group = "Output";
  binder.parent_only(app.add_option("--json", run.json_path, "Write the JSON report here"))
      ->type_name("PATH")
      ->check(kReportPath)
      ->group(group);
  binder.parent_only(app.add_option("--md", run.md_path, "Write the markdown summary here"))
      ->type_name("PATH")
      ->check(kReportPath)
      ->group(group);
  binder
      .parent_only(
          app.add_flag("--raw-samples", run.raw_samples, "Include every sample in the JSON report"))
      ->group(group);
  binder.parent_only(app.add_flag("-q,--quiet", run.quiet, "No progress bar or workload summary"))
      ->group(group);
}

void add_engine_options(RunOptions& run, OptionBinder& binder) {
  const std::string group = "Engine (CopyOptions of the `engine` strategies)";
  const EngineOverrides defaults = engine_defaults();
  EngineOverrides& engine = run.engine;
  binder
      .add_on_off("--engine-pinned-staging", engine.pinned_staging,
                  "Stage CPU sources through pooled pinned memory (default " +
                      on_off(*defaults.pinned_staging) + ")")
      ->group(group);
  binder
      .add_on_off("--engine-pack", engine.pack,
                  "Pack small CPU tensors into chunks (default " + on_off(*defaults.pack) + ")")
      ->group(group);
  binder
      .add<std::string>("--engine-alignment", engine.alignment_bytes,
                        checked_bytes("--engine-alignment", {1, engine_max_alignment_bytes()}),
                        "Minimum alignment of packed tensors (default " +
                            bytes_text(*defaults.alignment_bytes) + ")")
      ->type_name("BYTES")
      ->group(group);
  binder
      .add<std::string>("--engine-max-chunk", engine.max_chunk_bytes, parse_bytes,
                        "Payload limit of one packed chunk (default " +
                            bytes_text(*defaults.max_chunk_bytes) + ")")
      ->type_name("BYTES")
      ->group(group);
  binder
      .add_on_off("--engine-background-thread", engine.background_thread,
                  "Plan, stage and submit on the worker pool (default " +
                      on_off(*defaults.background_thread) + ")")
      ->group(group);
  binder
      .add<Texts>("--engine-lib", run.engine_libraries, parse_engine_libraries,
                  "Load a build of the engine (src/engine_plugin/standalone builds one) as LABEL: "
                  "the strategies VARIANT@LABEL copy with it. VARIANT@base (the baseline) is "
                  "measured sample by sample against VARIANT@cand, or VARIANT without a `cand` "
                  "build (repeatable)")
      ->type_name("LABEL=PATH")
      ->group(group);
}

// The rounds, the patterns and the host: what makes figures repeatable (measure/stopping.h).
void add_round_options(CLI::App& app, RunOptions& run, OptionBinder& binder) {
  const std::string group = "Rounds and patterns";
  const BenchSettings defaults;
  binder
      .add<Texts>(
          "--pattern", run.patterns, parse_patterns,
          "hot (same input back to back), step (new input after an idle gap, previous output "
          "freed inside the sample, after the next copy started; its gaps as --gap-mode says), "
          "step-busy, or a list " +
              config_default("patterns", fmt::format("{}", fmt::join(defaults.patterns, ","))))
      ->type_name("LIST")
      ->group(group);
  binder
      .add_within("--inputs", run.inputs, kInputsBounds,
                  "Step pattern: inputs in rotation, successive seeds " +
                      config_default("inputs", defaults.inputs))
      ->group(group);
  binder
      .add_within("--gap-us", run.gap_us, kGapUsBounds,
                  "Step pattern: idle gap before each sample, outside the clock " +
                      config_default("gap_us", defaults.gap_us))
      ->group(group);
  binder
      .add<std::string>("--gap-mode", run.gap_mode, parse_gap_mode_choice,
                        "Step pattern: the caller sleeps in the gap (sleep: `step`), works through "
                        "a buffer larger than the last-level cache (busy: `step-busy`), or both " +
                            config_default("gap_mode", defaults.gap_mode))
      ->type_name("sleep|busy|both")
      ->group(group);
  binder
      .add<std::string>("--gap-touch-bytes", run.gap_touch_bytes,
                        checked_bytes("--gap-touch-bytes", kGapTouchBytesBounds),
                        "Step-busy: the buffer the caller touches in the gap " +
                            config_default("gap_touch_bytes", bytes_text(defaults.gap_touch_bytes)))
      ->type_name("BYTES")
      ->group(group);
  binder
      .add_within("--min-rounds", run.min_rounds, kRoundsBounds,
                  "Fewest rounds per case " + config_default("min_rounds", defaults.min_rounds))
      ->group(group);
  binder
      .add_within("--max-rounds", run.max_rounds, kRoundsBounds,
                  "Most rounds per case " + config_default("max_rounds", defaults.max_rounds))
      ->group(group);
  binder
      .add_within("--round-time", run.round_time_s, kRoundTimeBounds,
                  "Loop time per case and round, seconds " +
                      config_default("round_time_s", defaults.round_time_s))
      ->group(group);
  app.add_flag("--quick", run.quick,
               fmt::format("{} short rounds per case: a run of seconds, with the wide intervals it "
                           "earns",
                           QuickSettings{}.rounds))
      ->group(group);
  binder
      .parent_only(binder.add_within(
          "--processes", run.processes, kProcessesBounds,
          "Measure in N fresh processes one after another, each with 1/N of the rounds, and "
          "merge them: the interval then covers what differs between processes " +
              config_default("processes", defaults.processes) + "; 1 with --quick or --profile"))
      ->group(group);
  binder
      .add<std::string>("--pin-cpu", run.pin_cpu, checked_pin_cpu,
                        "Bind the process to CPUs: auto (the first GPU's local CPUs) or a list "
                        "such as 0-7,16")
      ->type_name("auto|LIST")
      ->check(kNotEmpty)
      ->group(group);
  binder
      .add_within("--round-cpus", run.round_cpus, kRoundCpusBounds,
                  fmt::format("Run each round of each case on N CPUs drawn anew per round from "
                              "the seed, every thread of the process confined to them: both "
                              "builds of an A/B pair then share the CPUs' speed (default {}: off)",
                              CaseSettings{}.round_cpus))
      ->group(group);
  binder
      .add<std::string>("--ab-label", run.ab_label, parse_ab_label,
                        "Label the report as one side of an A/B job, for `compare`")
      ->type_name("JOB:SIDE:ROUND")
      ->group(group);
  binder
      .parent_only(app.add_option("--child-index", run.child_index,
                                  "Internal: set by --processes in the processes it starts"))
      ->group("");
  binder
      .parent_only(app.add_option("--child-count", run.child_count,
                                  "Internal: set by --processes in the processes it starts"))
      ->check(CLI::Range(kProcessesBounds.min, kProcessesBounds.max))
      ->group("");
}

}  // namespace

void add_run_options(CLI::App& app, RunOptions& run, OptionBinder& binder) {
  add_input_options(app, run, binder);
  add_selection_options(run, binder);
  add_measurement_options(app, run, binder);
  add_output_options(app, run, binder);
  add_engine_options(run, binder);
  add_round_options(app, run, binder);
}

std::vector<ParentOnlyOption> parent_only_options() {
  CLI::App app;
  RunOptions run;
  OptionBinder binder(app);
  add_run_options(app, run, binder);
  std::vector<ParentOnlyOption> options;
  for (const CLI::Option* option : binder.parent_only()) {
    // A flag's type size is 1 in CLI11 too; the number of values it expects tells them apart.
    const bool takes_value = option->get_items_expected_max() > 0;
    for (const std::string& name : option->get_lnames())
      options.push_back({"--" + name, takes_value});
    for (const std::string& name : option->get_snames())
      options.push_back({"-" + name, takes_value});
  }
  return options;
}

}  // namespace mtc::bench
