// The result built ahead of the outputs (PyStructure::build_ahead and fill).
//
// get() usually finds the engine still working: it waits some tens of microseconds for the
// outputs, and building the result's containers (a few hundred lists, tuples, dicts and keys for
// the reference batch) took about as long again after that wait. Built ahead, only the outputs'
// Python objects and their placing are left for after it.
#include <pybind11/pybind11.h>

#include <cstddef>
#include <vector>

#include "py_reader.h"
#include "py_structure.h"

namespace py = pybind11;

namespace mtc::python {

class PyStructure::AheadBuilder {
 public:
  AheadBuilder(const std::vector<Node>& tape, Ahead& ahead) : tape_(tape), ahead_(ahead) {}

  // The container at the tape's current position (list, tuple or dict); a new reference.
  PyObject* container(bool at_root, size_t root_element) {
    const Node& node = tape_[next_++];
    auto element_root = [&](Py_ssize_t i) { return at_root ? static_cast<size_t>(i) : root_element; };
    switch (node.kind) {
      case Kind::kList: {
        py::object list = steal(PyList_New(node.size));
        for (Py_ssize_t i = 0; i < node.size; ++i)
          PyList_SET_ITEM(list.ptr(), i, element(list.ptr(), node.kind, i, nullptr, element_root(i)));
        return list.release().ptr();
      }
      case Kind::kTuple: {
        py::object tuple = steal(PyTuple_New(node.size));
        for (Py_ssize_t i = 0; i < node.size; ++i)
          PyTuple_SET_ITEM(tuple.ptr(), i,
                           element(tuple.ptr(), node.kind, i, nullptr, element_root(i)));
        return tuple.release().ptr();
      }
      case Kind::kDict: {
        py::object dict = steal(PyDict_New());
        for (Py_ssize_t i = 0; i < node.size; ++i) {
          PyObject* key = tape_[next_++].object;
          const py::object value =
              steal(element(dict.ptr(), node.kind, i, key, element_root(i)));
          if (PyDict_SetItem(dict.ptr(), key, value.ptr()) < 0) throw py::error_already_set();
        }
        return dict.release().ptr();
      }
      default:
        TORCH_INTERNAL_ASSERT(false, "mtc: build_ahead() of a container it cannot build");
    }
  }

 private:
  static py::object steal(PyObject* object) {
    if (object == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(object);
  }

  // What goes at `index` (or under `key`) of `parent`: a new reference.
  PyObject* element(PyObject* parent, Kind parent_kind, Py_ssize_t index, PyObject* key,
                    size_t root_element) {
    const size_t position = next_;
    const Node& node = tape_[position];
    switch (node.kind) {
      case Kind::kObject:
        ++next_;
        Py_INCREF(node.object);
        return node.object;
      case Kind::kList:
      case Kind::kTuple:
      case Kind::kDict:
        return container(false, root_element);
      case Kind::kTensor:
        ++next_;
        ahead_.slots.push_back(
            {parent, key, index, root_element, Ahead::kTensorSlot, parent_kind});
        return placeholder();
      default:
        next_ = skip(position);
        ahead_.slots.push_back({parent, key, index, root_element, position, parent_kind});
        return placeholder();
    }
  }

  // The tape position after the subtree at `position`.
  size_t skip(size_t position) const {
    const Node& node = tape_[position++];
    if (!is_container(node.kind)) return position;
    for (Py_ssize_t i = 0; i < node.size; ++i) {
      if (is_mapping(node.kind)) ++position;  // the key
      position = skip(position);
    }
    return position;
  }

  PyObject* placeholder() const {
    Py_INCREF(ahead_.placeholder.ptr());
    return ahead_.placeholder.ptr();
  }

  const std::vector<Node>& tape_;
  Ahead& ahead_;
  size_t next_ = 0;
};

std::unique_ptr<PyStructure::Ahead> PyStructure::build_ahead() const {
  TORCH_INTERNAL_ASSERT(!tape_.empty(), "mtc: build_ahead() after clear()");
  auto ahead = std::make_unique<Ahead>();
  const Kind root = tape_.front().kind;
  if (root != Kind::kList && root != Kind::kTuple && root != Kind::kDict) return ahead;
  ahead->placeholder = py::reinterpret_steal<py::object>(PyList_New(0));
  if (!ahead->placeholder) throw py::error_already_set();
  ahead->root = py::reinterpret_steal<py::object>(
      AheadBuilder(tape_, *ahead).container(/*at_root=*/true, 0));
  return ahead;
}

PyObject* PyStructure::fill(Ahead& ahead, c10::IValue output) const {
  if (!ahead.root) return rebuild(std::move(output));
  Reader reader(*this, output);
  size_t entered = Ahead::kTensorSlot;
  for (const Ahead::Slot& slot : ahead.slots) {
    if (slot.root_element != entered) {
      reader.enter_root_element(slot.root_element);
      entered = slot.root_element;
    }
    PyObject* value = slot.tape_position == Ahead::kTensorSlot
                          ? reader.next_tensor_object()
                          : reader.read_at(slot.tape_position);
    PyObject* held = nullptr;  // the placeholder taken out
    switch (slot.container_kind) {
      case Kind::kList:
        held = PyList_GET_ITEM(slot.container, slot.index);
        PyList_SET_ITEM(slot.container, slot.index, value);
        break;
      case Kind::kTuple:
        held = PyTuple_GET_ITEM(slot.container, slot.index);
        PyTuple_SET_ITEM(slot.container, slot.index, value);
        break;
      default: {
        const int status = PyDict_SetItem(slot.container, slot.key, value);
        Py_DECREF(value);
        if (status < 0) throw py::error_already_set();
      }
    }
    Py_XDECREF(held);
  }
  return ahead.root.release().ptr();
}

}  // namespace mtc::python
