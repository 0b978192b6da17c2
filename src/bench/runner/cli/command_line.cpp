#include "runner/cli/command_line.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "errors.h"
#include "mtc_git_revision.h"  // generated at build time: MTC_GIT_REVISION
#include "runner/cli/compare_subcommand.h"
#include "runner/cli/option_binder.h"
#include "runner/cli/parse.h"
#include "runner/cli/run_options.h"
#include "runner/strategies/catalog.h"
#include "shown.h"

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
  // The names' column is as wide as the longest name and a space.
  size_t width = 0;
  for (const StrategyInfo& info : strategy_catalog()) width = std::max(width, info.name.size());
  std::string strategies;
  for (const StrategyInfo& info : strategy_catalog()) {
    strategies += fmt::format("  {:<{}}{}\n", info.name, width + 1, info.summary);
  }
  return fmt::format(
      "Directions (--direction):\n"
      "  h2d  CPU tensors as the config builds them -> cuda:D\n"
      "  d2h  the workload moved to cuda:D beforehand (untimed) -> CPU\n"
      "  d2d  cuda:D -> the next GPU; needs two GPUs (with one, nothing would move: named\n"
      "       outright it is refused, from the config or `all` skipped with a note)\n"
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

}  // namespace

ParseResult parse_command_line(int argc, const char* const* argv, std::ostream& out,
                               std::ostream& err) {
  CommandLine cl;
  for (int i = 0; i < argc; ++i) cl.arguments.emplace_back(argv[i]);

  CLI::App app{kDescription, "mtc-bench"};
  app.footer(footer_text());
  app.set_version_flag("--version", "mtc-bench " MTC_VERSION " (git " MTC_GIT_REVISION ")");
  app.require_subcommand(0, 1);
  // CLI11's own errors (an unknown option, a value that is not a number) begin as ours do. They
  // quote the text at fault whole, in CLI11's words: their first line is cut as a path is
  // (shown.h), the count after the cut then being the line's, and the --help hint kept.
  app.failure_message([](const CLI::App* parsed, const CLI::Error& e) {
    const std::string message = CLI::FailureMessage::simple(parsed, e);
    const size_t end = std::min(message.find('\n'), message.size());
    return "mtc-bench: error: " + shown_path(std::string_view(message).substr(0, end)) +
           message.substr(end);
  });
  OptionBinder binder(app);
  add_run_options(app, cl.run, binder);

  CLI::App* list = app.add_subcommand("list", "List the strategies and the shipped configs");
  bool only_strategies = false;
  bool only_configs = false;
  list->add_flag("--strategies", only_strategies, "Only the strategies");
  list->add_flag("--configs", only_configs, "Only the shipped configs");

  CLI::App* validate = app.add_subcommand(
      "validate", "Load configs (and build their workloads) without measuring anything");
  validate->add_option("configs", cl.validate.config_paths, "Config files or shipped names")
      ->required();
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
      binder.finish();
      check_run_options(cl.run);
    }
  } catch (const UsageError& e) {
    err << "mtc-bench: error: " << e.what() << "\nRun with --help for more information.\n";
    return {std::nullopt, static_cast<int>(ExitCode::kUsage)};
  }
  return {std::move(cl), 0};
}

}  // namespace mtc::bench
