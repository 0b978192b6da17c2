#include "workload/detail/fill.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <c10/util/complex.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace mtc::bench::detail {
namespace {

template <typename T>
T integral_draw(const ValueDist& d, Rng& rng, int64_t index) {
  int64_t v = 0;
  switch (d.kind) {
    case ValueDist::Kind::kConstant:
      v = d.int_lo;
      break;
    case ValueDist::Kind::kUniform:
      v = uniform_int(rng, d.int_lo, d.int_hi);
      break;
    case ValueDist::Kind::kNormal:
      v = round_clamped(d.mean + d.stddev * standard_normal(rng), d.int_lo, d.int_hi);
      break;
    case ValueDist::Kind::kChoice:
      v = d.int_choices[static_cast<size_t>(
          uniform_int(rng, 0, static_cast<int64_t>(d.int_choices.size()) - 1))];
      break;
    case ValueDist::Kind::kBernoulli:
      v = bernoulli(rng, d.mean) ? 1 : 0;
      break;
    case ValueDist::Kind::kPoisson:
      v = std::min(poisson(rng, d.mean), d.int_hi);
      break;
    case ValueDist::Kind::kArange:
      // Unsigned arithmetic wraps instead of overflowing; the narrowing cast keeps the low bits.
      v = static_cast<int64_t>(static_cast<uint64_t>(d.int_start) +
                               static_cast<uint64_t>(index) * static_cast<uint64_t>(d.int_step));
      break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}

double real_draw(const ValueDist& d, Rng& rng, int64_t index) {
  switch (d.kind) {
    case ValueDist::Kind::kConstant:
      return d.lo;
    case ValueDist::Kind::kUniform:
      return uniform_real(rng, d.lo, d.hi);
    case ValueDist::Kind::kNormal:
      return std::clamp(d.mean + d.stddev * standard_normal(rng), d.lo, d.hi);
    case ValueDist::Kind::kChoice:
      return d.choices[static_cast<size_t>(
          uniform_int(rng, 0, static_cast<int64_t>(d.choices.size()) - 1))];
    case ValueDist::Kind::kBernoulli:
      return bernoulli(rng, d.mean) ? 1.0 : 0.0;
    case ValueDist::Kind::kPoisson:
      return static_cast<double>(poisson(rng, d.mean));
    case ValueDist::Kind::kArange:
      return d.start + static_cast<double>(index) * d.step;
  }
  return 0.0;
}

// Converting a double beyond the float range is undefined behaviour in C++; IEEE says infinity.
float to_float(double v) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (v > kMax) return std::numeric_limits<float>::infinity();
  if (v < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

template <typename T>
T real_cast(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return T(to_float(v));  // float, c10::Half and c10::BFloat16 (which round from float)
  }
}

template <typename T>
void fill_integral(T* out, int64_t count, const ValueDist& d, Rng& rng) {
  for (int64_t i = 0; i < count; ++i) out[i] = integral_draw<T>(d, rng, i);
}

template <typename T>
void fill_real(T* out, int64_t count, const ValueDist& d, Rng& rng) {
  for (int64_t i = 0; i < count; ++i) out[i] = real_cast<T>(real_draw(d, rng, i));
}

// The real part follows the distribution; so does the imaginary part, drawn right after it,
// except for constant and arange, whose imaginary part is 0.
template <typename T>
void fill_complex(c10::complex<T>* out, int64_t count, const ValueDist& d, Rng& rng) {
  const bool imaginary_zero =
      d.kind == ValueDist::Kind::kConstant || d.kind == ValueDist::Kind::kArange;
  for (int64_t i = 0; i < count; ++i) {
    const T re = real_cast<T>(real_draw(d, rng, i));
    const T im = imaginary_zero ? T(0) : real_cast<T>(real_draw(d, rng, i));
    out[i] = c10::complex<T>(re, im);
  }
}

}  // namespace

void fill_values(void* data, c10::ScalarType dtype, int64_t count, const ValueDist& values,
                 Rng& rng) {
  switch (dtype) {
    case c10::ScalarType::Bool:
      return fill_integral(static_cast<bool*>(data), count, values, rng);
    case c10::ScalarType::Byte:
      return fill_integral(static_cast<uint8_t*>(data), count, values, rng);
    case c10::ScalarType::Char:
      return fill_integral(static_cast<int8_t*>(data), count, values, rng);
    case c10::ScalarType::Short:
      return fill_integral(static_cast<int16_t*>(data), count, values, rng);
    case c10::ScalarType::Int:
      return fill_integral(static_cast<int32_t*>(data), count, values, rng);
    case c10::ScalarType::Long:
      return fill_integral(static_cast<int64_t*>(data), count, values, rng);
    case c10::ScalarType::Half:
      return fill_real(static_cast<c10::Half*>(data), count, values, rng);
    case c10::ScalarType::BFloat16:
      return fill_real(static_cast<c10::BFloat16*>(data), count, values, rng);
    case c10::ScalarType::Float:
      return fill_real(static_cast<float*>(data), count, values, rng);
    case c10::ScalarType::Double:
      return fill_real(static_cast<double*>(data), count, values, rng);
    case c10::ScalarType::ComplexFloat:
      return fill_complex(static_cast<c10::complex<float>*>(data), count, values, rng);
    case c10::ScalarType::ComplexDouble:
      return fill_complex(static_cast<c10::complex<double>*>(data), count, values, rng);
    default:
      throw std::logic_error("fill_values: dtype outside the spec format");
  }
}

}  // namespace mtc::bench::detail
