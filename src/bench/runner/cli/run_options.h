// The options of the run command (no subcommand), each declared once, in run_options.cpp: its
// names, its help, the RunOptions field it fills and how its text is read. Every default the
// help shows is read from the struct that holds it (BenchSettings, CaseSettings, the plan's
// QuickSettings and ProfileSettings, the engine's CopyOptions), never retyped; docs/cli.md
// repeats them and tests/bench/documented_defaults_test.cpp holds the two together.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "runner/cli/option_binder.h"
#include "runner/cli/options.h"

namespace mtc::bench {

void add_run_options(CLI::App& app, RunOptions& run, OptionBinder& binder);

// The options a parent of --processes keeps to itself (the report files, quietness, how it
// numbers its children), as the command line spells them, and whether each takes a value: read
// from their declarations, for processes.cpp to strip them from its children's command lines.
struct ParentOnlyOption {
  std::string name;
  bool takes_value = false;
};
std::vector<ParentOnlyOption> parent_only_options();

// What no single option can check: options that do not mix, and a run with nothing to run.
// After binder.finish(); throws UsageError. The round limits are checked where they meet the
// config's (commands/make_run_plan.h).
void check_run_options(const RunOptions& run);

}  // namespace mtc::bench
