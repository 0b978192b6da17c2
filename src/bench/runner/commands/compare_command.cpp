#include <fmt/format.h>

#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "compare/compare_output.h"
#include "compare/comparison.h"
#include "compare/in_process.h"
#include "compare/report_cases.h"
#include "errors.h"
#include "report/output_paths.h"
#include "report/report_file.h"
#include "runner/commands/commands.h"

namespace mtc::bench {
namespace {

// The reports compared, each file of a folder included: an output may name none of them.
std::vector<NamedPath> inputs_of(const std::string& option,
                                 const std::vector<compare::ReportCases>& reports) {
  std::vector<NamedPath> inputs;
  for (const compare::ReportCases& report : reports) inputs.push_back({option, report.path});
  return inputs;
}

}  // namespace

int compare_command(const compare::CompareOptions& options, std::ostream& out, std::ostream& err) {
  const auto baseline = compare::read_reports(options.baseline);
  const auto candidate = options.candidate.empty() ? std::vector<compare::ReportCases>()
                                                   : compare::read_reports(options.candidate);
  std::vector<NamedPath> inputs = inputs_of("baseline", baseline);
  for (NamedPath& input : inputs_of("candidate", candidate)) inputs.push_back(std::move(input));
  check_outputs_apart(inputs, {{"--md", options.md_path}, {"--json", options.json_path}});
  // Written as the run's reports are: whole or not at all, in place of a regular file only.
  ReportFile md_file("--md", options.md_path);
  ReportFile json_file("--json", options.json_path);
  const compare::Comparison comparison =
      options.candidate.empty() ? compare::compare_in_process(baseline, options)
                                : compare::compare_reports(baseline, candidate, options);
  const int code = compare::exit_code_for(comparison, options.fail_on);
  // The files are written once every output has ended, markdown first.
  std::ostringstream markdown;
  std::ostringstream json;
  compare::MultiplexComparisonReporter outputs;
  outputs.add(std::make_unique<compare::ConsoleComparisonReporter>(out));
  if (!options.md_path.empty()) {
    outputs.add(std::make_unique<compare::MarkdownComparisonReporter>(markdown));
  }
  if (!options.json_path.empty()) {
    outputs.add(std::make_unique<compare::JsonComparisonReporter>(json));
  }
  compare::report_comparison(outputs, comparison, options.fail_on, code);
  md_file.commit(markdown.str());
  json_file.commit(json.str());
  if (comparison.cases.empty() && options.candidate.empty()) {
    err << "mtc-bench: error: no A/B pair of " << options.baseline
        << " could be compared (see above)\n";
  } else if (comparison.cases.empty()) {
    err << "mtc-bench: error: no case of " << options.candidate << " matches one of "
        << options.baseline << " (config, workload, pattern, device, direction, strategy)\n";
  }
  return code;
}

}  // namespace mtc::bench
