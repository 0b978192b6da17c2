#include <fmt/format.h>

#include "report/reporter.h"
#include "report/table.h"

namespace mtc::bench {
namespace {

void write_table(const Table& table, std::ostream& out) {
  auto line = [&](const std::vector<std::string>& cells) {
    out << '|';
    for (const std::string& cell : cells) out << ' ' << cell << " |";
    out << '\n';
  };
  line(table.header);
  out << '|';
  for (bool right : table.right_aligned) out << (right ? " ---: |" : " --- |");
  out << '\n';
  for (const auto& row : table.rows) line(row);
}

}  // namespace

void MarkdownReporter::end(const Report& report) {
  std::ostream& out = out_;
  const auto tool = report.context.value("tool", nlohmann::json::object());
  out << "# mtc-bench results\n\n";
  out << fmt::format("- environment: {}\n", environment_line(report.context));
  out << fmt::format("- tool: mtc-bench {} ({}), {}\n", text_field(tool, "version", "?"),
                     text_field(tool, "git_revision", "unknown"),
                     text_field(report.context, "date", ""));
  if (report.profile) out << "- profile mode: fixed sample counts, not for comparison\n";
  for (const RunSection& run : report.runs) {
    out << "\n## " << (run.config_name.empty() ? run.config_file : run.config_name);
    if (!run.sweep_point.empty()) out << ' ' << run.sweep_point.dump();
    out << "\n\n" << workload_line(run) << ".\n\n";
    write_table(results_table(run), out);
    if (!run.aggregates.empty()) {
      out << "\n| all GPUs | direction | GB/s | tensors/s | slowest median |\n"
             "| --- | --- | ---: | ---: | ---: |\n";
      for (const Aggregate& agg : run.aggregates) {
        out << fmt::format("| {} | {} {} | {:.2f} | {:.0f} | {} |\n", agg.strategy, agg.direction,
                           agg.pattern, agg.gb_per_s, agg.tensors_per_s,
                           format_duration(agg.slowest_median_s));
      }
    }
    bool heading = false;
    for (const Entry& e : run.entries) {
      if (e.ok() || e.reason.empty()) continue;
      if (!heading) out << '\n';
      heading = true;
      out << fmt::format("- `{}` {}: {}: {}\n", e.strategy, e.direction, to_string(e.status),
                         e.reason);
    }
    for (const std::string& note : run.notes) out << "- note: " << note << '\n';
  }
  if (report.interrupted) {
    out << "\n**Interrupted** (SIGINT or SIGTERM): the figures cover what was measured until "
           "then.\n";
  }
  out << "\n" << kTableLegend << '\n';
}

}  // namespace mtc::bench
