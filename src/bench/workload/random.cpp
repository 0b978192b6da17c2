#include "workload/random.h"

#include <cmath>
#include <limits>

namespace mtc::bench {
namespace {

constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;
// ln 2 split so that k * kLn2Hi is exact for |k| < 2^11 (the fdlibm constants).
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
constexpr double kSqrtHalf = 0.70710678118654752440;

}  // namespace

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Mixing the stream before combining keeps nearby streams (tensor 7 and tensor 8) far apart in
// the SplitMix64 sequence.
Rng::Rng(uint64_t seed, uint64_t stream) : state_(mix64(seed) ^ mix64(stream * kGoldenGamma + 1)) {}

uint64_t Rng::next_u64() {
  state_ += kGoldenGamma;
  return mix64(state_);
}

double Rng::next_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

int64_t uniform_int(Rng& rng, int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (span == 0) return static_cast<int64_t>(rng.next_u64());  // the full 64-bit range
  // Draws below `threshold` would make the low residues more likely; 2^64 mod span of them.
  const uint64_t threshold = (0 - span) % span;
  for (;;) {
    const uint64_t x = rng.next_u64();
    if (x >= threshold) return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % span);
  }
}

double uniform_real(Rng& rng, double lo, double hi) { return lo + (hi - lo) * rng.next_double(); }

double standard_normal(Rng& rng) {
  for (;;) {
    const double u = 2.0 * rng.next_double() - 1.0;
    const double v = 2.0 * rng.next_double() - 1.0;
    const double s = u * u + v * v;
    if (s < 1.0 && s > 0.0) return u * std::sqrt(-2.0 * portable_log(s) / s);
  }
}

int64_t poisson(Rng& rng, double mean) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (mean > kPoissonExactMax) {
    return round_clamped(mean + std::sqrt(mean) * standard_normal(rng), 0, kMax);
  }
  const double limit = portable_exp(-mean);
  int64_t count = 0;
  double product = rng.next_double();
  while (product > limit) {
    ++count;
    product *= rng.next_double();
  }
  return count;
}

bool bernoulli(Rng& rng, double p) { return rng.next_double() < p; }

int64_t round_clamped(double value, int64_t lo, int64_t hi) {
  if (std::isnan(value)) return lo;
  const double rounded = value < 0 ? -std::floor(-value + 0.5) : std::floor(value + 0.5);
  if (rounded <= static_cast<double>(lo)) return lo;
  if (rounded >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(rounded);
}

// ln x = e ln 2 + ln m with x = m 2^e, m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s) with
// s = (m - 1) / (m + 1), |s| < 0.172, whose odd series converges to double precision in 13 terms.
double portable_log(double x) {
  int exponent = 0;
  double mantissa = std::frexp(x, &exponent);
  if (mantissa < kSqrtHalf) {
    mantissa *= 2.0;
    --exponent;
  }
  const double f = mantissa - 1.0;
  const double s = f / (2.0 + f);
  const double s2 = s * s;
  double series = 0.0;
  for (int k = 12; k >= 0; --k) series = series * s2 + 1.0 / static_cast<double>(2 * k + 1);
  const double e = static_cast<double>(exponent);
  return e * kLn2Hi + (e * kLn2Lo + 2.0 * s * series);
}

// e^x = 2^k e^r with |r| <= ln(2)/2; the Taylor series of e^r to degree 17 is exact to
// double precision there; ldexp scales without rounding.
double portable_exp(double x) {
  if (std::isnan(x)) return x;
  if (x > 709.0) return std::numeric_limits<double>::infinity();
  if (x < -745.0) return 0.0;
  const double k = std::floor(x * kInvLn2 + 0.5);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  double sum = 1.0;
  for (int n = 17; n >= 1; --n) sum = 1.0 + sum * r / static_cast<double>(n);
  return std::ldexp(sum, static_cast<int>(k));
}

}  // namespace mtc::bench
