#include "report/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "number_text.h"

namespace mtc::bench {
namespace {

std::string three_digits(double value) {
  if (value >= 100.0) return fmt::format("{:.0f}", value);
  if (value >= 10.0) return fmt::format("{:.1f}", value);
  return fmt::format("{:.2f}", value);
}

std::string format_rate(double value) {
  if (value <= 0.0) return "-";
  return value >= 1.0 ? three_digits(value) : fmt::format("{:.3f}", value);
}

std::string verified_cell(const Entry& e) {
  if (!e.verified.has_value()) return "-";
  return *e.verified ? "yes" : "NO";
}

std::string stop_cell(const Entry& e) {
  if (e.status != EntryStatus::kOk) return std::string(to_string(e.status));
  return e.stop_reason;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0.0) return "-";
  if (seconds < 1e-6) return three_digits(seconds * 1e9) + " ns";
  if (seconds < 1e-3) return three_digits(seconds * 1e6) + " us";
  if (seconds < 1.0) return three_digits(seconds * 1e3) + " ms";
  return three_digits(seconds) + " s";
}

std::string format_percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return fmt::format("{:.2f} %", fraction * 100.0);
}

std::string format_interval(const Interval& interval) {
  if (!std::isfinite(interval.high)) return "unknown";
  return format_duration(interval.low) + " - " + format_duration(interval.high);
}

std::string format_speedup(const RatioEstimate& speedup) {
  const auto number = [](double x) {
    return x >= 10.0 ? fmt::format("{:.1f}", x) : fmt::format("{:.2f}", x);
  };
  if (!speedup.low || !speedup.high) return number(speedup.estimate) + "x";
  return fmt::format("{}x ({}-{})", number(speedup.estimate), number(*speedup.low),
                     number(*speedup.high));
}

std::string workload_line(const RunSection& run) {
  return fmt::format("{} tensors, {} bytes ({})", with_commas(run.tensors), with_commas(run.bytes),
                     human_bytes(run.bytes));
}

std::string environment_line(const nlohmann::json& context) {
  std::string gpu = "no CUDA device";
  const auto gpus = context.value("gpus", nlohmann::json::array());
  if (gpus.is_array() && !gpus.empty()) {
    gpu = text_field(gpus.front(), "name", "GPU");
    if (gpus.size() > 1) gpu = fmt::format("{} x {}", gpus.size(), gpu);
  }
  std::string line = gpu;
  const auto cuda = context.value("cuda", nlohmann::json());
  if (cuda.is_object()) {
    line += fmt::format(", driver {}, runtime {}", text_field(cuda, "driver_version", "?"),
                        text_field(cuda, "runtime_version", "?"));
  }
  line += ", torch " + text_field(context, "torch_version", "?");
  if (const std::string malloc = other_malloc_than_libc(context); !malloc.empty())
    line += ", malloc " + malloc;
  return line;
}

Table results_table(const RunSection& run) {
  std::set<int> devices;
  bool overlap = false;
  for (const Entry& e : run.entries) {
    if (e.device >= 0) devices.insert(e.device);
    overlap = overlap || e.exposed.has_value();
  }
  const bool show_device = devices.size() > 1;

  Table table;
  auto column = [&](std::string name, bool right) {
    table.header.push_back(std::move(name));
    table.right_aligned.push_back(right);
  };
  if (show_device) column("device", false);
  column("strategy", false);
  column("direction", false);
  column("pattern", false);
  column("median", true);
  column("interval", true);
  column("p90", true);
  column("blocked", true);
  if (overlap) column("exposed", true);
  column("noise", true);
  column("GB/s", true);
  column("speedup", true);
  column("rounds", true);
  column("verified", false);
  column("stop", false);

  for (const Entry& e : run.entries) {
    std::vector<std::string> row;
    if (show_device) row.push_back(e.device < 0 ? "cpu" : fmt::format("cuda:{}", e.device));
    row.push_back(e.strategy);
    row.push_back(e.direction);
    row.push_back(e.pattern);
    const bool measured = e.ok() && e.wall.count > 0;
    row.push_back(measured ? format_duration(e.wall.median) : "-");
    row.push_back(measured ? format_interval(e.rounds.interval) : "-");
    row.push_back(measured ? format_duration(e.wall.p90) : "-");
    row.push_back(measured ? format_duration(e.caller_blocked.median) : "-");
    if (overlap) row.push_back(measured && e.exposed ? format_duration(e.exposed->median) : "-");
    row.push_back(measured ? format_percent(e.wall.noise) : "-");
    row.push_back(measured ? format_rate(e.gb_per_s) : "-");
    row.push_back(e.speedup ? format_speedup(*e.speedup) : "-");
    row.push_back(measured ? std::to_string(e.rounds.rounds) : "-");
    row.push_back(verified_cell(e));
    row.push_back(stop_cell(e));
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace mtc::bench
