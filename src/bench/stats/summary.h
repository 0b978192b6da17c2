// Statistics over a series of samples: pure functions, no ATen, no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mtc::bench {

// What the reports show of one measured quantity (wall time, caller-blocked time, ...).
// Every field is finite; a summary of no samples is all zeros with count 0.
struct Summary {
  int64_t count = 0;
  double min = 0.0;
  double p10 = 0.0;
  double median = 0.0;
  double mean = 0.0;
  double stdev = 0.0;  // sample standard deviation (n - 1)
  double p90 = 0.0;
  double p99 = 0.0;
  double max = 0.0;
  // Relative noise of the median: see relative_median_noise().
  double noise = 0.0;
};

Summary summarize(std::span<const double> samples);

// The q-quantile (0 <= q <= 1) of already sorted values, linearly interpolated between the
// two closest ranks (Hyndman & Fan type 7, what numpy.percentile does by default).
double quantile_sorted(std::span<const double> sorted, double q);

double median(std::vector<double> values);

// Median absolute deviation from the median (unscaled).
double median_absolute_deviation(std::span<const double> values);

// Relative standard error of the median: 1.2533 * (1.4826 * MAD) / sqrt(n) / median.
// 1.4826 * MAD estimates the standard deviation robustly (outliers from preemption or a page
// fault barely move it); 1.2533 = sqrt(pi / 2) is the asymptotic ratio between the standard
// errors of the median and of the mean. Unlike the relative standard deviation, it falls as
// samples accumulate, so "noise under the target" means "the median is known that well".
// Returns 1 (nothing known) for fewer than two samples and clamps to [0, 1].
double relative_median_noise(std::span<const double> values);

}  // namespace mtc::bench
