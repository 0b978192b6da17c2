#include "py_structure.h"

#include <ATen/core/List.h>
#include <c10/util/Exception.h>
#include <c10/util/MaybeOwned.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/tensor_numpy.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

namespace py = pybind11;

namespace mtc::python {
namespace {

// A leaf that cannot be copied, with where it is; each container it unwinds through prepends
// its own part of the place.
struct PathError : std::exception {
  explicit PathError(std::string why) : message(std::move(why)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string path;
  std::string message;
};

std::string key_text(PyObject* key) {
  PyObject* repr = PyObject_Repr(key);
  if (repr == nullptr) {
    PyErr_Clear();
    return "?";
  }
  const char* text = PyUnicode_AsUTF8(repr);
  std::string out = text != nullptr ? text : "?";
  if (text == nullptr) PyErr_Clear();
  Py_DECREF(repr);
  return out;
}

// Leaves that are never tensors, told apart without an isinstance call.
bool is_plain_leaf(PyObject* object) {
  const PyTypeObject* type = Py_TYPE(object);
  return object == Py_None || type == &PyUnicode_Type || type == &PyLong_Type ||
         type == &PyFloat_Type || type == &PyBool_Type || type == &PyBytes_Type;
}

// By the object's own type: isinstance() also believes a __class__ attribute (a
// Mock(spec=torch.Tensor) passes it), and unpacking such an object as a tensor would read memory
// that is not one.
bool is_tensor(PyObject* object) {
  if (THPVariable_CheckExact(object)) return true;
  if (THPVariableClass == nullptr || !PyType_Check(THPVariableClass)) return false;
  return PyType_IsSubtype(Py_TYPE(object), reinterpret_cast<PyTypeObject*>(THPVariableClass)) != 0;
}

// numpy.ndarray once some code has imported numpy (no object is an array before that).
PyTypeObject* ndarray_type() {
  static PyTypeObject* type = nullptr;  // the GIL guards it; kept for the process's life
  if (type != nullptr) return type;
  PyObject* numpy = PyDict_GetItemString(PyImport_GetModuleDict(), "numpy");  // borrowed
  if (numpy == nullptr) return nullptr;
  PyObject* found = PyObject_GetAttrString(numpy, "ndarray");
  if (found != nullptr && PyType_Check(found)) {
    type = reinterpret_cast<PyTypeObject*>(found);
  } else {
    PyErr_Clear();
    Py_XDECREF(found);
  }
  return type;
}

at::Tensor tensor_from_array(PyObject* array) {
  // The copy only reads the array, so a read-only one needs no warning.
  try {
    return torch::utils::tensor_from_numpy(array, /*warn_if_not_writeable=*/false);
  } catch (const std::exception&) {
    PyErr_Clear();
  }
  // from_numpy refuses negative strides (a reversed view); a contiguous copy of the array is
  // the one case it refuses that can still be copied.
  const py::object contiguous =
      py::module_::import("numpy").attr("ascontiguousarray")(py::handle(array));
  try {
    return torch::utils::tensor_from_numpy(contiguous.ptr(), /*warn_if_not_writeable=*/false);
  } catch (const c10::Error& e) {
    PyErr_Clear();
    throw PathError(std::string("numpy array cannot become a tensor: ") +
                    e.what_without_backtrace());
  } catch (const std::exception& e) {
    PyErr_Clear();
    throw PathError(std::string("numpy array cannot become a tensor: ") + e.what());
  }
}

}  // namespace

LendingRule LendingRule::for_copy(const c10::Device& target, const CopyOptions& options) {
  LendingRule rule;
  rule.enabled = target.is_cuda() && options.pack_cpu_tensors;
  rule.max_bytes = std::min(kMaxPackedTensorBytes, options.max_packed_chunk_bytes);
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

PyStructure::PyStructure(PyObject* data, const LendingRule& lending) : lending_(lending) {
  // A training loop copies structures of the same shape again and again: the last one's sizes
  // spare the vectors their growth.
  thread_local size_t last_tape = 0;
  thread_local size_t last_tensors = 0;
  tape_.reserve(last_tape);
  tensors_.reserve(last_tensors);
  lent_.reserve(last_tensors);
  lent_objects_.reserve(last_tensors);
  try {
    walk(data, 0);
    root_is_container_ = is_container(tape_.front().kind);
    last_tape = tape_.size();
    last_tensors = tensors_.size();
  } catch (const PathError& e) {
    clear();
    release_lent();
    // A structure that holds itself gives a path a thousand levels long: its ends say enough.
    constexpr size_t kEnd = 60;
    const std::string path = e.path.size() <= 3 * kEnd ? e.path
                                                       : e.path.substr(0, kEnd) + "..." +
                                                             e.path.substr(e.path.size() - kEnd);
    throw py::value_error("mtc.start_copy: data" + path + ": " + e.message);
  } catch (...) {
    clear();
    release_lent();
    throw;
  }
}

PyStructure::~PyStructure() {
  clear();
  release_lent();
}

void PyStructure::clear() {
  for (const Node& node : tape_) Py_XDECREF(node.object);
  tape_.clear();
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
  for (PyObject* object : lent_objects_) Py_DECREF(object);
  lent_objects_.clear();
  lent_.clear();
  roots_.clear();
}

// lent_ grows before tensors_: forget_lent_tensors() reads a flag for every tensor present.
void PyStructure::add_tensor(at::Tensor tensor) {
  tape_.push_back({Kind::kTensor, 0, nullptr});
  lent_.push_back(false);
  tensors_.push_back(std::move(tensor));
}

void PyStructure::add_tensor_object(PyObject* object) {
  const at::Tensor& tensor = THPVariable_Unpack(object);
  // Only inside a container: a root tensor is the engine's input itself, which the engine may
  // copy.
  if (tape_.empty() || !lending_.lends(tensor)) return add_tensor(tensor);
  tape_.push_back({Kind::kTensor, 0, nullptr});
  lent_.push_back(true);
  lent_objects_.push_back(object);
  Py_INCREF(object);
  tensors_.push_back(c10::MaybeOwnedTraits<at::Tensor>::createBorrow(tensor));
}

void PyStructure::add_object(PyObject* object) {
  Py_INCREF(object);
  tape_.push_back({Kind::kObject, 0, object});
}

void PyStructure::walk(PyObject* object, int depth) {
  PyTypeObject* type = Py_TYPE(object);
  if (type == &PyList_Type) return walk_elements(object, Kind::kList, nullptr, depth);
  if (type == &PyTuple_Type) return walk_elements(object, Kind::kTuple, nullptr, depth);
  if (type == &PyDict_Type) return walk_elements(object, Kind::kDict, nullptr, depth);
  if (THPVariable_CheckExact(object)) return add_tensor_object(object);
  if (is_plain_leaf(object)) return add_object(object);
  // What follows may run Python code (attribute lookups, an __instancecheck__, numpy), which
  // could drop the object from its container: hold it meanwhile.
  const py::object hold = py::reinterpret_borrow<py::object>(object);
  Kind kind = Kind::kObject;
  PyObject* extra = nullptr;
  if (other_container_kind(object, kind, extra)) return walk_elements(object, kind, extra, depth);
  if (is_tensor(object)) return add_tensor_object(object);
  PyTypeObject* ndarray = ndarray_type();
  if (ndarray != nullptr && PyObject_TypeCheck(object, ndarray))
    return add_tensor(tensor_from_array(object));
  add_object(object);
}

void PyStructure::walk_elements(PyObject* container, Kind kind, PyObject* extra, int depth) {
  // The node owns `extra` from here on, so clear() releases it whatever happens next.
  const size_t node = tape_.size();
  tape_.push_back({kind, 0, extra});
  if (depth >= kMaxNestingDepth) {
    throw PathError("nested deeper than " + std::to_string(kMaxNestingDepth) +
                    " levels (a container that holds itself?)");
  }
  // Held while walked: code run by the walk could drop it from its parent.
  const py::object hold = py::reinterpret_borrow<py::object>(container);
  Py_ssize_t count = 0;
  auto element = [&](PyObject* item, PyObject* key) {
    const size_t first_tensor = tensors_.size();
    const size_t first_node = tape_.size();
    try {
      walk(item, depth + 1);
    } catch (PathError& e) {
      e.path =
          (key != nullptr ? "[" + key_text(key) + "]" : "[" + std::to_string(count) + "]") + e.path;
      throw;
    }
    if (depth == 0)
      roots_.push_back({first_tensor, tensors_.size(), tape_[first_node].kind == Kind::kTensor});
    ++count;
  };
  switch (kind) {
    case Kind::kDict:
    case Kind::kDefaultDict: {
      // A defaultdict is a dict underneath, in the same order.
      Py_ssize_t position = 0;
      PyObject* key = nullptr;
      PyObject* value = nullptr;
      while (PyDict_Next(container, &position, &key, &value)) {
        add_object(key);
        element(value, key);
      }
      break;
    }
    case Kind::kList:
      // The size is read at every step: walking an element may run code that resizes the list.
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(container); ++i)
        element(PyList_GET_ITEM(container, i), nullptr);
      break;
    case Kind::kTuple:
    case Kind::kNamedTuple:
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(container); ++i)
        element(PyTuple_GET_ITEM(container, i), nullptr);
      break;
    default: {
      // OrderedDict (its own order, not the dict's underneath: iterated for its keys) and deque.
      const py::object iterator = py::reinterpret_steal<py::object>(PyObject_GetIter(container));
      if (!iterator) throw py::error_already_set();
      while (PyObject* next = PyIter_Next(iterator.ptr())) {
        const py::object item = py::reinterpret_steal<py::object>(next);
        if (kind == Kind::kDeque) {
          element(item.ptr(), nullptr);
          continue;
        }
        PyObject* value = PyDict_GetItemWithError(container, item.ptr());  // borrowed
        if (value == nullptr) {
          if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, item.ptr());
          throw py::error_already_set();
        }
        const py::object held_value = py::reinterpret_borrow<py::object>(value);
        add_object(item.ptr());
        element(value, item.ptr());
      }
      if (PyErr_Occurred()) throw py::error_already_set();
    }
  }
  tape_[node].size = count;
}

c10::IValue PyStructure::take_engine_input() {
  if (!root_is_container_)
    return tensors_.empty() ? c10::IValue() : c10::IValue(std::move(tensors_.front()));
  c10::impl::GenericList entries(c10::AnyType::get());
  entries.reserve(roots_.size());
  // Kept before any tensor moves in: should an allocation below fail, the entries already made
  // are still found by release_lent() rather than destroyed with their lent tensors counted.
  if (!lent_objects_.empty()) engine_input_ = entries;
  for (const RootElement& root : roots_) {
    if (root.is_tensor) {
      entries.emplace_back(std::move(tensors_[root.first_tensor]));
    } else if (root.first_tensor == root.end_tensor) {
      entries.emplace_back(c10::IValue());
    } else {
      c10::List<at::Tensor> part;
      part.reserve(root.end_tensor - root.first_tensor);
      for (size_t i = root.first_tensor; i < root.end_tensor; ++i)
        part.push_back(std::move(tensors_[i]));
      entries.emplace_back(std::move(part));
    }
  }
  tensors_.clear();
  return entries;
}

}  // namespace mtc::python
