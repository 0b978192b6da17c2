// The reference batch (StreamPETR-like detection metadata, the original package's example), built in
// code so the engine's micro-benchmarks need nothing but the engine. 16 samples give 528
// tensors and 153,628 bytes; `repeat` multiplies the sample count (8 -> 4,224 tensors).
#pragma once

#include <ATen/core/ivalue.h>

namespace mtc::microbench {

// With `shared_keys`, every dict uses the same key objects instead of keys of its own; with
// `any_values`, dicts of tensors are typed Dict[str, Any] instead of Dict[str, Tensor].
c10::IValue make_reference_batch(int repeat = 1, bool shared_keys = false, bool any_values = false);

}  // namespace mtc::microbench
