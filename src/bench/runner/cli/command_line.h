// The command line: CLI11 wiring of every option into a CommandLine. No ATen.
#pragma once

#include <optional>
#include <ostream>

#include "runner/cli/options.h"

namespace mtc::bench {

struct ParseResult {
  std::optional<CommandLine> command_line;  // empty when there is nothing to run
  int exit_code = 0;                        // meaningful when command_line is empty
};

// Parses argv. --help and --version print to `out` and give exit code 0; errors print one line
// (and a hint to --help) to `err` and give exit code 2.
ParseResult parse_command_line(int argc, const char* const* argv, std::ostream& out,
                               std::ostream& err);

}  // namespace mtc::bench
