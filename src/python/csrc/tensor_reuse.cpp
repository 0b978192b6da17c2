#include "tensor_reuse.h"

#include <c10/core/TensorImpl.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/python_variable.h>

#include <exception>
#include <new>

namespace mtc::python {
namespace {

// Whether a weak reference to `object` exists: the head of its list, where CPython's own
// weakref code finds it (tp_weaklistoffset is negative for a managed list, from Python 3.12).
bool has_weak_references(PyObject* object) {
  const Py_ssize_t offset = Py_TYPE(object)->tp_weaklistoffset;
  if (offset == 0) return false;
  return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(object) + offset) != nullptr;
}

// Whether the program gave `object` an attribute of its own (`t.name = ...`). The first look
// makes the object's dict where Python had not made it yet; a spare keeps it for later looks.
bool has_instance_attributes(PyObject* object) {
  const PyTypeObject* type = Py_TYPE(object);
  bool managed = false;
#ifdef Py_TPFLAGS_MANAGED_DICT
  managed = (type->tp_flags & Py_TPFLAGS_MANAGED_DICT) != 0;
#endif
  if (type->tp_dictoffset == 0 && !managed) return false;
  PyObject* dict = PyObject_GenericGetDict(object, nullptr);
  if (dict == nullptr) {  // no memory for it: cannot tell, so it is not reused
    PyErr_Clear();
    return true;
  }
  const bool any = PyDict_GET_SIZE(dict) != 0;
  Py_DECREF(dict);
  return any;
}

}  // namespace

SpareTensors& SpareTensors::instance() {
  static auto* const spares = new SpareTensors();  // never destroyed: see the header
  return *spares;
}

bool SpareTensors::set_enabled(bool enabled) {
  const bool previous = enabled_;
  enabled_ = enabled;
  if (!enabled) release_all();
  return previous;
}

bool SpareTensors::qualifies(PyObject* object) {
  if (Py_REFCNT(object) != 1 ||
      Py_TYPE(object) != reinterpret_cast<PyTypeObject*>(THPVariableClass))
    return false;
  const auto* variable = reinterpret_cast<const THPVariable*>(object);
  if (variable->backward_hooks != nullptr || variable->post_accumulate_grad_hooks != nullptr)
    return false;
  const at::Tensor& tensor = THPVariable_Unpack(object);
  if (!tensor.defined()) return false;
  const c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  // The object alone holds the TensorImpl: with another C++ reference, torch's PyObject
  // preservation would hold the object too, and its count would not be 1.
  if (tensor.use_count() != 1 || tensor.weak_use_count() != 1) return false;
  if (impl->autograd_meta() != nullptr || !impl->allow_tensor_metadata_change() ||
      impl->has_named_tensor_meta() || impl->has_symbolic_sizes_strides() ||
      impl->pyobj_slot()->load_pyobj() != object)
    return false;
  return !has_weak_references(object) && !has_instance_attributes(object);
}

SpareTensors::Bucket* SpareTensors::bucket_for(const std::type_info& impl_type,
                                               c10::DispatchKeySet keys) {
  for (Bucket& bucket : buckets_)
    if (bucket.keys == keys && *bucket.impl_type == impl_type) return &bucket;
  return nullptr;
}

const c10::Storage& SpareTensors::empty_storage(c10::Device device) {
  for (const auto& [of, storage] : empty_storages_)
    if (of == device) return storage;
  empty_storages_.emplace_back(
      device, c10::Storage(c10::Storage::use_byte_size_t(), 0, c10::DataPtr(nullptr, device),
                           /*allocator=*/nullptr, /*resizable=*/false));
  return empty_storages_.back().second;
}

bool SpareTensors::offer(PyObject* object) {
  if (!enabled_ || count_ >= kMaxSpares || !qualifies(object)) return false;
  c10::TensorImpl* impl = THPVariable_Unpack(object).unsafeGetTensorImpl();
  try {
    Bucket* bucket = bucket_for(typeid(*impl), impl->key_set());
    if (bucket == nullptr) {
      buckets_.push_back(Bucket{&typeid(*impl), impl->key_set(), {}});
      bucket = &buckets_.back();
    }
    bucket->objects.reserve(bucket->objects.size() + 1);
    // The memory goes back now, as the object's own release would have given it back.
    impl->set_storage_keep_dtype(empty_storage(impl->device()));
    // A counter at version 0 that no other tensor shares, as a new tensor's: its own when no
    // alias (a detach()) shares it. Made here, while the engine works, not in the build.
    if (!impl->is_inference()) {  // an inference tensor's counter is disabled
      if (impl->version_counter().unique())
        c10::VariableVersion(impl->version_counter()).set_version(0);
      else
        impl->set_version_counter(c10::VariableVersion(/*version=*/0));
    }
    bucket->objects.push_back(object);
  } catch (const std::exception&) {  // no memory for the lists: released as before
    return false;
  }
  ++count_;
  return true;
}

PyObject* SpareTensors::reuse(at::Tensor& output) {
  if (count_ == 0 || !output.defined()) return nullptr;
  c10::TensorImpl* impl = output.unsafeGetTensorImpl();
  if (output.use_count() != 1 || output.weak_use_count() != 1 ||
      impl->pyobj_slot()->load_pyobj() != nullptr)
    return nullptr;
  Bucket* bucket = bucket_for(typeid(*impl), impl->key_set());
  if (bucket == nullptr || bucket->objects.empty()) return nullptr;
  PyObject* object = bucket->objects.back();
  bucket->objects.pop_back();
  --count_;
  try {
    // The storage, sizes, strides, offset, dtype, device and keys; the counter stays the
    // spare's, made new in offer().
    THPVariable_Unpack(object).unsafeGetTensorImpl()->shallow_copy_from(output.getIntrusivePtr());
    finished_.push_back(std::move(output));
  } catch (...) {
    Py_DECREF(object);
    throw;
  }
  ++reused_;
  return object;
}

void SpareTensors::drop_finished() { finished_.clear(); }

size_t SpareTensors::release_all() {
  drop_finished();
  std::vector<Bucket> going;
  going.swap(buckets_);  // before any release: Python code it may run sees no spares
  count_ = 0;
  size_t released = 0;
  for (Bucket& bucket : going) {
    for (PyObject* object : bucket.objects) Py_DECREF(object);
    released += bucket.objects.size();
  }
  return released;
}

PyObject* wrap_output(at::Tensor tensor, NewTensors& created) {
  const bool new_object = tensor.unsafeGetTensorImpl()->pyobj_slot()->load_pyobj() == nullptr;
  const int64_t bytes = static_cast<int64_t>(tensor.nbytes());
  PyObject* object = new_object ? SpareTensors::instance().reuse(tensor) : nullptr;
  if (object == nullptr) object = THPVariable_Wrap(std::move(tensor));
  if (object == nullptr) throw pybind11::error_already_set();
  if (new_object) {
    try {
      created.add(object, bytes);
    } catch (...) {
      Py_DECREF(object);
      throw;
    }
  }
  return object;
}

}  // namespace mtc::python
