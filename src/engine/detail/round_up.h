// Rounding a size or an offset up to a multiple: chunk layouts, staging offsets, pinned blocks.
#pragma once

#include <cstdint>

namespace mtc::detail {

// The smallest multiple of `step` (> 0) that is at least `value` (>= 0).
constexpr int64_t round_up(int64_t value, int64_t step) { return (value + step - 1) / step * step; }

}  // namespace mtc::detail
