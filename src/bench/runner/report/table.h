// The results table shared by the console and markdown reporters: the same columns and cells,
// rendered two ways.
#pragma once

#include "runner/report/report.h"

#include <string>
#include <vector>

namespace mtc::bench {

struct Table {
  std::vector<std::string> header;
  std::vector<bool> right_aligned;  // per column: numbers right, names left
  std::vector<std::vector<std::string>> rows;
};

Table results_table(const RunSection& run);

// "812 ns", "81.2 us", "6.59 ms", "1.25 s": three significant digits, unit chosen to fit.
std::string format_duration(double seconds);
// "0.48 %".
std::string format_percent(double fraction);
// One line describing the workload: "528 tensors, 153,628 bytes (150.0 KiB)".
std::string workload_line(const RunSection& run);
// A short environment line: GPU name, driver, torch.
std::string environment_line(const nlohmann::json& context);

}  // namespace mtc::bench
