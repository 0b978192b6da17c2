#include "compare/compare_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "errors.h"
#include "shown.h"

namespace mtc::bench::compare {

std::string_view to_string(FailOn fail_on) {
  switch (fail_on) {
    case FailOn::kSlower:
      return "slower";
    case FailOn::kFaster:
      return "faster";
    case FailOn::kAny:
      return "any";
    case FailOn::kNone:
      return "none";
  }
  return "?";
}

std::string_view to_string(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kAuto:
      return "auto";
    case BaselineKind::kFresh:
      return "fresh";
    case BaselineKind::kStored:
      return "stored";
  }
  return "?";
}

FailOn parse_fail_on(const std::string& text) {
  for (FailOn f : {FailOn::kSlower, FailOn::kFaster, FailOn::kAny, FailOn::kNone}) {
    if (text == to_string(f)) return f;
  }
  throw UsageError(fmt::format("--fail-on {}: expected slower, faster, any or none", shown(text)));
}

BaselineKind parse_baseline_kind(const std::string& text) {
  for (BaselineKind k : {BaselineKind::kAuto, BaselineKind::kFresh, BaselineKind::kStored}) {
    if (text == to_string(k)) return k;
  }
  throw UsageError(fmt::format("--baseline-kind {}: expected auto, fresh or stored", shown(text)));
}

double parse_threshold_percent(const std::string& text) {
  std::string number = text;
  if (number.ends_with("%")) number.pop_back();
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != number.size() || !std::isfinite(value)) {
    throw UsageError(
        fmt::format("threshold {}: expected a percentage such as 5 or 5%", shown(text)));
  }
  if (!(value > 0.0 && value < 1000.0)) {
    throw UsageError(fmt::format("threshold {}: must be above 0 % and below 1000 %", shown(text)));
  }
  return value / 100.0;
}

std::map<Metric, double> parse_metric_thresholds(const std::string& text) {
  std::map<Metric, double> thresholds;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t equals = item.find('=');
    if (equals == std::string::npos) {
      throw UsageError(fmt::format(
          "--threshold-metric {}: expected METRIC=PERCENT, e.g. wall=5,speedup=10", shown(item)));
    }
    const std::string name = item.substr(0, equals);
    std::optional<Metric> metric;
    for (Metric m : kAllMetrics) {
      if (name == to_string(m)) metric = m;
    }
    if (!metric) {
      std::vector<std::string_view> known;
      for (Metric m : kAllMetrics) known.push_back(to_string(m));
      throw UsageError(fmt::format("--threshold-metric: unknown metric {} (known: {})", shown(name),
                                   fmt::join(known, ", ")));
    }
    if (thresholds.contains(*metric))
      throw UsageError(fmt::format("--threshold-metric: {} given twice", shown(name)));
    thresholds[*metric] = parse_threshold_percent(item.substr(equals + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return thresholds;
}

}  // namespace mtc::bench::compare
