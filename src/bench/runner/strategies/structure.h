// Walks of nested IValue structures (tensors inside lists, tuples and dicts, to any depth), as
// a competent user writes them for the baselines: one recursive map that rebuilds containers of
// the same kinds. Non-tensor leaves pass through.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/util/FunctionRef.h>

#include <cstdint>

namespace mtc::bench {

using TensorMap = c10::function_ref<at::Tensor(const at::Tensor&)>;
using TensorVisit = c10::function_ref<void(const at::Tensor&)>;

// A new structure of the same shape with each tensor leaf replaced by fn(leaf).
c10::IValue map_tensors(const c10::IValue& value, TensorMap fn);
// The same, with every string (dict key or leaf) a new string: a structure that shares no
// reference-counted object with `value` but what fn returns. The GPU threads of one run each get
// one, as the ranks of a training job each load their own batch: threads copying one shared
// structure would bounce the reference counts of its tensors and strings between cores.
c10::IValue own_structure(const c10::IValue& value, TensorMap fn);
// Calls fn on every tensor leaf, in the order map_tensors visits them.
void for_each_tensor(const c10::IValue& value, TensorVisit fn);

struct LeafCount {
  int64_t tensors = 0;
  int64_t bytes = 0;
};
LeafCount count_tensors(const c10::IValue& value);

}  // namespace mtc::bench
