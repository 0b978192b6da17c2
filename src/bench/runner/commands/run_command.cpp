#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mtc/nvtx.h>

#include <algorithm>
#include <memory>

#include "errors.h"
#include "report/file_reporter.h"
#include "report/output_paths.h"
#include "report/reporter.h"
#include "runner/cli/config_paths.h"
#include "runner/commands/build_limits.h"
#include "runner/commands/commands.h"
#include "runner/commands/make_run_plan.h"
#include "runner/commands/processes.h"
#include "runner/env/environment.h"
#include "runner/env/host_state.h"
#include "runner/measure/bench_runner.h"
#include "runner/measure/interrupt.h"
#include "runner/strategies/engine.h"
#include "runner/strategies/structure.h"
#include "shown.h"
#include "workload/summary.h"
#include "workload/workload.h"

namespace mtc::bench {
namespace {

nlohmann::json sweep_point_json(const std::vector<std::string>& point) {
  nlohmann::json j = nlohmann::json::object();
  for (const std::string& set : point) {
    const Assignment a = parse_assignment(set);
    j[a.name] = a.value;
  }
  return j;
}

// A --sweep of a parameter the config does not declare, refused in the words of --sweep: each
// point's value reaches the config as a --set, whose error named an option never given.
void check_swept_parameters(const std::vector<SweepAxis>& sweeps, const Config& base) {
  const nlohmann::json params = base.given.value("params", nlohmann::json::object());
  for (const SweepAxis& axis : sweeps) {
    if (axis.name.starts_with('/') || (params.is_object() && params.contains(axis.name))) continue;
    std::vector<std::string> declared;
    if (params.is_object()) {
      for (const auto& [name, unused] : params.items()) declared.push_back(name);
    }
    throw UsageError(fmt::format("--sweep {}: unknown parameter '{}'; declared in \"params\": {}",
                                 shown(axis.name), shown(axis.name),
                                 declared.empty() ? "none" : shown_list(declared)));
  }
}

// The CPUs of a --pin-cpu list; a UsageError when this process may not use some of them
// (`allowed`, its affinity; empty when unknown). The parent of --processes checks there, before
// any child starts, as each child would.
std::vector<int> listed_pin_cpus(const std::string& request, const std::vector<int>& allowed) {
  std::vector<int> cpus = parse_cpu_list(request);
  std::vector<int> outside;
  for (int c : cpus) {
    if (!std::binary_search(allowed.begin(), allowed.end(), c)) outside.push_back(c);
  }
  if (!allowed.empty() && !outside.empty()) {
    throw UsageError(
        fmt::format("--pin-cpu {}: CPU{} {} not available to this process (it may "
                    "use {})",
                    request, outside.size() == 1 ? "" : "s", cpu_list_to_text(outside),
                    cpu_list_to_text(allowed)));
  }
  return cpus;
}

// --pin-cpu: "auto" binds to the first GPU's local CPUs (from sysfs), a list binds to it.
// Returns the CPUs bound to, or null when not asked or not possible (said on `err`).
nlohmann::json pin_cpus(const std::string& request, const std::vector<int>& devices,
                        const nlohmann::json& gpus, std::ostream& err) {
  if (request.empty()) return nullptr;
  // The CPUs this process may use, read before anything confines it: the kernel binds to those
  // of a list and drops the others without a word, and the report would name them.
  const std::vector<int> allowed = process_affinity();
  const auto may_use = [&](int c) { return std::binary_search(allowed.begin(), allowed.end(), c); };
  std::vector<int> cpus;
  if (request == "auto") {
    const int device = devices.empty() ? -1 : devices.front();
    if (device < 0 || device >= static_cast<int>(gpus.size())) {
      err << "mtc-bench: warning: --pin-cpu auto: no GPU to take the local CPUs of; not pinned\n";
      return nullptr;
    }
    const GpuLocality locality = read_gpu_locality("/sys/bus/pci/devices/" +
                                                   gpus[device].value("pci_bus_id", std::string()));
    if (!locality.local_cpus) {
      err << "mtc-bench: warning: --pin-cpu auto: GPU " << device
          << "'s local CPUs are unknown; not pinned\n";
      return nullptr;
    }
    // Only those this process may use (a container's share of a socket, say).
    for (int c : *locality.local_cpus) {
      if (may_use(c)) cpus.push_back(c);
    }
    if (cpus.empty()) {
      err << "mtc-bench: warning: --pin-cpu auto: this process may use none of GPU " << device
          << "'s local CPUs; not pinned\n";
      return nullptr;
    }
  } else {
    cpus = listed_pin_cpus(request, allowed);
  }
  if (const std::string error = pin_process_to(cpus); !error.empty()) {
    throw UsageError("--pin-cpu " + request + ": " + error);
  }
  return cpu_list_to_text(cpus);
}

// How many workloads the run builds: the config's, and for the step patterns K - 1 more.
int64_t input_count(const RunPlan& plan) {
  const auto& patterns = plan.settings.patterns;
  const bool step = std::any_of(patterns.begin(), patterns.end(), is_step);
  return step ? plan.settings.inputs : 1;
}

BuildOptions build_limits(const RunPlan& plan, int cuda_devices) {
  return build_options_for(physical_memory_bytes(), input_count(plan), cuda_devices > 0);
}

// The inputs of the run: the config's workload, and for the step pattern K - 1 more built with
// the following seeds (a saved batch is copied again: the same values in fresh memory).
std::vector<c10::IValue> build_inputs(const Config& config, const RunPlan& plan,
                                      const BuildOptions& options, BuildInfo& info) {
  const int64_t count = input_count(plan);
  std::vector<c10::IValue> inputs;
  for (int64_t k = 0; k < count; ++k) {
    Config next = config;
    next.seed = config.seed + static_cast<uint64_t>(k);
    inputs.push_back(build_workload(next, options, k == 0 ? &info : nullptr));
  }
  return inputs;
}

// The outputs of a run: the console, and the --json and --md files. Created before anything is
// measured, so a path that cannot be written, or that names a file the run reads, fails in a
// second, not after the run.
MultiplexReporter run_outputs(const RunOptions& options, const std::string& config_path,
                              std::ostream& out) {
  std::vector<NamedPath> inputs{{"--config", config_path}, {"--input", options.input_path}};
  for (const auto& [label, path] : options.engine_libraries)
    inputs.push_back({"--engine-lib", path});
  check_outputs_apart(inputs, {{"--json", options.json_path}, {"--md", options.md_path}});
  MultiplexReporter outputs;
  outputs.add(std::make_unique<ConsoleReporter>(out));
  if (!options.json_path.empty()) {
    outputs.add(FileReporter::to_file<JsonReporter>("--json", options.json_path));
  }
  if (!options.md_path.empty()) {
    outputs.add(FileReporter::to_file<MarkdownReporter>("--md", options.md_path));
  }
  return outputs;
}

// Ends the report (the outputs' end: the files are written), says why the exit code is not 0,
// and returns it. An interrupted run exits with 130 unless an output failed verification (wrong
// data is the worse finding).
int end_report(Report& report, Reporter& outputs, std::ostream& err) {
  report.interrupted = interrupted();
  report.exit_code = exit_code_for(report);
  if (report.interrupted && report.exit_code != static_cast<int>(ExitCode::kVerification)) {
    report.exit_code = static_cast<int>(ExitCode::kInterrupted);
  }
  outputs.end(report);
  if (report.interrupted) {
    err << "mtc-bench: interrupted: the reports hold what was measured until then\n";
  } else if (report.exit_code == static_cast<int>(ExitCode::kVerification)) {
    err << "mtc-bench: a strategy's output failed verification (see the table)\n";
  } else if (report.exit_code == static_cast<int>(ExitCode::kRuntime)) {
    err << "mtc-bench: a strategy failed at run time (see the table)\n";
  }
  return report.exit_code;
}

// --processes N in the parent: the children measure, the parent merges and reports.
int run_in_processes(const CommandLine& command_line, int processes, Reporter& outputs,
                     std::ostream& err) {
  Report report = run_child_processes(command_line, processes, err);
  report.command_line = command_line.arguments;
  outputs.begin(report.context);
  for (const RunSection& run : report.runs) outputs.run(run);
  return end_report(report, outputs, err);
}

// Which build each engine strategy copies with: this program's, and each loaded one's.
nlohmann::json engine_revisions(const LoadedEngines& engines) {
  nlohmann::json j{{"engine", build_revision()}};
  for (const auto& [label, engine] : engines)
    j["@" + label] = {{"revision", engine->revision()}, {"path", engine->path()}};
  return j;
}

}  // namespace

int run_command(const CommandLine& command_line, std::ostream& out, std::ostream& err) {
  const RunOptions& options = command_line.run;
  install_interrupt_handlers();
  if (options.child_index >= 0) end_with_parent();
  const std::string config_path = resolve_config_path(options.config_path, config_search_dirs());
  MultiplexReporter outputs = run_outputs(options, config_path, out);

  // Every config (one per sweep point) is loaded before anything is measured, so a bad value
  // at the last point fails in a second, not after the other points ran.
  if (!options.sweeps.empty() && options.input_path.empty())
    check_swept_parameters(options.sweeps, load_config(config_path, options.sets));
  const std::vector<std::vector<std::string>> points = expand_sweeps(options.sweeps);
  std::vector<Config> configs;
  for (const std::vector<std::string>& point : points) {
    std::vector<std::string> sets = options.sets;
    sets.insert(sets.end(), point.begin(), point.end());
    if (options.seed) sets.push_back(fmt::format("/seed={}", *options.seed));
    configs.push_back(options.input_path.empty()
                          ? load_config(config_path, sets)
                          : config_from_saved_batch(options.input_path, sets));
  }
  // The .npy and .pt files a config reads are known once it is loaded: no report over them.
  std::vector<NamedPath> data_inputs;
  for (const Config& config : configs) {
    for (const std::string& file : data_files(config)) data_inputs.push_back({"data file", file});
  }
  check_outputs_apart(data_inputs, {{"--json", options.json_path}, {"--md", options.md_path}});
  const int cuda_devices = cuda_device_count();
  std::vector<RunPlan> plans;
  for (size_t p = 0; p < configs.size(); ++p) {
    const Config& config = configs[p];
    plans.push_back(make_run_plan(config, options, cuda_devices, points[p]));
    // Counted, not built: a workload larger than the machine fails here, before any point runs.
    count_workload(config, build_limits(plans.back(), cuda_devices));
  }
  if (executable_for_children().empty()) {
    if (options.processes.value_or(1) > 1)
      throw UsageError("--processes needs the mtc-bench program itself to start");
    for (RunPlan& plan : plans) plan.processes = 1;
  }
  if (options.child_index < 0) {
    for (const RunPlan& plan : plans) check_rounds_per_process(plan);
    const size_t cpus = process_affinity().size();
    if (options.round_cpus && static_cast<size_t>(*options.round_cpus) > cpus) {
      throw UsageError(fmt::format("--round-cpus {}: this process may run on {} CPU{} only",
                                   *options.round_cpus, cpus, cpus == 1 ? "" : "s"));
    }
  }
  // Loaded before anything is measured: a bad build fails in a second (exit 2). The parent of
  // --processes loads them too, for that check.
  const LoadedEngines engines = load_engines(options.engine_libraries);
  if (plans.front().processes > 1 && options.child_index < 0) {
    if (!options.pin_cpu.empty() && options.pin_cpu != "auto")
      listed_pin_cpus(options.pin_cpu, process_affinity());
    return run_in_processes(command_line, plans.front().processes, outputs, err);
  }
  if (cuda_devices == 0) err << "no CUDA device: running the h2h (CPU->CPU) direction only\n";

  Report report;
  report.context = collect_environment();
  // Before this process creates a CUDA context: any process NVML lists now is another one.
  const GpuMonitor monitor;
  const nlohmann::json host_start = host_snapshot(monitor, report.context["gpus"]);
  nlohmann::json host = host_layout(report.context["gpus"]);
  host["pinned"] = pin_cpus(options.pin_cpu, plans.front().devices, report.context["gpus"], err);
  if (!host["pinned"].is_null()) host["affinity"] = cpu_list_to_text(process_affinity());
  host["nvml"] =
      monitor.available() ? nlohmann::json("ok") : nlohmann::json(monitor.why_unavailable());
  report.command_line = command_line.arguments;
  report.profile = options.profile;
  if (options.ab_label) {
    report.ab = {{"job", options.ab_label->job},
                 {"side", options.ab_label->side},
                 {"round", options.ab_label->round}};
  }
  outputs.begin(report.context);
  Progress progress(!options.quiet);

  for (size_t p = 0; p < configs.size() && !interrupted(); ++p) {
    const Config& config = configs[p];
    const RunPlan& plan = plans[p];
    const BuildOptions build_options = build_limits(plan, cuda_devices);
    BuildInfo info;
    std::vector<c10::IValue> workloads;
    {
      MTC_RANGE(setup, "setup");
      workloads = build_inputs(config, plan, build_options, info);
    }
    const c10::IValue& workload = workloads.front();
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
    run.settings["engine_revisions"] = engine_revisions(engines);
    run.workload = summary.to_json();
    run.workload_hash = workload_hash(config.resolved, config.seed);
    const LeafCount count = count_tensors(workload);
    run.tensors = count.tensors;
    run.bytes = count.bytes;

    RunOutcome outcome = run_benchmarks(workloads, plan, engines, progress);
    run.entries = std::move(outcome.entries);
    run.notes = std::move(outcome.notes);
    run.host_canary = canary_json(outcome.canary);
    if (const std::string note = canary_note(outcome.canary); !note.empty())
      run.notes.push_back(note);
    compute_speedups(run);
    compute_aggregates(run);
    outputs.run(run);
    out.flush();
    report.runs.push_back(std::move(run));
  }
  const nlohmann::json host_end = host_snapshot(monitor, report.context["gpus"]);
  const std::vector<std::string> warnings = busy_host_warnings(
      host_start, host_end, report.context["cpu"].value("logical_cores", 1), plans.front().devices);
  for (const std::string& w : warnings) err << "mtc-bench: warning: busy host: " << w << '\n';
  host["start"] = host_start;
  host["end"] = host_end;
  host["busy"] = !warnings.empty();
  host["warnings"] = warnings;
  report.context["host_state"] = std::move(host);

  return end_report(report, outputs, err);
}

}  // namespace mtc::bench
