#include "tensor_recycling.h"

#include <c10/core/TensorImpl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <utility>
#include <vector>

namespace mtc::python {
namespace {

// An empty storage on `device`, one per device for the process: what a spare holds until it
// is given a new tensor (a valid, empty tensor, should anything reach it meanwhile).
const c10::Storage& empty_storage(c10::Device device) {
  static std::vector<std::pair<c10::Device, c10::Storage>> storages;  // the GIL guards it
  for (const auto& [on, storage] : storages)
    if (on == device) return storage;
  return storages
      .emplace_back(device, c10::Storage(c10::Storage::use_byte_size_t(), 0,
                                         c10::DataPtr(nullptr, device), /*allocator=*/nullptr,
                                         /*resizable=*/false))
      .second;
}

// The head of the object's list of weak references, read where the interpreter reads it: at the
// type's tp_weaklistoffset, after the object's fields (a positive offset) or, for classes whose
// weak references the interpreter manages (Python 3.12 on), before the object (a negative one).
bool has_weak_references(PyObject* object) {
  const Py_ssize_t offset = Py_TYPE(object)->tp_weaklistoffset;
  if (offset == 0) return false;
  return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(object) + offset) != nullptr;
}

bool has_attributes(PyObject* object) {
  if (Py_TYPE(object)->tp_dictoffset == 0) return false;
  PyObject* dict = PyObject_GenericGetDict(object, nullptr);
  if (dict == nullptr) {
    PyErr_Clear();
    return true;  // unknown: not recycled
  }
  const bool any = PyDict_GET_SIZE(dict) != 0;
  Py_DECREF(dict);
  return any;
}

// Only the caller's reference to the object, and only the object's to its TensorImpl (a view
// made outside inference mode holds its base; torch's weak references to a tensor count too).
bool held_by_caller_alone(PyObject* object) {
  if (Py_REFCNT(object) != 1 || has_weak_references(object)) return false;
  const at::Tensor& tensor = THPVariable_Unpack(object);
  return tensor.use_count() == 1 && tensor.weak_use_count() == 1;
}

}  // namespace

bool unreachable_tensor(PyObject* object) {
  if (Py_TYPE(object) != reinterpret_cast<PyTypeObject*>(THPVariableClass)) return false;
  if (!held_by_caller_alone(object)) return false;
  const auto* variable = reinterpret_cast<const THPVariable*>(object);
  if (variable->backward_hooks != nullptr || variable->post_accumulate_grad_hooks != nullptr)
    return false;
  const c10::TensorImpl* impl = variable->cdata.unsafeGetTensorImpl();
  if (impl->autograd_meta() != nullptr || !impl->allow_tensor_metadata_change() ||
      impl->has_symbolic_sizes_strides() || impl->key_set().has_any(c10::python_ks))
    return false;
  return !has_attributes(object);
}

void SpareTensors::add(PyObject* object) {
  objects_.push_back(object);
  c10::TensorImpl* impl = THPVariable_Unpack(object).unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(empty_storage(impl->device()));
  impl->set_sizes_contiguous({0});
  impl->set_storage_offset(0);
  const c10::VariableVersion& counter = impl->version_counter();
  if (!counter.enabled()) return;  // an inference tensor's
  if (counter.unique()) {
    c10::VariableVersion(counter).set_version(0);  // a handle on the same counter
  } else {
    impl->set_version_counter(c10::VariableVersion(0));
  }
}

// The build reads the spares a few hundred microseconds after they became spares, in order: each
// object is asked for kAhead spares ahead and its TensorImpl (whose address is in the object)
// half as far, so that their transfers overlap, as the Reader does for the engine's tensors.
void SpareTensors::ask_ahead() const {
  constexpr size_t kAhead = 16;
  if (next_ + kAhead < objects_.size()) __builtin_prefetch(objects_[next_ + kAhead], 1);
  if (next_ + kAhead / 2 < objects_.size()) {
    const char* impl = reinterpret_cast<const char*>(
        THPVariable_Unpack(objects_[next_ + kAhead / 2]).unsafeGetTensorImpl());
    for (int line = 0; line < 4; ++line) __builtin_prefetch(impl + 64 * line, 1);
  }
}

PyObject* SpareTensors::take_for(at::Tensor& fresh) {
  while (next_ < objects_.size()) {
    ask_ahead();
    PyObject* object = objects_[next_];
    if (!held_by_caller_alone(object)) {
      set_aside_.push_back(object);
      ++next_;
      continue;
    }
    c10::TensorImpl* impl = THPVariable_Unpack(object).unsafeGetTensorImpl();
    if (impl->key_set() != fresh.unsafeGetTensorImpl()->key_set()) return nullptr;
    husks_.reserve(husks_.size() + 1);  // before any change: may throw
    ++next_;
    impl->shallow_copy_from(fresh.getIntrusivePtr());  // keeps the spare's counter
    husks_.push_back(std::move(fresh));
    return object;
  }
  return nullptr;
}

size_t SpareTensors::drop_husks() {
  const size_t dropped = husks_.size();
  husks_.clear();
  return dropped;
}

size_t SpareTensors::release() {
  std::vector<PyObject*> going;
  going.swap(set_aside_);
  going.insert(going.end(), objects_.begin() + static_cast<std::ptrdiff_t>(next_), objects_.end());
  objects_.clear();
  next_ = 0;
  // Python code run by a release may add spares again: they are in the emptied lists.
  for (PyObject* object : going) Py_DECREF(object);
  return going.size();
}

}  // namespace mtc::python
