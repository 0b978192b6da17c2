#include "runner/strategies/structure.h"

#include <utility>
#include <vector>

namespace mtc::bench {

namespace {
// The one recursive rebuild behind map_tensors and own_structure: tensor leaves through fn,
// other leaves and dict keys through other (both: same kinds of containers, same order).
template <class Other>
c10::IValue rebuild(const c10::IValue& value, TensorMap fn, const Other& other) {
  if (value.isTensor()) return fn(value.toTensor());
  if (value.isList()) {
    // Keeps the element type, so a typed List[Tensor] stays typed.
    // Iterates the ArrayRef, not the List: its iterator yields proxies that GCC 13 rightly
    // flags when bound to a reference.
    c10::impl::GenericList out(value.toList().elementType());
    const c10::ArrayRef<c10::IValue> items = value.toListRef();
    out.reserve(items.size());
    for (const c10::IValue& item : items) out.push_back(rebuild(item, fn, other));
    return out;
  }
  if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    std::vector<c10::IValue> out;
    out.reserve(elements.size());
    for (const c10::IValue& item : elements) out.push_back(rebuild(item, fn, other));
    return c10::ivalue::Tuple::create(std::move(out));
  }
  if (value.isGenericDict()) {
    const c10::impl::GenericDict dict = value.toGenericDict();
    c10::impl::GenericDict out(dict.keyType(), dict.valueType());
    out.reserve(dict.size());
    for (const auto& item : dict) out.insert(other(item.key()), rebuild(item.value(), fn, other));
    return out;
  }
  return other(value);
}
}  // namespace

c10::IValue map_tensors(const c10::IValue& value, TensorMap fn) {
  return rebuild(value, fn, [](const c10::IValue& v) { return v; });
}

c10::IValue own_structure(const c10::IValue& value, TensorMap fn) {
  return rebuild(value, fn, [](const c10::IValue& v) {
    return v.isString() ? c10::IValue(std::string(v.toStringRef())) : v;
  });
}

void for_each_tensor(const c10::IValue& value, TensorVisit fn) {
  if (value.isTensor()) {
    fn(value.toTensor());
  } else if (value.isList()) {
    for (const c10::IValue& item : value.toListRef()) for_each_tensor(item, fn);
  } else if (value.isTuple()) {
    for (const c10::IValue& item : value.toTupleRef().elements()) for_each_tensor(item, fn);
  } else if (value.isGenericDict()) {
    for (const auto& item : value.toGenericDict()) for_each_tensor(item.value(), fn);
  }
}

LeafCount count_tensors(const c10::IValue& value) {
  LeafCount count;
  for_each_tensor(value, [&count](const at::Tensor& t) {
    ++count.tensors;
    count.bytes += static_cast<int64_t>(t.nbytes());
  });
  return count;
}

}  // namespace mtc::bench
