#include "deferred_release.h"

#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <new>
#include <utility>

namespace mtc::python {
namespace {

// Whether a weak reference to `object` exists: the head of its list, where CPython's own
// weakref code finds it (from Python 3.12, a negative offset for a list kept before the object).
bool has_weak_references(PyObject* object) {
  const Py_ssize_t offset = Py_TYPE(object)->tp_weaklistoffset;
  if (offset == 0) return false;
  return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(object) + offset) != nullptr;
}

// Whether the program gave `object` an attribute of its own (`t.name = ...`). The first look
// makes the object's dict where Python had not made it yet; a reused object keeps it for later
// looks.
bool has_instance_attributes(PyObject* object) {
  PyObject* dict = PyObject_GenericGetDict(object, nullptr);
  if (dict == nullptr) {  // no memory for it: cannot tell
    PyErr_Clear();
    return true;
  }
  const bool any = PyDict_GET_SIZE(dict) != 0;
  Py_DECREF(dict);
  return any;
}

// The Python side of what may become a new output (take_reusable); the engine checks the rest,
// in the TensorImpl, as it reuses it.
bool reusable_tensor_object(PyObject* object) {
  if (Py_REFCNT(object) != 1 ||
      Py_TYPE(object) != reinterpret_cast<PyTypeObject*>(THPVariableClass))
    return false;
  const auto* variable = reinterpret_cast<const THPVariable*>(object);
  if (variable->backward_hooks != nullptr || variable->post_accumulate_grad_hooks != nullptr)
    return false;
  return !has_weak_references(object) && !has_instance_attributes(object);
}

}  // namespace

DeferredRelease& DeferredRelease::instance() {
  static auto* const kept = new DeferredRelease();  // never destroyed: see the header
  return *kept;
}

bool DeferredRelease::set_enabled(bool enabled) {
  const bool previous = enabled_;
  enabled_ = enabled;
  if (!enabled) release_all();
  return previous;
}

size_t DeferredRelease::dropped_results() const {
  if (results_.empty()) return 0;
  // Only the module references the newest result's first tensor: the program let go of the
  // result (a tensor it kept out of it only loses the module's reference).
  return Py_REFCNT(results_.back().tensors.front().object) == 1 ? results_.size()
                                                                : results_.size() - 1;
}

size_t DeferredRelease::release_dropped() {
  return release(take_oldest(results_.size() - dropped_results()));
}

bool DeferredRelease::set_reuse_enabled(bool enabled) {
  const bool previous = reuse_enabled_;
  reuse_enabled_ = enabled;
  return previous;
}

std::vector<PyObject*> DeferredRelease::take_reusable(const std::vector<bool>& wanted) {
  std::vector<PyObject*> taken;
  if (!enabled_ || !reuse_enabled_ || wanted.empty() || dropped_results() == 0) return taken;
  // By leaf: a result of the same structure as the copy's input has its tensors at the same
  // leaves, so leaf k's old output has leaf k's dtype, the one thing the engine cannot change.
  // The result leaves results_ while its objects are looked at: a look may make an object's dict,
  // and before Python 3.12 an allocation may run the collector, whose finalizers may call back
  // into this class (a copy of their own), which must not find the result half taken.
  taken.assign(wanted.size(), nullptr);  // may throw: nothing has changed yet
  Result oldest = std::move(results_.front());
  results_.pop_front();
  size_t kept = 0;
  bool any = false;
  for (const KeptTensor& tensor : oldest.tensors) {
    if (tensor.leaf < wanted.size() && wanted[tensor.leaf] && taken[tensor.leaf] == nullptr &&
        reusable_tensor_object(tensor.object)) {
      taken[tensor.leaf] = tensor.object;
      oldest.bytes -= tensor.bytes;
      any = true;
    } else {
      oldest.tensors[kept++] = tensor;
    }
  }
  oldest.tensors.resize(kept);
  // An emptied result is gone: the newest result's first tensor tells whether it was dropped.
  if (!oldest.tensors.empty()) {
    try {
      results_.push_front(std::move(oldest));  // no effect if it throws
    } catch (const std::bad_alloc&) {          // released now instead of at a later get()
      for (const KeptTensor& tensor : oldest.tensors) Py_DECREF(tensor.object);
    }
  }
  if (!any) taken.clear();
  return taken;
}

std::vector<PyObject*> DeferredRelease::take_all_reusable() {
  if (!enabled_ || !reuse_enabled_ || dropped_results() == 0) return {};
  size_t count = 0;
  for (const KeptTensor& tensor : results_.front().tensors)
    count = std::max(count, tensor.leaf + 1);
  return take_reusable(std::vector<bool>(count, true));
}

void DeferredRelease::keep(NewTensors& tensors) {
  if (!enabled_ || tensors.tensors.size() < kMinTensors || tensors.bytes > kMaxResultBytes) return;
  results_.push_back(Result{{}, tensors.bytes});  // may throw: the references stay in `tensors`
  results_.back().tensors.swap(tensors.tensors);
  tensors.bytes = 0;
  release(take_oldest(kMaxResults));
}

size_t DeferredRelease::release_all() { return release(take_oldest(0)); }

std::vector<DeferredRelease::Result> DeferredRelease::take_oldest(size_t leave) {
  std::vector<Result> taken;
  while (results_.size() > leave) {
    taken.push_back(std::move(results_.front()));
    results_.pop_front();
  }
  return taken;
}

size_t DeferredRelease::release(std::vector<Result> results) {
  size_t released = 0;
  for (Result& result : results) {
    for (const KeptTensor& tensor : result.tensors) Py_DECREF(tensor.object);
    released += result.tensors.size();
  }
  return released;
}

size_t DeferredRelease::kept_tensors() const {
  size_t tensors = 0;
  for (const Result& result : results_) tensors += result.tensors.size();
  return tensors;
}

int64_t DeferredRelease::kept_bytes() const {
  int64_t bytes = 0;
  for (const Result& result : results_) bytes += result.bytes;
  return bytes;
}

}  // namespace mtc::python
