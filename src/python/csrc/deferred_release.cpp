#include "deferred_release.h"

#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <new>
#include <utility>

#include "py_structure.h"  // kMaxNestingDepth

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
// in the TensorImpl, as it reuses it. `count`: the references the module knows of (its own, and
// the container's in a kept shell).
bool reusable_tensor_object(PyObject* object, Py_ssize_t count = 1) {
  if (Py_REFCNT(object) != count ||
      Py_TYPE(object) != reinterpret_cast<PyTypeObject*>(THPVariableClass))
    return false;
  const auto* variable = reinterpret_cast<const THPVariable*>(object);
  if (variable->backward_hooks != nullptr || variable->post_accumulate_grad_hooks != nullptr)
    return false;
  return !has_weak_references(object) && !has_instance_attributes(object);
}

// Whether the shell below `object` holds, at each tensor leaf in pre-order, that leaf's kept
// object (by_leaf), qualifying with the container's reference and the module's, and nothing the
// program can reach: every container's one reference is its parent's (the root's the module's).
// The empty tuple is Python's one shared object, and holds nothing. Runs no Python code but the
// making of a tensor object's dict (reusable_tensor_object).
bool shell_holds_kept(PyObject* object, const std::vector<PyObject*>& by_leaf, size_t& next,
                      int depth) {
  PyTypeObject* type = Py_TYPE(object);
  if (type == &PyList_Type || type == &PyTuple_Type || type == &PyDict_Type) {
    if (type == &PyTuple_Type && PyTuple_GET_SIZE(object) == 0) return true;
    if (Py_REFCNT(object) != 1 || depth >= kMaxNestingDepth) return false;
    if (type == &PyDict_Type) {
      Py_ssize_t position = 0;
      PyObject* key = nullptr;
      PyObject* value = nullptr;
      while (PyDict_Next(object, &position, &key, &value))
        if (!shell_holds_kept(value, by_leaf, next, depth + 1)) return false;
      return true;
    }
    const bool list = type == &PyList_Type;
    const Py_ssize_t size = list ? PyList_GET_SIZE(object) : PyTuple_GET_SIZE(object);
    for (Py_ssize_t i = 0; i < size; ++i) {
      PyObject* item = list ? PyList_GET_ITEM(object, i) : PyTuple_GET_ITEM(object, i);
      if (!shell_holds_kept(item, by_leaf, next, depth + 1)) return false;
    }
    return true;
  }
  if (THPVariable_CheckExact(object)) {
    const size_t leaf = next++;
    return leaf < by_leaf.size() && by_leaf[leaf] == object && reusable_tensor_object(object, 2);
  }
  // A tensor of a subclass is no output of the module's: the program put it there.
  return THPVariableClass == nullptr ||
         !PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(THPVariableClass));
}

}  // namespace

bool DeferredRelease::shell_reusable(const Result& result) {
  if (result.shell == nullptr || Py_REFCNT(result.shell) != 1) return false;
  size_t leaves = 0;
  for (const KeptTensor& tensor : result.tensors) leaves = std::max(leaves, tensor.leaf + 1);
  std::vector<PyObject*> by_leaf(leaves, nullptr);
  for (const KeptTensor& tensor : result.tensors) {
    if (by_leaf[tensor.leaf] != nullptr) return false;
    by_leaf[tensor.leaf] = tensor.object;
  }
  size_t next = 0;
  return shell_holds_kept(result.shell, by_leaf, next, 0) && next == by_leaf.size();
}

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
  // Only the module references the newest result's shell, or without one its first tensor: the
  // program let go of the result (a tensor it kept out of it only loses the module's reference).
  const Result& newest = results_.back();
  const bool dropped = newest.shell != nullptr ? Py_REFCNT(newest.shell) == 1
                                               : Py_REFCNT(newest.tensors.front().object) == 1;
  return dropped ? results_.size() : results_.size() - 1;
}

size_t DeferredRelease::release_dropped() {
  return release(take_oldest(results_.size() - dropped_results()));
}

bool DeferredRelease::set_reuse_enabled(bool enabled) {
  const bool previous = reuse_enabled_;
  reuse_enabled_ = enabled;
  return previous;
}

bool DeferredRelease::set_container_reuse_enabled(bool enabled) {
  const bool previous = container_reuse_enabled_;
  container_reuse_enabled_ = enabled;
  if (!enabled) {
    // Out of results_ before any is dropped: a drop may run Python code that calls back here.
    std::vector<PyObject*> shells;
    for (Result& result : results_)
      if (result.shell != nullptr) shells.push_back(std::exchange(result.shell, nullptr));
    for (PyObject* shell : shells) Py_DECREF(shell);
  }
  return previous;
}

std::vector<PyObject*> DeferredRelease::take_reusable(const std::vector<bool>& wanted,
                                                      PyObject** shell) {
  if (shell != nullptr) *shell = nullptr;
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
  if (oldest.shell != nullptr) {
    const bool every_leaf_wanted =
        std::all_of(oldest.tensors.begin(), oldest.tensors.end(), [&](const KeptTensor& tensor) {
          return tensor.leaf < wanted.size() && wanted[tensor.leaf];
        });
    if (shell != nullptr && container_reuse_enabled_ && every_leaf_wanted &&
        shell_reusable(oldest)) {
      // Offered whole: the result is gone, its references the copy's.
      for (const KeptTensor& tensor : oldest.tensors) taken[tensor.leaf] = tensor.object;
      *shell = oldest.shell;
      return taken;
    }
    // Dropped first, so that its tensors count only the module's reference (and the program's).
    // It may run Python code: the result is out of results_.
    Py_DECREF(std::exchange(oldest.shell, nullptr));
  }
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

std::vector<PyObject*> DeferredRelease::take_all_reusable(PyObject** shell) {
  if (shell != nullptr) *shell = nullptr;
  if (!enabled_ || !reuse_enabled_ || dropped_results() == 0) return {};
  size_t count = 0;
  for (const KeptTensor& tensor : results_.front().tensors)
    count = std::max(count, tensor.leaf + 1);
  return take_reusable(std::vector<bool>(count, true), shell);
}

void DeferredRelease::keep(NewTensors& tensors, PyObject* shell) {
  if (!enabled_ || tensors.tensors.size() < kMinTensors || tensors.bytes > kMaxResultBytes) return;
  // May throw: the references stay in `tensors`.
  results_.push_back(Result{{}, tensors.bytes, nullptr});
  results_.back().tensors.swap(tensors.tensors);
  tensors.bytes = 0;
  if (shell != nullptr && reuse_enabled_ && container_reuse_enabled_) {
    Py_INCREF(shell);
    results_.back().shell = shell;
  }
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
    Py_XDECREF(std::exchange(result.shell, nullptr));
    released += result.tensors.size();
  }
  return released;
}

size_t DeferredRelease::kept_shells() const {
  return static_cast<size_t>(std::count_if(results_.begin(), results_.end(),
                                           [](const Result& r) { return r.shell != nullptr; }));
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
