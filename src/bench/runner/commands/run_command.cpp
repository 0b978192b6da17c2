#include "runner/commands/commands.h"

#include "runner/commands/run_plan.h"
#include "errors.h"
#include "runner/cli/config_paths.h"
#include "runner/env/environment.h"
#include "runner/measure/bench_runner.h"
#include "runner/report/reporter.h"
#include "runner/strategies/engine.h"
#include "runner/strategies/structure.h"

#include <fmt/format.h>
#include <mtc/nvtx.h>

#include <fstream>
#include <memory>

#include "workload/summary.h"
#include "workload/workload.h"

namespace mtc::bench {
namespace {

// Opened before anything is measured, so a bad path fails in a second, not after the run.
std::unique_ptr<std::ofstream> open_output(const std::string& path) {
  if (path.empty()) return nullptr;
  auto file = std::make_unique<std::ofstream>(path);
  if (!*file) throw UsageError(fmt::format("cannot write {}", path));
  return file;
}

nlohmann::json sweep_point_json(const std::vector<std::string>& point) {
  nlohmann::json j = nlohmann::json::object();
  for (const std::string& set : point) {
    const Assignment a = parse_assignment(set);
    j[a.name] = a.value;
  }
  return j;
}

}  // namespace

int run_command(const CommandLine& command_line, std::ostream& out, std::ostream& err) {
  const RunOptions& options = command_line.run;
  auto json_file = open_output(options.json_path);
  auto md_file = open_output(options.md_path);

  // Every config (one per sweep point) is loaded before anything is measured, so a bad value
  // at the last point fails in a second, not after the other points ran.
  const std::string config_path = resolve_config_path(options.config_path, config_search_dirs());
  const std::vector<std::vector<std::string>> points = expand_sweeps(options.sweeps);
  std::vector<Config> configs;
  for (const std::vector<std::string>& point : points) {
    std::vector<std::string> sets = options.sets;
    sets.insert(sets.end(), point.begin(), point.end());
    if (options.seed) sets.push_back(fmt::format("/seed={}", *options.seed));
    configs.push_back(options.input_path.empty() ? load_config(config_path, sets)
                                                 : config_from_saved_batch(options.input_path, sets));
  }
  const int cuda_devices = cuda_device_count();
  std::vector<RunPlan> plans;
  for (const Config& config : configs) plans.push_back(make_run_plan(config, options, cuda_devices));
  if (cuda_devices == 0) err << "no CUDA device: running the h2h (CPU->CPU) direction only\n";

  Report report;
  report.context = collect_environment();
  report.command_line = command_line.arguments;
  report.profile = options.profile;
  const ConsoleReporter console;
  console.write_environment(report.context, out);
  Progress progress(!options.quiet);

  for (size_t p = 0; p < configs.size(); ++p) {
    const Config& config = configs[p];
    const RunPlan& plan = plans[p];
    BuildOptions build_options;
    build_options.cuda_available = cuda_devices > 0;
    BuildInfo info;
    c10::IValue workload;
    {
      MTC_RANGE(setup, "setup");
      workload = build_workload(config, build_options, &info);
    }
    const WorkloadSummary summary = summarize_workload(workload, info);
    if (!options.quiet) {
      out << '\n';
      print_summary(out, summary);
    }

    RunSection run;
    run.sweep_point = sweep_point_json(points[p]);
    run.config_file = config.file;
    run.config_name = config.name;
    run.seed = config.seed;
    run.config_given = config.given;
    run.config_resolved = config.resolved;
    run.settings = plan_to_json(plan);
    run.settings["engine_options"] = copy_options_json(engine_options(plan.engine));
    run.workload = summary.to_json();
    const LeafCount count = count_tensors(workload);
    run.tensors = count.tensors;
    run.bytes = count.bytes;

    RunOutcome outcome = run_benchmarks(workload, plan, progress);
    run.entries = std::move(outcome.entries);
    run.notes = std::move(outcome.notes);
    compute_speedups(run);
    compute_aggregates(run);
    console.write_run(run, out);
    out.flush();
    report.runs.push_back(std::move(run));
  }
  if (options.profile) out << "\nprofile mode: fixed sample counts, figures are not for comparison\n";

  report.exit_code = exit_code_for(report);
  if (json_file) JsonReporter().write(report, *json_file);
  if (md_file) MarkdownReporter().write(report, *md_file);
  for (auto* file : {json_file.get(), md_file.get()}) {
    if (file != nullptr && !file->flush()) throw std::runtime_error("writing a report failed");
  }
  if (report.exit_code == static_cast<int>(ExitCode::kVerification)) {
    err << "mtc-bench: a strategy's output failed verification (see the table)\n";
  } else if (report.exit_code == static_cast<int>(ExitCode::kRuntime)) {
    err << "mtc-bench: a strategy failed at run time (see the table)\n";
  }
  return report.exit_code;
}

}  // namespace mtc::bench
