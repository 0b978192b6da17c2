// The subcommands, and run_cli: parse, dispatch, map every error kind to its exit code.
#pragma once

#include <ostream>

#include "runner/cli/options.h"

namespace mtc::bench {

// The whole program behind main(): returns the process exit code (errors.h's ExitCode).
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// `mtc-bench --config FILE ...`: measure and report. Returns 0, 3 or 4; throws UsageError or
// ConfigError for bad input (exit 2).
int run_command(const CommandLine& command_line, std::ostream& out, std::ostream& err);
// `mtc-bench list`.
int list_command(const ListOptions& options, std::ostream& out);
// `mtc-bench validate FILE...`: 0 when every config loads (and builds), else 2.
int validate_command(const ValidateOptions& options, std::ostream& out, std::ostream& err);
// `mtc-bench compare BASELINE CANDIDATE`: 0, or 1 when a case matches --fail-on; throws
// UsageError or ConfigError for bad input (exit 2), and returns 2 when nothing matched.
int compare_command(const compare::CompareOptions& options, std::ostream& out, std::ostream& err);

}  // namespace mtc::bench
