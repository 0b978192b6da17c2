// The reference batch of ../shared/anchors.md (StreamPETR-like detection metadata), built in
// code so the engine's micro-benchmarks need nothing but the engine. 16 samples give 528
// tensors and 153,628 bytes; `repeat` multiplies the sample count (8 -> 4,224 tensors).
#pragma once

#include <ATen/core/ivalue.h>

namespace mtc::microbench {

c10::IValue make_reference_batch(int repeat = 1);

}  // namespace mtc::microbench
