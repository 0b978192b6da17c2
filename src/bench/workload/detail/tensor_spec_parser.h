// Parses the leaves of a spec: memory kinds, layouts and whole tensor descriptions, with their
// counts and value distributions (distribution_parser.h). Every check of a leaf happens here or
// there, so the builder never meets an invalid one.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

#include "workload/detail/distribution_parser.h"
#include "workload/detail/json_checks.h"
#include "workload/detail/tensor_spec.h"

namespace mtc::bench::detail {

// A tensor beyond this many bytes is impossible, not merely large: rejected when parsing if
// its size is fixed, when building if drawn.
inline constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 40;
// Dimensions of one tensor.
inline constexpr size_t kMaxRank = 16;

Memory parse_memory(const JsonChecks& checks, const Json& value, const std::string& path);
Layout parse_layout(const JsonChecks& checks, const Json& value, const std::string& path,
                    size_t rank);
TensorSpec parse_tensor(const JsonChecks& checks, const Json& value, const std::string& path);

}  // namespace mtc::bench::detail
