// The results table shared by the console and markdown reporters: the same columns and cells,
// rendered two ways.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace mtc::bench {

struct Table {
  std::vector<std::string> header;
  std::vector<bool> right_aligned;  // per column: numbers right, names left
  std::vector<std::vector<std::string>> rows;
};

Table results_table(const RunSection& run);

// What the table's columns mean, printed under it.
inline constexpr const char* kTableLegend =
    "median, p90: wall time from the start call until the data is usable on the target (device "
    "synchronized), over all rounds; interval: 95 % confidence interval of the median, including "
    "the variation between rounds; blocked: how long the start call kept the caller; noise: the "
    "larger of the within- and between-round relative standard errors of the median; speedup: "
    "against per-tensor `.to()` in the same pattern, paired per round, with its 95 % interval; "
    "pattern: hot (same input back to back) or step (a new input after an idle gap, the previous "
    "output freed inside the sample, once the next copy has started).";

// "812 ns", "81.2 us", "6.59 ms", "1.25 s": three significant digits, unit chosen to fit.
std::string format_duration(double seconds);
// "0.48 %".
std::string format_percent(double fraction);
// "112 us - 118 us"; "unknown" when the interval is unbounded (a single round).
std::string format_interval(const Interval& interval);
// "43.2x (40.1-46.0)": the paired estimate and its interval.
std::string format_speedup(const RatioEstimate& speedup);
// One line describing the workload: "528 tensors, 153,628 bytes (150.0 KiB)".
std::string workload_line(const RunSection& run);
// A short environment line: GPU name, driver, torch.
std::string environment_line(const nlohmann::json& context);

}  // namespace mtc::bench
