#include "py_structure.h"

#include <ATen/core/List.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/tensor_numpy.h>

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

bool is_tensor(PyObject* object) {
  if (THPVariable_CheckExact(object)) return true;
  if (THPVariableClass == nullptr) return false;
  const int result = PyObject_IsInstance(object, THPVariableClass);
  if (result < 0) throw py::error_already_set();
  return result == 1;
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

PyStructure::PyStructure(PyObject* data) {
  // A training loop copies structures of the same shape again and again: the last one's sizes
  // spare the vectors their growth.
  thread_local size_t last_tape = 0;
  thread_local size_t last_tensors = 0;
  tape_.reserve(last_tape);
  tensors_.reserve(last_tensors);
  try {
    walk(data, 0);
    root_is_container_ = is_container(tape_.front().kind);
    last_tape = tape_.size();
    last_tensors = tensors_.size();
  } catch (const PathError& e) {
    clear();
    // A structure that holds itself gives a path a thousand levels long: its ends say enough.
    constexpr size_t kEnd = 60;
    const std::string path = e.path.size() <= 3 * kEnd ? e.path
                                                       : e.path.substr(0, kEnd) + "..." +
                                                             e.path.substr(e.path.size() - kEnd);
    throw py::value_error("mtc.start_copy: data" + path + ": " + e.message);
  } catch (...) {
    clear();
    throw;
  }
}

PyStructure::~PyStructure() { clear(); }

void PyStructure::clear() {
  for (const Node& node : tape_) Py_XDECREF(node.object);
  tape_.clear();
  tensors_.clear();
  roots_.clear();
}

void PyStructure::add_tensor(at::Tensor tensor) {
  tape_.push_back({Kind::kTensor, 0, nullptr});
  tensors_.push_back(std::move(tensor));
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
  if (THPVariable_CheckExact(object)) return add_tensor(THPVariable_Unpack(object));
  if (is_plain_leaf(object)) return add_object(object);
  // What follows may run Python code (attribute lookups, an __instancecheck__, numpy), which
  // could drop the object from its container: hold it meanwhile.
  const py::object hold = py::reinterpret_borrow<py::object>(object);
  Kind kind = Kind::kObject;
  PyObject* extra = nullptr;
  if (other_container_kind(object, kind, extra)) return walk_elements(object, kind, extra, depth);
  if (is_tensor(object)) return add_tensor(THPVariable_Unpack(object));
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

// Reads the tape in pre-order and the engine's outputs in the same order, moving each output
// tensor into its Python object: a tensor whose only C++ reference is its Python object's costs
// nothing more to keep or to drop, where one still shared with the engine's structure would
// take the GIL to hold its Python object and again to let go of it (torch's PyObject
// preservation), once per tensor.
class PyStructure::Reader {
 public:
  Reader(const PyStructure& structure, c10::IValue& output)
      : tape_(structure.tape_), root_is_container_(structure.root_is_container_) {
    if (root_is_container_) {
      roots_ = output.toList();
    } else {
      entry_ = std::move(output);
    }
  }

  PyObject* read(bool at_root) {
    const Node& node = tape_[next_++];
    switch (node.kind) {
      case Kind::kTensor:
        return wrap(next_tensor());
      case Kind::kObject:
        Py_INCREF(node.object);
        return node.object;
      case Kind::kList:
      case Kind::kDeque: {
        py::object list = steal(PyList_New(node.size));
        for (Py_ssize_t i = 0; i < node.size; ++i)
          PyList_SET_ITEM(list.ptr(), i, element(at_root, i));
        if (node.kind == Kind::kList) return list.release().ptr();
        return steal(finish_sequence(node.kind, node.object, list.ptr())).release().ptr();
      }
      case Kind::kTuple:
      case Kind::kNamedTuple: {
        py::object tuple = steal(PyTuple_New(node.size));
        for (Py_ssize_t i = 0; i < node.size; ++i)
          PyTuple_SET_ITEM(tuple.ptr(), i, element(at_root, i));
        if (node.kind == Kind::kTuple) return tuple.release().ptr();
        return steal(finish_sequence(node.kind, node.object, tuple.ptr())).release().ptr();
      }
      case Kind::kDict:
      case Kind::kOrderedDict:
      case Kind::kDefaultDict: {
        py::object mapping = steal(new_mapping(node.kind, node.object));
        for (Py_ssize_t i = 0; i < node.size; ++i) {
          PyObject* key = tape_[next_++].object;
          const py::object value = steal(element(at_root, i));
          if (mapping_insert(node.kind, mapping.ptr(), key, value.ptr()) < 0)
            throw py::error_already_set();
        }
        return mapping.release().ptr();
      }
    }
    TORCH_INTERNAL_ASSERT(false, "mtc: unknown node kind in the structure's tape");
  }

 private:
  static py::object steal(PyObject* object) {
    if (object == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(object);
  }
  static PyObject* wrap(at::Tensor tensor) {
    PyObject* object = THPVariable_Wrap(std::move(tensor));
    if (object == nullptr) throw py::error_already_set();
    return object;
  }
  // The next element of a container; a root element's tensors are in its own entry.
  PyObject* element(bool at_root, Py_ssize_t index) {
    if (at_root && root_is_container_) {
      entry_ = roots_.extract(static_cast<size_t>(index));
      if (entry_.isList()) entry_tensors_ = entry_.toListRef();
      in_entry_ = 0;
    }
    return read(false);
  }
  at::Tensor next_tensor() {
    if (entry_.isTensor()) return std::move(entry_).toTensor();
    // The list's elements are ours alone (the engine handed the structure over) and not const
    // objects: moved out in place, without c10::List::extract's checks and write-back, once per
    // tensor.
    return std::move(const_cast<c10::IValue&>(entry_tensors_[in_entry_++])).toTensor();
  }

  const std::vector<Node>& tape_;
  c10::impl::GenericList roots_{c10::AnyType::get()};  // the engine's entries, by root element
  c10::IValue entry_;                                  // the current root element's entry
  c10::ArrayRef<c10::IValue> entry_tensors_;  // its tensors, when several (entry_ owns them)
  size_t in_entry_ = 0;
  size_t next_ = 0;
  bool root_is_container_;
};

PyObject* PyStructure::rebuild(c10::IValue output) const {
  TORCH_INTERNAL_ASSERT(!tape_.empty(), "mtc: rebuild() after clear()");
  return Reader(*this, output).read(/*at_root=*/true);
}

}  // namespace mtc::python
