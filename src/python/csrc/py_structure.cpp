// PyStructure's tensors: the lending rule, the intake of the tensor leaves the walk noted
// (py_walk.cpp), the engine's input, and giving back what the structure holds.
#include "py_structure.h"

#include <ATen/core/List.h>
#include <c10/util/MaybeOwned.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <utility>

namespace mtc::python {

LendingRule LendingRule::for_copy(const c10::Device& target, const CopyOptions& options) {
  LendingRule rule;
  rule.enabled = target.is_cuda() && options.pack_cpu_tensors;
  rule.max_bytes = std::min(kMaxPackedTensorBytes, options.max_packed_chunk_bytes);
  rule.to_cpu = target.is_cpu();
  return rule;
}

// The engine's packing test (LeafRouter::leaf), read from the tensor's own header. Quantized
// and nested tensors pass it but the engine refuses them before anything would copy them.
bool LendingRule::lends(const at::Tensor& tensor) const {
  if (!enabled || !tensor.defined() || !tensor.is_cpu() || tensor.layout() != c10::kStrided ||
      !tensor.is_contiguous())
    return false;
  const auto bytes = static_cast<int64_t>(tensor.nbytes());
  return bytes >= 1 && bytes <= max_bytes;
}

PyStructure::~PyStructure() {
  clear();
  release_lent();
}

// Each vector of references leaves the structure before the first one is dropped: dropping one
// may run Python code (a __del__, the garbage collector), which must find only the references
// still held (traverse()).
void PyStructure::drop_tape() {
  for (const Node& node : std::exchange(tape_, {})) Py_XDECREF(node.object);
}

void PyStructure::clear() {
  drop_tape();
  // Noted but not taken in (the walk failed).
  for (PyObject* object : std::exchange(leaf_objects_, {})) Py_XDECREF(object);
  array_tensors_.clear();
  leaves_taken_ = 0;
  arrays_taken_ = 0;
  // Offered but not reused (the result took the others), or the copy failed.
  for (PyObject* object : std::exchange(offered_, {})) Py_XDECREF(object);
  offered_bytes_.clear();
  // Not handed to the engine (the walk failed): its lent tensors are the walk's alone.
  forget_lent_tensors();
  tensors_.clear();
  // roots_ stays: release_lent() finds the lent tensors in the engine's input through it.
}

void PyStructure::forget_lent_tensors() {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (lent_[i]) c10::MaybeOwnedTraits<at::Tensor>::destroyBorrow(tensors_[i]);
}

void PyStructure::release_lent() {
  if (lent_objects_.empty()) return;
  if (engine_input_.isList()) {
    // The engine's entries, by root element, as take_engine_input() made them; its tensors in
    // pre-order, as lent_ counts them. Each lent one is taken out and let go of without a release.
    c10::impl::GenericList entries = engine_input_.toList();
    // Fewer entries than root elements only when take_engine_input() failed part way.
    for (size_t r = 0; r < std::min(roots_.size(), entries.size()); ++r) {
      const RootElement& root = roots_[r];
      // Not put into a feed (a streamed walk failed): its tensors are still in tensors_, which
      // clear() saw to.
      if (root.first_tensor != root.end_tensor && entries.get(r).isNone()) continue;
      if (root.is_tensor) {
        if (!lent_[root.first_tensor]) continue;
        at::Tensor tensor = entries.extract(r).toTensor();
        c10::MaybeOwnedTraits<at::Tensor>::destroyBorrow(tensor);
      } else if (root.first_tensor != root.end_tensor) {
        c10::List<at::Tensor> part = entries.get(r).toTensorList();
        for (size_t i = root.first_tensor; i < root.end_tensor; ++i) {
          if (!lent_[i]) continue;
          at::Tensor tensor = part.extract(i - root.first_tensor);
          c10::MaybeOwnedTraits<at::Tensor>::destroyBorrow(tensor);
        }
      }
    }
  }
  engine_input_ = c10::IValue();
  lent_.clear();
  roots_.clear();
  for (PyObject* object : std::exchange(lent_objects_, {})) Py_DECREF(object);
}

int PyStructure::traverse(visitproc visit, void* arg) const {
  for (const Node& node : tape_) Py_VISIT(node.object);
  return 0;
}

void PyStructure::take_tensor_leaves() {
  // Only inside a container: a root tensor is the engine's input itself, which the engine may
  // copy.
  const bool may_lend = root_is_container_;
  const size_t leaves = leaf_objects_.size();
  if (lent_.capacity() < leaves || lent_objects_.capacity() < leaves ||
      tensors_.capacity() < leaves) {
    // Room for every leaf of a walk in one go; for a streamed walk's growing count, twice as
    // much as now. All three: a vector<bool>'s capacity is rounded up to whole words.
    const size_t room = std::max(leaves, 2 * tensors_.capacity());
    lent_.reserve(room);
    lent_objects_.reserve(room);
    tensors_.reserve(room);
  }
  for (; leaves_taken_ < leaves; ++leaves_taken_) {
    PyObject*& slot = leaf_objects_[leaves_taken_];
    if (slot == nullptr) {
      lent_.push_back(false);
      tensors_.push_back(std::move(array_tensors_[arrays_taken_++]));
      continue;
    }
    // The slot keeps the reference until the call returns: the lending test may run Python code
    // (a subclass that dispatches its device or layout to Python) and throw, and clear() then
    // drops what the slots still hold.
    take_tensor_object(slot, may_lend);
    slot = nullptr;
  }
}

// Takes the reference to `object` over once it returns. The vectors were reserved for every
// leaf taken: no push_back here allocates, so only the lending test can throw, before any change.
// lent_ grows before tensors_: forget_lent_tensors() reads a flag for every tensor present.
void PyStructure::take_tensor_object(PyObject* object, bool may_lend) {
  const at::Tensor& tensor = THPVariable_Unpack(object);
  if (!may_lend || !lending_.lends(tensor)) {
    lent_.push_back(false);
    tensors_.push_back(tensor);
    Py_DECREF(object);  // its container holds it, unless code run by the walk dropped it
    return;
  }
  lent_.push_back(true);
  lent_objects_.push_back(object);
  tensors_.push_back(c10::MaybeOwnedTraits<at::Tensor>::createBorrow(tensor));
}

std::shared_ptr<ReusableOutputs> PyStructure::offer_outputs(std::vector<PyObject*> objects) {
  if (objects.empty()) return nullptr;
  std::shared_ptr<ReusableOutputs> reuse;
  try {
    TORCH_INTERNAL_ASSERT(objects.size() <= tensors_.size() && offered_.empty(),
                          "mtc: offer_outputs() beyond the tensor leaves, or twice");
    reuse = std::make_shared<ReusableOutputs>();
    offered_.assign(tensors_.size(), nullptr);
    offered_bytes_.assign(tensors_.size(), 0);
    reuse->by_leaf.assign(tensors_.size(), nullptr);
    reuse->element_first_leaf.resize(roots_.size());
  } catch (...) {
    for (PyObject* object : objects) Py_XDECREF(object);
    offered_.clear();
    throw;
  }
  for (size_t r = 0; r < roots_.size(); ++r)
    reuse->element_first_leaf[r] = static_cast<int64_t>(roots_[r].first_tensor);
  // Owned from here on; nothing below allocates or throws.
  for (size_t i = 0; i < objects.size(); ++i) {
    PyObject* object = objects[i];
    if (object == nullptr) continue;
    if (!lent_[i]) {  // the engine would not pack the leaf: nothing to reuse it for
      Py_DECREF(object);
      continue;
    }
    offered_[i] = object;
    offered_bytes_[i] = static_cast<int64_t>(tensors_[i].nbytes());
    reuse->by_leaf[i] = THPVariable_Unpack(object).unsafeGetTensorImpl();
  }
  return reuse;
}

c10::IValue PyStructure::entry_of(const RootElement& root) {
  if (root.is_tensor) return std::move(tensors_[root.first_tensor]);
  if (root.first_tensor == root.end_tensor) return c10::IValue();
  c10::List<at::Tensor> part;
  part.reserve(root.end_tensor - root.first_tensor);
  for (size_t i = root.first_tensor; i < root.end_tensor; ++i)
    part.push_back(std::move(tensors_[i]));
  return part;
}

c10::IValue PyStructure::take_engine_input() {
  if (!root_is_container_)
    return tensors_.empty() ? c10::IValue() : c10::IValue(std::move(tensors_.front()));
  c10::impl::GenericList entries(c10::AnyType::get());
  entries.reserve(roots_.size());
  // Kept before any tensor moves in: should an allocation below fail, the entries already made
  // are still found by release_lent() rather than destroyed with their lent tensors counted.
  if (!lent_objects_.empty()) engine_input_ = entries;
  for (const RootElement& root : roots_) entries.emplace_back(entry_of(root));
  tensors_.clear();
  return entries;
}

std::shared_ptr<ReusableOutputs> PyStructure::offer_outputs_by_position(
    std::vector<PyObject*> objects, size_t root_elements) {
  if (objects.empty()) return nullptr;
  std::shared_ptr<ReusableOutputs> reuse;
  try {
    TORCH_INTERNAL_ASSERT(offered_.empty() && tape_.empty(),
                          "mtc: offer_outputs_by_position() after a walk, or twice");
    reuse = std::make_shared<ReusableOutputs>();
    offered_bytes_.assign(objects.size(), 0);
    reuse->by_leaf.assign(objects.size(), nullptr);
    reuse->element_first_leaf.assign(root_elements, 0);
  } catch (...) {
    for (PyObject* object : objects) Py_XDECREF(object);
    offered_bytes_.clear();
    throw;
  }
  // Owned from here on.
  offered_ = std::move(objects);
  for (size_t i = 0; i < offered_.size(); ++i)
    if (offered_[i] != nullptr)
      reuse->by_leaf[i] = THPVariable_Unpack(offered_[i]).unsafeGetTensorImpl();
  return reuse;
}

// Written before the element is put: the engine reads an element's offers and first leaf only
// once the feed says it has arrived.
void PyStructure::put_root_element() {
  take_tensor_leaves();
  const RootElement& root = roots_.back();
  // Checked before the entry takes the tensors: one it held, lent, must never be destroyed.
  TORCH_INTERNAL_ASSERT(!feed_->abandoned() && feed_->arrived() < feed_->size(),
                        "mtc: a root element beyond the feed's size");
  if (feed_reuse_ != nullptr) {
    feed_reuse_->element_first_leaf[roots_.size() - 1] = static_cast<int64_t>(root.first_tensor);
    for (size_t i = root.first_tensor; i < std::min(root.end_tensor, offered_.size()); ++i) {
      if (offered_[i] == nullptr) continue;
      if (!lent_[i]) {  // the engine will not pack the leaf: nothing to reuse it for
        Py_DECREF(offered_[i]);
        offered_[i] = nullptr;
        feed_reuse_->by_leaf[i] = nullptr;
        continue;
      }
      offered_bytes_[i] = static_cast<int64_t>(tensors_[i].nbytes());
    }
  }
  feed_->put(entry_of(root));
}

}  // namespace mtc::python
