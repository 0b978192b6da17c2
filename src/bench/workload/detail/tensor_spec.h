// The leaves of a compiled workload spec: tensor descriptions and the distributions their
// sizes and values are drawn from. Built by tensor_spec_parser, used by the builder.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mtc::bench::detail {

// A count drawn when its node is instantiated: a dimension, a repeat count or a symbol's value.
// Every count is >= 0.
struct CountDist {
  enum class Kind { kFixed, kSymbol, kUniform, kChoice, kNormal, kPoisson };
  Kind kind = Kind::kFixed;
  int64_t lo = 0;  // kFixed: the value; kUniform: inclusive bounds; kNormal, kPoisson: clamp
  int64_t hi = 0;
  double mean = 0.0;    // kNormal, kPoisson
  double stddev = 0.0;  // kNormal
  std::vector<int64_t> choices;
  std::string symbol;
  std::string path;
};

// How tensor elements are drawn. Integral dtypes (bool included) use the integer fields so
// int64 values beyond 2^53 stay exact; floating and complex dtypes use the real ones (complex:
// real and imaginary parts drawn one after the other from the same distribution).
struct ValueDist {
  enum class Kind { kConstant, kUniform, kNormal, kChoice, kBernoulli, kPoisson, kArange };
  Kind kind = Kind::kUniform;
  bool integral = false;
  int64_t int_lo = 0;  // kConstant: the value; kUniform: inclusive bounds; kNormal, kPoisson: clamp
  int64_t int_hi = 0;
  double lo = 0.0;  // kConstant: the value; kUniform: [lo, hi); kNormal: clamp
  double hi = 0.0;
  double mean = 0.0;  // kNormal, kPoisson; kBernoulli: the probability
  double stddev = 0.0;
  int64_t int_start = 0;  // kArange: element i is start + i * step (integers wrap)
  int64_t int_step = 0;
  double start = 0.0;
  double step = 0.0;
  std::vector<int64_t> int_choices;
  std::vector<double> choices;
};

struct Memory {
  enum class Kind { kPageable, kPinned, kCuda };
  Kind kind = Kind::kPageable;
  int device = 0;  // kCuda
  std::string name() const;
};

// Non-contiguous layouts: the tensor is a view of a larger or permuted base allocation.
struct Layout {
  enum class Kind { kContiguous, kTranspose, kSlice };
  Kind kind = Kind::kContiguous;
  int64_t dim0 = 0;  // kTranspose: the two dimensions swapped; kSlice: the sliced dimension
  int64_t dim1 = 0;
  int64_t step = 1;  // kSlice
};

struct TensorSpec {
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<CountDist> shape;
  ValueDist values;
  Memory memory;
  Layout layout;
};

// The tensor dtypes of the format, by their spec names ("float32", ...).
std::optional<c10::ScalarType> dtype_from_name(const std::string& name);
std::string dtype_name(c10::ScalarType dtype);
const std::vector<std::string>& dtype_names();

}  // namespace mtc::bench::detail
