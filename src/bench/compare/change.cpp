#include "compare/change.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

#include "errors.h"
#include "stats/distributions.h"

namespace mtc::bench::compare {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// ln(a / b), +inf when b is 0 or below (an interval reaching 0 bounds nothing).
double log_distance(double a, double b) { return b > 0.0 ? std::log(a / b) : kInfinity; }

}  // namespace

std::string_view to_string(Metric metric) {
  switch (metric) {
    case Metric::kWall:
      return "wall";
    case Metric::kSpeedup:
      return "speedup";
    case Metric::kOverMemcpyBatch:
      return "over_memcpy_batch";
  }
  return "?";
}

bool larger_is_better(Metric metric) { return metric != Metric::kWall; }

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kSame:
      return "SAME";
    case Verdict::kFaster:
      return "FASTER";
    case Verdict::kSlower:
      return "SLOWER";
    case Verdict::kUnsure:
      return "UNSURE";
  }
  return "?";
}

namespace {

// The t-interval of the mean of `logs`, as a ratio.
Change log_mean_change(std::span<const double> logs, double level) {
  const size_t n = logs.size();
  Change change;
  change.level = level;
  change.rounds = static_cast<int64_t>(n);
  if (n == 0) return change;
  double sum = 0.0;
  for (double x : logs) sum += x;
  const double mean = sum / static_cast<double>(n);
  change.ratio = std::exp(mean);
  if (n < 2) {
    change.low = 0.0;
    change.high = kInfinity;
    return change;
  }
  double squares = 0.0;
  for (double x : logs) squares += (x - mean) * (x - mean);
  const double sd = std::sqrt(squares / static_cast<double>(n - 1));
  const double half = student_t_quantile(0.5 + level / 2.0, static_cast<double>(n - 1)) * sd /
                      std::sqrt(static_cast<double>(n));
  change.low = std::exp(mean - half);
  change.high = std::exp(mean + half);
  return change;
}

std::vector<double> log_ratios(std::span<const double> baseline,
                               std::span<const double> candidate) {
  std::vector<double> logs;
  logs.reserve(baseline.size());
  for (size_t i = 0; i < baseline.size(); ++i) logs.push_back(std::log(candidate[i] / baseline[i]));
  return logs;
}

}  // namespace

Change paired_change(std::span<const double> baseline, std::span<const double> candidate,
                     double level) {
  if (baseline.size() != candidate.size())
    throw std::invalid_argument("paired_change: unequal round counts");
  return log_mean_change(log_ratios(baseline, candidate), level);
}

ClusteredChange clustered_paired_change(std::span<const double> baseline,
                                        std::span<const double> candidate,
                                        std::span<const int64_t> process, double level) {
  if (baseline.size() != candidate.size())
    throw std::invalid_argument("clustered_paired_change: unequal lengths");
  return clustered_log_change(log_ratios(baseline, candidate), process, level);
}

ClusteredChange clustered_log_change(std::span<const double> log_ratios,
                                     std::span<const int64_t> process, double level) {
  if (process.size() != log_ratios.size())
    throw std::invalid_argument("clustered_log_change: unequal lengths");
  ClusteredChange out{log_mean_change(log_ratios, level), 0};
  std::map<int64_t, std::pair<double, int64_t>> sums;  // process -> (sum of log ratios, rounds)
  for (size_t i = 0; i < log_ratios.size(); ++i) {
    auto& [sum, n] = sums[process[i]];
    sum += log_ratios[i];
    ++n;
  }
  out.processes = static_cast<int64_t>(sums.size());
  if (sums.size() < 2 || !std::isfinite(out.change.high)) return out;
  std::vector<double> means;
  for (const auto& [id, sn] : sums) means.push_back(sn.first / static_cast<double>(sn.second));
  double mean = 0.0;
  for (double m : means) mean += m;
  mean /= static_cast<double>(means.size());
  double squares = 0.0;
  for (double m : means) squares += (m - mean) * (m - mean);
  const double c = static_cast<double>(means.size());
  const double between = student_t_quantile(0.5 + level / 2.0, c - 1.0) *
                         std::sqrt(squares / (c - 1.0)) / std::sqrt(c);
  const double centre = std::log(out.change.ratio);
  const double within = 0.5 * std::log(out.change.high / out.change.low);
  const double half = std::max(within, between);
  out.change.low = std::exp(centre - half);
  out.change.high = std::exp(centre + half);
  return out;
}

Change unpaired_change(const Estimate& baseline, const Estimate& candidate) {
  if (std::abs(baseline.level - candidate.level) > 1e-9) {
    throw UsageError(
        fmt::format("the intervals have different levels ({} and {}): measure both at one level",
                    baseline.level, candidate.level));
  }
  Change change;
  change.level = baseline.level;
  change.rounds = std::min(baseline.rounds, candidate.rounds);
  change.ratio = candidate.value / baseline.value;
  const double below_b = log_distance(baseline.value, baseline.low);
  const double below_c = log_distance(candidate.value, candidate.low);
  const double above_b = baseline.high ? std::log(*baseline.high / baseline.value) : kInfinity;
  const double above_c = candidate.high ? std::log(*candidate.high / candidate.value) : kInfinity;
  const double log_ratio = std::log(change.ratio);
  change.low = std::exp(log_ratio - std::hypot(below_c, above_b));
  change.high = std::exp(log_ratio + std::hypot(above_c, below_b));
  return change;
}

Verdict judge(const Change& change, double threshold, Metric metric) {
  if (change.rounds < kMinRounds) return Verdict::kUnsure;
  const double upper = 1.0 + threshold;
  const double lower = 1.0 / upper;
  const Verdict above = larger_is_better(metric) ? Verdict::kFaster : Verdict::kSlower;
  const Verdict below = larger_is_better(metric) ? Verdict::kSlower : Verdict::kFaster;
  if (change.low > upper) return above;
  if (change.high < lower) return below;
  if (change.low >= lower && change.high <= upper) return Verdict::kSame;
  return Verdict::kUnsure;
}

}  // namespace mtc::bench::compare
