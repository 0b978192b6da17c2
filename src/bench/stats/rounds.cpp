#include "stats/rounds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "stats/distributions.h"
#include "stats/summary.h"

namespace mtc::bench {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double mean_of(std::span<const double> values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double sample_sd(std::span<const double> values) {
  if (values.size() < 2) return 0.0;
  const double m = mean_of(values);
  double squares = 0.0;
  for (double v : values) squares += (v - m) * (v - m);
  return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

// Logs of the positive values; a round median of 0 (nothing measured) carries no information.
std::vector<double> logs_of(std::span<const double> values) {
  std::vector<double> logs;
  for (double v : values) {
    if (v > 0.0 && std::isfinite(v)) logs.push_back(std::log(v));
  }
  return logs;
}

}  // namespace

double log_half_width(std::span<const double> logs, double level) {
  if (logs.size() < 2) return kInfinity;
  const double n = static_cast<double>(logs.size());
  return student_t_quantile(0.5 + level / 2.0, n - 1.0) * sample_sd(logs) / std::sqrt(n);
}

RoundsSummary summarize_rounds(std::span<const Round> rounds, double level) {
  RoundsSummary s;
  s.interval.level = level;
  std::vector<double> pooled;
  for (const Round& r : rounds) {
    if (r.samples.empty()) continue;
    s.medians.push_back(median(r.samples));
    s.samples.push_back(static_cast<int64_t>(r.samples.size()));
    s.process.push_back(r.process);
    pooled.insert(pooled.end(), r.samples.begin(), r.samples.end());
  }
  s.rounds = static_cast<int64_t>(s.medians.size());
  if (pooled.empty()) return s;
  s.median = median(pooled);
  s.within = relative_median_noise(pooled);

  const std::vector<double> logs = logs_of(s.medians);
  s.between =
      logs.size() >= 2 ? sample_sd(logs) / std::sqrt(static_cast<double>(logs.size())) : 1.0;
  double h = std::max(log_half_width(logs, level), normal_quantile(0.5 + level / 2.0) * s.within);

  // Processes: the mean log round median of each, as one draw of "a fresh process".
  std::map<int, std::vector<double>> by_process;
  for (size_t i = 0; i < s.medians.size(); ++i) {
    if (s.medians[i] > 0.0) by_process[s.process[i]].push_back(std::log(s.medians[i]));
  }
  if (by_process.size() > 1) {
    std::vector<double> process_means;
    for (const auto& [process, values] : by_process) process_means.push_back(mean_of(values));
    const double process_se =
        sample_sd(process_means) / std::sqrt(static_cast<double>(process_means.size()));
    s.between = std::max(s.between, process_se);
    h = std::max(h, log_half_width(process_means, level));
  }
  s.interval.low = std::isfinite(h) ? s.median * std::exp(-h) : 0.0;
  s.interval.high = std::isfinite(h) ? s.median * std::exp(h) : kInfinity;
  return s;
}

std::optional<RatioEstimate> paired_ratio(std::span<const double> numerator,
                                          std::span<const double> denominator, double level) {
  std::vector<double> logs;
  const size_t n = std::min(numerator.size(), denominator.size());
  for (size_t i = 0; i < n; ++i) {
    if (numerator[i] > 0.0 && denominator[i] > 0.0)
      logs.push_back(std::log(numerator[i] / denominator[i]));
  }
  if (logs.empty()) return std::nullopt;
  RatioEstimate r;
  r.level = level;
  r.pairs = static_cast<int64_t>(logs.size());
  const double center = mean_of(logs);
  r.estimate = std::exp(center);
  const double h = log_half_width(logs, level);
  if (std::isfinite(h)) {
    r.low = std::exp(center - h);
    r.high = std::exp(center + h);
  }
  return r;
}

}  // namespace mtc::bench
