// Parses the numbers a spec draws: counts (sizes, repeat counts, symbol values) and value
// distributions of tensors, each checked against what its context and dtype allow.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <utility>

#include "workload/detail/json_checks.h"
#include "workload/detail/tensor_spec.h"

namespace mtc::bench::detail {

// Symbols are identifiers: [A-Za-z_][A-Za-z0-9_]*.
bool is_symbol_name(const std::string& name);

CountDist parse_count(const JsonChecks& checks, const Json& value, const std::string& path);
ValueDist parse_values(const JsonChecks& checks, const Json& value, const std::string& path,
                       c10::ScalarType dtype);
// What "values" means when absent: bool fair coin, integers uniform 0..100 (capped by the
// dtype), floating and complex uniform [0, 1).
ValueDist default_values(c10::ScalarType dtype);

// Inclusive value range of an integral dtype (bool is 0..1).
std::pair<int64_t, int64_t> integral_range(c10::ScalarType dtype);

}  // namespace mtc::bench::detail
