// The comparison shown three ways: a console table, markdown (for a CI job summary) and JSON
// (for scripts/plot.py and other tools). Pure functions of the Comparison.
#pragma once

#include "compare/comparison.h"

#include <nlohmann/json.hpp>

#include <string>

namespace mtc::bench::compare {

// The version of the JSON below; bumped when a field is renamed, retyped or removed.
inline constexpr int kCompareJsonVersion = 1;

std::string console_text(const Comparison& comparison, FailOn fail_on, int exit_code);
std::string markdown_text(const Comparison& comparison, FailOn fail_on, int exit_code);
// Every number finite: an unbounded interval edge is null.
nlohmann::json comparison_json(const Comparison& comparison, FailOn fail_on, int exit_code);

// "+10.2 %" for a ratio of 1.102.
std::string format_change(double ratio);
// "[+8.1 %, +12.3 %]", with "+inf" for an unbounded edge.
std::string format_interval(const Change& change);
// A metric's value: a time ("6.59 ms") or a speedup ("19.9x").
std::string format_value(Metric metric, double value);

}  // namespace mtc::bench::compare
