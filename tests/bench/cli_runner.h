// Runs the whole program through run_cli with captured output, for the CLI tests.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "runner/commands/commands.h"

namespace mtc::bench::testing_support {

struct Ran {
  int code;
  std::string out;
  std::string err;
};

// `args` without the program name.
inline Ran run(std::vector<std::string> args) {
  args.insert(args.begin(), "mtc-bench");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out;
  std::ostringstream err;
  const int code = run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace mtc::bench::testing_support
