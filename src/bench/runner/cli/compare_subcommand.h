// The `compare` subcommand's CLI11 wiring, kept apart from the run options: it adds the
// subcommand to the app and turns what CLI11 collected into compare::CompareOptions.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "compare/compare_options.h"

namespace mtc::bench {

// The option values as CLI11 collects them (text), checked by finish_compare_options.
struct CompareArguments {
  compare::CompareOptions options;
  std::string threshold;
  std::string metric_thresholds;
  std::string fail_on = "slower";
  std::string baseline_kind = "auto";
};

CLI::App* add_compare_subcommand(CLI::App& app, CompareArguments& arguments);

// Throws UsageError naming the bad value.
compare::CompareOptions finish_compare_options(const CompareArguments& arguments);

}  // namespace mtc::bench
