// The comparison shown three ways, through the reporters' lifecycle (report/reporter.h): a
// console table, markdown (for a CI job summary) and JSON (for scripts/plot.py and other tools).
// `begin` is told how the comparison was made (its notes), `run` each compared case, `end` the
// outcome (the comparison, what fails, the exit code). Pure functions of the Comparison.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "compare/comparison.h"
#include "report/reporter.h"

namespace mtc::bench::compare {

// The version of the JSON below; bumped when a field is renamed, retyped or removed.
inline constexpr int kCompareJsonVersion = 1;

// What a comparison's outputs are told at the end: the comparison and what the command made of
// it.
struct ComparisonOutcome {
  const Comparison& comparison;
  FailOn fail_on;
  int exit_code;
};

using ComparisonReporter = BasicReporter<Comparison, CaseResult, ComparisonOutcome>;
using MultiplexComparisonReporter =
    BasicMultiplexReporter<Comparison, CaseResult, ComparisonOutcome>;

// Drives `reporter` through a comparison: begin, each case, end.
void report_comparison(ComparisonReporter& reporter, const Comparison& comparison, FailOn fail_on,
                       int exit_code);

// The table for a terminal: the notes at the start; the cases, printed at the end where the
// widest cell of each column is known; what was not compared; the summary line.
class ConsoleComparisonReporter final : public ComparisonReporter {
 public:
  explicit ConsoleComparisonReporter(std::ostream& out) : out_(out) {}
  void begin(const Comparison& comparison) override;
  void run(const CaseResult& result) override;
  void end(const ComparisonOutcome& outcome) override;

 private:
  std::ostream& out_;
  std::vector<std::vector<std::string>> rows_;
};

// Markdown, its summary line first: written whole at the end.
class MarkdownComparisonReporter final : public ComparisonReporter {
 public:
  explicit MarkdownComparisonReporter(std::ostream& out) : out_(out) {}
  void end(const ComparisonOutcome& outcome) override;

 private:
  std::ostream& out_;
};

// comparison_json below, written whole at the end.
class JsonComparisonReporter final : public ComparisonReporter {
 public:
  explicit JsonComparisonReporter(std::ostream& out) : out_(out) {}
  void end(const ComparisonOutcome& outcome) override;

 private:
  std::ostream& out_;
};

// Every number finite: an unbounded interval edge is null.
nlohmann::json comparison_json(const Comparison& comparison, FailOn fail_on, int exit_code);

// "+10.2 %" for a ratio of 1.102.
std::string format_change(double ratio);
// "[+8.1 %, +12.3 %]", with "+inf" for an unbounded edge.
std::string format_interval(const Change& change);
// A metric's value: a time ("6.59 ms") or a speedup ("19.9x").
std::string format_value(Metric metric, double value);

}  // namespace mtc::bench::compare
