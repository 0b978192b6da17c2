// The report reader (report/report_reader.h), as `compare` reads reports, on arbitrary bytes:
// records or a ConfigError, nothing else.
// Whatever it accepts is then compared with a fixture report and with itself and rendered in
// every output format, so damaged numbers (NaN, negative, huge, zero rounds) reach the verdict
// arithmetic and the formatting too; those may refuse with a UsageError, never crash.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <vector>

#include "compare/compare_output.h"
#include "compare/comparison.h"
#include "compare/report_cases.h"
#include "errors.h"
#include "fuzz_input_file.h"

namespace {

using namespace mtc::bench;

void compare_and_render(const std::vector<compare::ReportCases>& baseline,
                        const std::vector<compare::ReportCases>& candidate) {
  compare::CompareOptions options;
  options.ignore_device = true;  // the fixture's GPU need not match the input's
  try {
    const compare::Comparison comparison = compare::compare_reports(baseline, candidate, options);
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
  std::vector<compare::ReportCases> input;
  try {
    input.push_back(compare::read_report_cases(file.write(data, size)));
  } catch (const ConfigError&) {
    return 0;
  }
  for (const compare::CaseRecord& record : input.front().cases)
    (void)compare::case_label(record.key);
  compare_and_render(fixture, input);
  compare_and_render(input, input);
  return 0;
}
