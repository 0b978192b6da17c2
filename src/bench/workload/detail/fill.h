// Writes drawn values into a tensor's memory.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>

#include "workload/detail/tensor_spec.h"
#include "workload/random.h"

namespace mtc::bench::detail {

// Fills the `count` elements at `data`, of type `dtype`, in memory order: element i takes the
// next draws of `rng` (kArange: a formula of i). Single-threaded on purpose: the values then
// cannot depend on the thread count.
void fill_values(void* data, c10::ScalarType dtype, int64_t count, const ValueDist& values,
                 Rng& rng);

}  // namespace mtc::bench::detail
