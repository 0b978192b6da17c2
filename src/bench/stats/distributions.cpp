#include "stats/distributions.h"

#include <cmath>
#include <limits>

namespace mtc::bench {
namespace {

// The continued fraction of the regularized incomplete beta function I_x(a, b), evaluated
// with the modified Lentz method; converges quickly for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double result = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    // Even step.
    double numerator = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + numerator * d;
    c = 1.0 + numerator / c;
    if (std::abs(d) < kTiny) d = kTiny;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    result *= d * c;
    // Odd step.
    numerator = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + numerator * d;
    c = 1.0 + numerator / c;
    if (std::abs(d) < kTiny) d = kTiny;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double step = d * c;
    result *= step;
    if (std::abs(step - 1.0) < kEpsilon) break;
  }
  return result;
}

double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  // The fraction converges on one side of the mean; use the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)
  // on the other.
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

// Inverts a increasing CDF by bisection: robust, and 200 halvings reach double precision from
// any bracket used here.
template <typename Cdf>
double invert(Cdf cdf, double p, double low, double high) {
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (low + high);
    if (cdf(mid) < p) {
      low = mid;
    } else {
      high = mid;
    }
    if (high - low <= 1e-12 * std::max(1.0, std::abs(mid))) break;
  }
  return 0.5 * (low + high);
}

}  // namespace

double normal_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) return std::numeric_limits<double>::quiet_NaN();
  const auto cdf = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  return invert(cdf, p, -40.0, 40.0);
}

double student_t_cdf(double t, double dof) {
  if (!(dof > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  const double tail = 0.5 * regularized_incomplete_beta(dof / 2.0, 0.5, dof / (dof + t * t));
  return t >= 0.0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double dof) {
  if (!(p > 0.0 && p < 1.0) || !(dof > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0.5) return 0.0;
  // Closed forms where they exist; the bracket below must contain the answer otherwise.
  if (dof == 1.0) return std::tan(M_PI * (p - 0.5));
  if (dof == 2.0) return (2.0 * p - 1.0) / std::sqrt(2.0 * p * (1.0 - p));
  const auto cdf = [dof](double t) { return student_t_cdf(t, dof); };
  return invert(cdf, p, -1e4, 1e4);
}

}  // namespace mtc::bench
