#include "offered_outputs.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <c10/util/Exception.h>

#include <cstddef>
#include <utility>

namespace mtc::microbench {
namespace {

// Every tensor of `value` in pre-order (list elements in order, dict values in the dict's order,
// as the engine numbers leaves), each one's place left holding nothing.
void take_tensors(c10::IValue& value, std::vector<at::Tensor>& out) {
  // The engine numbers a tuple's leaves too: skipping one would shift every later leaf.
  TORCH_CHECK(!value.isTuple(), "offer_outputs: a result with tuples is not handled");
  if (value.isTensor()) {
    out.push_back(std::move(value).toTensor());
    value = c10::IValue();
  } else if (value.isList()) {
    c10::impl::GenericList list = value.toList();
    for (size_t i = 0; i < list.size(); ++i) {
      c10::IValue element = list.extract(i);
      take_tensors(element, out);
    }
  } else if (value.isGenericDict()) {
    for (auto& entry : value.toGenericDict()) {
      c10::IValue element = entry.value();
      entry.setValue(c10::IValue());
      take_tensors(element, out);
    }
  }
}

void put_back(c10::IValue& value, OfferedOutputs& offered, size_t& leaf, int64_t& placed);

// `element` from a container, put back there after its tensors were (`store` writes it back).
template <typename Store>
void put_back_in(c10::IValue element, OfferedOutputs& offered, size_t& leaf, int64_t& placed,
                 Store&& store) {
  const bool tensor = element.isTensor();
  const int64_t before = placed;
  put_back(element, offered, leaf, placed);
  if (tensor && placed != before) store(std::move(element));
}

void put_back(c10::IValue& value, OfferedOutputs& offered, size_t& leaf, int64_t& placed) {
  TORCH_CHECK(!value.isTuple(), "place_reused: a result with tuples is not handled");
  if (value.isTensor()) {
    const std::vector<uint8_t>& reused = offered.reuse->reused;
    if (leaf < reused.size() && reused[leaf] != 0) {
      // The engine leaves a reused leaf undefined: anything else means the leaves were misnumbered.
      TORCH_CHECK(!value.toTensor().defined(), "place_reused: leaf ", leaf,
                  " was reused but holds a tensor");
      value = std::move(offered.tensors[leaf]);
      ++placed;
    }
    ++leaf;
  } else if (value.isList()) {
    c10::impl::GenericList list = value.toList();
    for (size_t i = 0; i < list.size(); ++i)
      put_back_in(list.get(i), offered, leaf, placed,
                  [&](c10::IValue tensor) { list.set(i, std::move(tensor)); });
  } else if (value.isGenericDict()) {
    for (auto& entry : value.toGenericDict())
      put_back_in(entry.value(), offered, leaf, placed,
                  [&](c10::IValue tensor) { entry.setValue(std::move(tensor)); });
  }
}

}  // namespace

OfferedOutputs offer_outputs(c10::IValue previous) {
  OfferedOutputs offered;
  offered.reuse = std::make_shared<mtc::ReusableOutputs>();
  if (previous.isList()) {
    c10::impl::GenericList root = previous.toList();
    for (size_t i = 0; i < root.size(); ++i) {
      offered.reuse->element_first_leaf.push_back(static_cast<int64_t>(offered.tensors.size()));
      c10::IValue element = root.extract(i);
      take_tensors(element, offered.tensors);
    }
  } else {
    take_tensors(previous, offered.tensors);
  }
  previous = c10::IValue();  // the containers go here, before the copy starts
  offered.reuse->by_leaf.reserve(offered.tensors.size());
  for (const at::Tensor& tensor : offered.tensors)
    offered.reuse->by_leaf.push_back(tensor.defined() ? tensor.unsafeGetTensorImpl() : nullptr);
  return offered;
}

int64_t place_reused(c10::IValue& result, OfferedOutputs& offered) {
  size_t leaf = 0;
  int64_t placed = 0;
  put_back(result, offered, leaf, placed);
  return placed;
}

}  // namespace mtc::microbench
