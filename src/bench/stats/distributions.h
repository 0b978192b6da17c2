// Quantiles of the normal and Student-t distributions, for confidence intervals. Pure
// functions; accurate to about 1e-9, far beyond what a benchmark interval needs.
#pragma once

namespace mtc::bench {

// The p-quantile (0 < p < 1) of the standard normal distribution.
double normal_quantile(double p);

// The p-quantile (0 < p < 1) of Student's t distribution with `dof` > 0 degrees of freedom.
double student_t_quantile(double p, double dof);

// The cumulative distribution function of Student's t at `t`.
double student_t_cdf(double t, double dof);

}  // namespace mtc::bench
