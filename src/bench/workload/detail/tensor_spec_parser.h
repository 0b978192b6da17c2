// Parses the leaves of a spec: counts (sizes, repeat counts, symbol values), value
// distributions, memory kinds, layouts and whole tensor descriptions. Every check of a leaf
// happens here, so the builder never meets an invalid one.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

#include "workload/detail/json_checks.h"
#include "workload/detail/tensor_spec.h"

namespace mtc::bench::detail {

// A tensor beyond this many bytes is impossible, not merely large: rejected when parsing if
// its size is fixed, when building if drawn.
inline constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 40;
// Dimensions of one tensor.
inline constexpr size_t kMaxRank = 16;

// Symbols are identifiers: [A-Za-z_][A-Za-z0-9_]*.
bool is_symbol_name(const std::string& name);

CountDist parse_count(const JsonChecks& checks, const Json& value, const std::string& path);
ValueDist parse_values(const JsonChecks& checks, const Json& value, const std::string& path,
                       c10::ScalarType dtype);
// What "values" means when absent: bool fair coin, integers uniform 0..100 (capped by the
// dtype), floating and complex uniform [0, 1).
ValueDist default_values(c10::ScalarType dtype);
Memory parse_memory(const JsonChecks& checks, const Json& value, const std::string& path);
Layout parse_layout(const JsonChecks& checks, const Json& value, const std::string& path,
                    size_t rank);
TensorSpec parse_tensor(const JsonChecks& checks, const Json& value, const std::string& path);

// Inclusive value range of an integral dtype (bool is 0..1).
std::pair<int64_t, int64_t> integral_range(c10::ScalarType dtype);

}  // namespace mtc::bench::detail
