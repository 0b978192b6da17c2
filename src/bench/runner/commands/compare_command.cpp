#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "compare/compare_output.h"
#include "compare/comparison.h"
#include "compare/in_process.h"
#include "errors.h"
#include "runner/commands/commands.h"

namespace mtc::bench {
namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  if (!(file << text)) throw UsageError(fmt::format("cannot write {}", path));
}

}  // namespace

int compare_command(const compare::CompareOptions& options, std::ostream& out, std::ostream& err) {
  const auto baseline = compare::read_reports(options.baseline);
  const compare::Comparison comparison =
      options.candidate.empty()
          ? compare::compare_in_process(baseline, options)
          : compare::compare_reports(baseline, compare::read_reports(options.candidate), options);
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
  if (!options.md_path.empty()) write_text(options.md_path, markdown.str());
  if (!options.json_path.empty()) write_text(options.json_path, json.str());
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
