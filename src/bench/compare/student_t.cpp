#include "compare/student_t.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace mtc::bench::compare {
namespace {

// Continued fraction of the regularized incomplete beta function (modified Lentz's method);
// converges quickly for x < (a + 1) / (a + b + 2), which the caller arranges.
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double result = d;
  for (int m = 1; m <= 1000; ++m) {
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

// I_x(a, b), the regularized incomplete beta function.
double regularized_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                           b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

}  // namespace

double student_t_cdf(double t, double dof) {
  if (!(dof > 0.0)) throw std::invalid_argument("student_t_cdf: degrees of freedom must be > 0");
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(|T| > |t|) = I_{dof / (dof + t^2)}(dof / 2, 1 / 2).
  const double tail = 0.5 * regularized_beta(dof / 2.0, 0.5, dof / (dof + t * t));
  return t > 0.0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double dof) {
  if (!(p > 0.0 && p < 1.0)) throw std::invalid_argument("student_t_quantile: p must lie in (0, 1)");
  if (!(dof > 0.0)) throw std::invalid_argument("student_t_quantile: degrees of freedom must be > 0");
  if (p == 0.5) return 0.0;
  // Symmetric: solve for the upper half and mirror. The cdf is monotonic, so bisection on a
  // bracket that is widened until it holds the quantile cannot fail; 200 halvings reach the
  // resolution of a double.
  const double upper = p > 0.5 ? p : 1.0 - p;
  double low = 0.0;
  double high = 1.0;
  while (student_t_cdf(high, dof) < upper) {
    low = high;
    high *= 2.0;
    if (high > 1e300) return p > 0.5 ? std::numeric_limits<double>::infinity()
                                     : -std::numeric_limits<double>::infinity();
  }
  for (int i = 0; i < 200 && high - low > 1e-14 * high; ++i) {
    const double mid = 0.5 * (low + high);
    (student_t_cdf(mid, dof) < upper ? low : high) = mid;
  }
  const double t = 0.5 * (low + high);
  return p > 0.5 ? t : -t;
}

double student_t_two_sided(double level, double dof) {
  if (!(level > 0.0 && level < 1.0)) throw std::invalid_argument("student_t_two_sided: level must lie in (0, 1)");
  return student_t_quantile(0.5 + level / 2.0, dof);
}

}  // namespace mtc::bench::compare
