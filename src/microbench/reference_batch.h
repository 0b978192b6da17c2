// The reference batch (StreamPETR-like detection metadata, the original package's example), built
// in code so the engine's micro-benchmarks need nothing but the engine. 16 samples give 528 tensors
// and 153,628 bytes; `repeat` multiplies the sample count (8 -> 4,224 tensors). Each call builds
// new tensors (a rotation of distinct batches is several calls).
#pragma once

#include <ATen/core/ivalue.h>

namespace mtc::microbench {

// With `shared_keys`, every dict uses the same key objects instead of keys of its own; with
// `any_values`, dicts of tensors are typed Dict[str, Any] instead of Dict[str, Tensor].
c10::IValue make_reference_batch(int repeat = 1, bool shared_keys = false, bool any_values = false);
// One batch per set of arguments for the whole process, made on first use (not thread-safe: for
// a benchmark's setup), so that benchmark cases of different files copy the same objects.
const c10::IValue& shared_reference_batch(int repeat = 1, bool shared_keys = false,
                                          bool any_values = false);

// configs/mixed.json in code: 24 samples of the reference batch (792 small tensors), every sixth
// with a 2 MiB float32 "depth_map" (4 in all), the others with None there.
inline constexpr int kMixedSamples = 24;
inline constexpr int kMixedLargeEvery = 6;
c10::IValue make_mixed_batch();

}  // namespace mtc::microbench
