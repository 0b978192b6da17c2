// Runs the whole program in-process, as main() would, capturing what it prints.
#pragma once

#include "runner/commands/commands.h"

#include <sstream>
#include <string>
#include <vector>

namespace mtc::bench::testing_support {

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

// `args` without the program name.
inline CliResult run_mtc_bench(std::vector<std::string> args) {
  args.insert(args.begin(), "mtc-bench");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out;
  std::ostringstream err;
  const int code = run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace mtc::bench::testing_support
