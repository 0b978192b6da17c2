// A C++ training loop that hands its previous result back to the next copy (mtc::ReusableOutputs),
// as the Python module does with the tensors of a result the program dropped: the engine then
// points the old outputs' TensorImpls at the new data instead of making new tensors, and the
// loop frees only the previous result's containers. What a user of the C++ API writes around
// start_copy to do so, for BM_EngineCopy's kReuseOutputs (engine_bench_args.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <memory>
#include <vector>

#include "mtc/copier.h"

namespace mtc::microbench {

struct OfferedOutputs {
  std::vector<at::Tensor> tensors;  // the previous result's tensors, by leaf in pre-order
  std::shared_ptr<mtc::ReusableOutputs> reuse;
};

// Takes the tensors out of `previous` (a result of lists, dicts and tensors; c10::Error for a
// tuple) and drops its containers, so that each tensor's one reference is `tensors`'; offers each
// defined tensor for its leaf. For a list root, each element's first leaf too
// (ReusableOutputs::element_first_leaf; other roots are walked by the engine without it, which
// then matches only the first element's offers).
OfferedOutputs offer_outputs(c10::IValue previous);

// Puts each tensor the copy reused (`offered.reuse->reused`) back at its leaf of `result`, where
// the engine left an undefined tensor (c10::Error where it did not). The others stay in
// `offered`, to be freed by the caller. Returns how many it put back.
int64_t place_reused(c10::IValue& result, OfferedOutputs& offered);

}  // namespace mtc::microbench
