// Student's t distribution, for the confidence interval of a mean over a few paired rounds.
// Pure functions; accurate to about 1e-10, far beyond what a benchmark interval needs.
#pragma once

namespace mtc::bench::compare {

// The cumulative distribution function of Student's t with `dof` > 0 degrees of freedom at `t`.
double student_t_cdf(double t, double dof);

// The p-quantile (0 < p < 1) of Student's t with `dof` > 0 degrees of freedom. Throws
// std::invalid_argument outside those ranges.
double student_t_quantile(double p, double dof);

// The two-sided multiplier of a t-interval at `level` (0.95 -> the 0.975-quantile).
double student_t_two_sided(double level, double dof);

}  // namespace mtc::bench::compare
