// Deterministic random numbers for workloads: one seed gives the same numbers on every machine,
// compiler, standard library and thread count.
//
// std:: distributions are avoided on purpose: their algorithms are implementation-defined, so
// libstdc++ and libc++ turn the same engine output into different values. Every draw here uses
// IEEE-754 basic operations only (+ - * / sqrt, exact conversions); logarithms and exponentials
// come from portable_log/portable_exp below rather than libm, whose last bit varies between
// implementations. The library is built with -ffp-contract=off so no multiply-add is fused.
#pragma once

#include <cstdint>

namespace mtc::bench {

// SplitMix64 (Steele, Lea, Flood 2014): tiny state, passes BigCrush, and any (seed, stream)
// pair starts its own sequence, so each tensor can draw from a stream named by its index.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream);
  uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double next_double();

 private:
  uint64_t state_;
};

// The SplitMix64 output function: a bijective 64-bit mix.
uint64_t mix64(uint64_t x);

// Uniform integer in [lo, hi] (inclusive, lo <= hi), without modulo bias.
int64_t uniform_int(Rng& rng, int64_t lo, int64_t hi);
// Uniform real in [lo, hi); lo == hi gives lo.
double uniform_real(Rng& rng, double lo, double hi);
// Standard normal (mean 0, deviation 1) by Marsaglia's polar method.
double standard_normal(Rng& rng);
// Poisson-distributed count: exact (Knuth's product of uniforms) for mean <= kPoissonExactMax,
// a rounded normal N(mean, mean) above, where the exact method gets slow.
inline constexpr double kPoissonExactMax = 64.0;
int64_t poisson(Rng& rng, double mean);
// True with probability p.
bool bernoulli(Rng& rng, double p);

// Rounds to the nearest integer (halves away from zero) and saturates to [lo, hi].
int64_t round_clamped(double value, int64_t lo, int64_t hi);

// Natural logarithm and exponential from basic operations only: identical on every platform,
// accurate to a few ulp (enough for sampling). portable_log needs x > 0.
double portable_log(double x);
double portable_exp(double x);

}  // namespace mtc::bench
