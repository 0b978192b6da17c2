#include "stats/summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mtc::bench {
namespace {

constexpr double kMadToStdev = 1.4826;         // consistent estimator of sigma for normal data
constexpr double kMedianToMeanSe = 1.2533141;  // sqrt(pi / 2)

double finite_or_zero(double value) { return std::isfinite(value) ? value : 0.0; }

}  // namespace

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<size_t>(std::floor(rank));
  const size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double weight = rank - static_cast<double>(lower);
  return sorted[lower] + weight * (sorted[upper] - sorted[lower]);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  // nth_element keeps the noise check O(n): it runs many times while sampling.
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2.0;
}

double median_absolute_deviation(std::span<const double> values) {
  if (values.empty()) return 0.0;
  const double center = median(std::vector<double>(values.begin(), values.end()));
  std::vector<double> deviations(values.size());
  std::transform(values.begin(), values.end(), deviations.begin(),
                 [center](double v) { return std::abs(v - center); });
  return median(std::move(deviations));
}

double relative_median_noise(std::span<const double> values) {
  if (values.size() < 2) return 1.0;
  const double center = median(std::vector<double>(values.begin(), values.end()));
  const double mad = median_absolute_deviation(values);
  if (!(center > 0.0)) return mad > 0.0 ? 1.0 : 0.0;
  const double standard_error =
      kMedianToMeanSe * kMadToStdev * mad / std::sqrt(static_cast<double>(values.size()));
  return std::clamp(finite_or_zero(standard_error / center), 0.0, 1.0);
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  const auto n = static_cast<double>(sorted.size());
  s.count = static_cast<int64_t>(sorted.size());
  s.min = sorted.front();
  s.max = sorted.back();
  s.p10 = quantile_sorted(sorted, 0.10);
  s.median = quantile_sorted(sorted, 0.50);
  s.p90 = quantile_sorted(sorted, 0.90);
  s.p99 = quantile_sorted(sorted, 0.99);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  if (sorted.size() > 1) {
    double squares = 0.0;
    for (double v : sorted) squares += (v - s.mean) * (v - s.mean);
    s.stdev = std::sqrt(squares / (n - 1.0));
  }
  s.noise = relative_median_noise(sorted);
  // Samples are finite by construction; this keeps the reports' "numbers are numbers" promise
  // even if a caller passes an infinity.
  for (double* field : {&s.min, &s.p10, &s.median, &s.mean, &s.stdev, &s.p90, &s.p99, &s.max}) {
    *field = finite_or_zero(*field);
  }
  return s;
}

}  // namespace mtc::bench
