#include <fmt/format.h>

#include <algorithm>

#include "report/reporter.h"
#include "report/table.h"

namespace mtc::bench {
namespace {

std::string sweep_label(const nlohmann::json& point) {
  std::string label;
  for (const auto& [name, value] : point.items()) {
    if (!label.empty()) label += ", ";
    label += name + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return label;
}

void write_table(const Table& table, std::ostream& out) {
  std::vector<size_t> widths(table.header.size());
  for (size_t c = 0; c < widths.size(); ++c) {
    widths[c] = table.header[c].size();
    for (const auto& row : table.rows) widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) text += "  ";
      text += table.right_aligned[c] ? fmt::format("{:>{}}", cells[c], widths[c])
                                     : fmt::format("{:<{}}", cells[c], widths[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  line(table.header);
  std::vector<std::string> rule;
  for (size_t w : widths) rule.emplace_back(w, '-');
  line(rule);
  for (const auto& row : table.rows) line(row);
}

}  // namespace

void write_report(Reporter& reporter, const Report& report) {
  reporter.begin(report.context);
  for (const RunSection& run : report.runs) reporter.run(run);
  reporter.end(report);
}

void ConsoleReporter::begin(const nlohmann::json& context) {
  out_ << environment_line(context) << '\n';
}

void ConsoleReporter::run(const RunSection& run) {
  std::ostream& out = out_;
  out << '\n' << (run.config_name.empty() ? run.config_file : run.config_name);
  if (!run.sweep_point.empty()) out << " [" << sweep_label(run.sweep_point) << ']';
  out << ": " << workload_line(run) << '\n';
  write_table(results_table(run), out);
  for (const Aggregate& agg : run.aggregates) {
    out << fmt::format("  all GPUs: {} {} {}: {:.2f} GB/s, {:.0f} tensors/s, slowest median {}\n",
                       agg.direction, agg.pattern, agg.strategy, agg.gb_per_s, agg.tensors_per_s,
                       format_duration(agg.slowest_median_s));
  }
  for (const Entry& e : run.entries) {
    if (!e.reason.empty() && !e.ok()) {
      out << fmt::format("  {} {} {}: {}: {}\n", e.direction, e.pattern, e.strategy,
                         to_string(e.status), e.reason);
    }
  }
  for (const std::string& note : run.notes) out << "  note: " << note << '\n';
}

void ConsoleReporter::end(const Report& report) {
  if (report.profile) {
    out_ << "\nprofile mode: fixed sample counts, figures are not for comparison\n";
  }
}

}  // namespace mtc::bench
