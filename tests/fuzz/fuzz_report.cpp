// The report reader (report/report_reader.h), as `compare` reads reports, on arbitrary bytes:
// records or a ConfigError, nothing else.
// Whatever it accepts is then compared with a fixture report, with itself, with the baseline side
// of a fixture A/B job (paired by round) and on its own as an in-process A/B (its `@base` pairs),
// and rendered in every output format, so damaged numbers (NaN, negative, huge, zero rounds)
// reach the verdict arithmetic and the formatting too; those may refuse with a UsageError, never
// crash.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <vector>

#include "compare/compare_output.h"
#include "compare/comparison.h"
#include "compare/in_process.h"
#include "compare/report_cases.h"
#include "errors.h"
#include "fuzz_input_file.h"

namespace {

using namespace mtc::bench;

// Compares two sets of reports (or, with `candidate` null, the A/B pairs measured inside
// `baseline`'s one process) and renders the outcome in every output format.
void compare_and_render(const std::vector<compare::ReportCases>& baseline,
                        const std::vector<compare::ReportCases>* candidate) {
  compare::CompareOptions options;
  options.ignore_device = true;  // the fixture's GPU need not match the input's
  try {
    const compare::Comparison comparison =
        candidate != nullptr ? compare::compare_reports(baseline, *candidate, options)
                             : compare::compare_in_process(baseline, options);
    const int code = compare::exit_code_for(comparison, options.fail_on);
    std::ostringstream out;
    compare::MultiplexComparisonReporter outputs;
    outputs.add(std::make_unique<compare::ConsoleComparisonReporter>(out));
    outputs.add(std::make_unique<compare::MarkdownComparisonReporter>(out));
    outputs.add(std::make_unique<compare::JsonComparisonReporter>(out));
    compare::report_comparison(outputs, comparison, options.fail_on, code);
  } catch (const UsageError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzzing::InputFile file(".json");
  static const std::vector<compare::ReportCases> fixture{
      compare::read_report_cases(MTC_COMPARE_DATA "/base.json")};
  // Six rounds of one side of an A/B job: an input labelled as the other side of that job
  // ("fixture-ab") is compared round by round, through the paired statistics.
  static const std::vector<compare::ReportCases> ab_baseline{
      compare::read_reports(MTC_COMPARE_DATA "/ab/baseline")};
  std::vector<compare::ReportCases> input;
  try {
    input.push_back(compare::read_report_cases(file.write(data, size)));
  } catch (const ConfigError&) {
    return 0;
  }
  for (const compare::CaseRecord& record : input.front().cases)
    (void)compare::case_label(record.key);
  compare_and_render(fixture, &input);
  compare_and_render(input, &input);
  compare_and_render(ab_baseline, &input);
  compare_and_render(input, nullptr);
  return 0;
}
