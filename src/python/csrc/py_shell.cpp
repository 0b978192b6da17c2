// A dropped result's containers as the new result (DeferredRelease keeps them, "shells"): in a
// loop that copies one shape, the result the program dropped two copies ago has the new one's
// containers and keys, and its tensor objects are the ones the engine remakes in place. Taking
// it whole spares making the result's containers and, where the program drops the last result,
// freeing its containers: both cost as much as the engine's walk of a small batch.
#include <pybind11/pybind11.h>

#include <utility>
#include <vector>

#include "py_structure.h"

namespace py = pybind11;

namespace mtc::python {
namespace {

// Keys of one shape's dicts: the same objects when the program's keys are literals, equal
// strings or integers when each batch brings its own (from a data loader's worker, say).
// Comparing exact strings and integers runs no Python code.
bool same_key(PyObject* kept, PyObject* key) {
  if (kept == key) return true;
  if (PyUnicode_CheckExact(kept) && PyUnicode_CheckExact(key))
    return PyUnicode_Compare(kept, key) == 0;
  if (PyLong_CheckExact(kept) && PyLong_CheckExact(key))
    return PyObject_RichCompareBool(kept, key, Py_EQ) == 1;
  return false;
}

}  // namespace

bool PyStructure::result_is_shell(size_t new_tensors) const {
  // Only a copy that lends its leaves packs them, and only a packed leaf's output is remade in a
  // reused object: to another target the containers would be kept for nothing.
  return lending_.enabled && plain_ && root_is_container_ && !tape_.empty() &&
         new_tensors == lent_.size();
}

PyObject* PyStructure::reuse_shell(NewTensors& created) {
  if (shell_ == nullptr) return nullptr;
  const py::object shell = py::reinterpret_steal<py::object>(std::exchange(shell_, nullptr));
  // Dropped after the match: a value's finalizer may run Python code.
  std::vector<py::object> replaced;
  size_t next = 0;
  size_t leaf = 0;
  if (!match_shell(shell.ptr(), next, leaf, replaced) || next != tape_.size() ||
      leaf != offered_.size())
    return nullptr;
  // The containers hold the tensor objects already; the structure keeps its own references until
  // the engine has confirmed the reuse, as for a result built ahead.
  for (size_t k = 0; k < offered_.size(); ++k) created.add(offered_[k], offered_bytes_[k], k);
  return py::object(shell).release().ptr();
}

bool PyStructure::match_shell(PyObject* object, size_t& next, size_t& leaf,
                              std::vector<py::object>& replaced) {
  const Node& node = tape_[next++];
  // An opaque leaf of a list or dict that is not the node's (the input's) object: replaced by it.
  const auto opaque_differs = [&](PyObject* held) {
    return tape_[next].kind == Kind::kObject && held != tape_[next].object;
  };
  switch (node.kind) {
    case Kind::kTensor:
      return object == offered_[leaf++];
    case Kind::kObject:
      return object == node.object;
    case Kind::kList: {
      if (!PyList_CheckExact(object) || PyList_GET_SIZE(object) != node.size) return false;
      for (Py_ssize_t i = 0; i < node.size; ++i) {
        PyObject* item = PyList_GET_ITEM(object, i);
        if (opaque_differs(item)) {
          replaced.push_back(py::reinterpret_borrow<py::object>(item));  // may throw: no change
          PyObject* wanted = tape_[next++].object;
          Py_INCREF(wanted);
          PyList_SET_ITEM(object, i, wanted);
          Py_DECREF(item);  // the list's reference; `replaced` holds it alive
        } else if (!match_shell(item, next, leaf, replaced)) {
          return false;
        }
      }
      return true;
    }
    case Kind::kTuple: {
      if (!PyTuple_CheckExact(object) || PyTuple_GET_SIZE(object) != node.size) return false;
      for (Py_ssize_t i = 0; i < node.size; ++i)
        if (!match_shell(PyTuple_GET_ITEM(object, i), next, leaf, replaced)) return false;
      return true;
    }
    case Kind::kDict: {
      if (!PyDict_CheckExact(object) || PyDict_GET_SIZE(object) != node.size) return false;
      Py_ssize_t position = 0;
      PyObject* key = nullptr;
      PyObject* value = nullptr;
      // Setting an existing key's value leaves the dict's entries where they are: allowed while
      // PyDict_Next goes through them.
      while (PyDict_Next(object, &position, &key, &value)) {
        if (!same_key(key, tape_[next++].object)) return false;
        if (opaque_differs(value)) {
          replaced.push_back(py::reinterpret_borrow<py::object>(value));
          if (PyDict_SetItem(object, key, tape_[next++].object) < 0) throw py::error_already_set();
        } else if (!match_shell(value, next, leaf, replaced)) {
          return false;
        }
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace mtc::python
