// PyStructure's second half: the result put back together around the engine's outputs (the
// walk and the lending of inputs are in py_structure.cpp).
#include <ATen/core/List.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <utility>

#include "py_structure.h"

namespace py = pybind11;

namespace mtc::python {

// Reads the tape in pre-order and the engine's outputs in the same order, moving each output
// tensor into its Python object: a tensor whose only C++ reference is its Python object's costs
// nothing more to keep or to drop, where one still shared with the engine's structure would
// take the GIL to hold its Python object and again to let go of it (torch's PyObject
// preservation), once per tensor. Without an output (a build ahead of the engine), every tensor
// leaf is its offered object, which the structure keeps owning.
class PyStructure::Reader {
 public:
  Reader(PyStructure& structure, c10::IValue* output, NewTensors& created,
         const std::vector<uint8_t>& reused)
      : tape_(structure.tape_),
        root_is_container_(structure.root_is_container_),
        ahead_(output == nullptr),
        created_(created),
        offered_(structure.offered_),
        offered_bytes_(structure.offered_bytes_),
        reused_(reused) {
    if (ahead_) return;
    if (root_is_container_) {
      roots_ = output->toList();
    } else {
      entry_ = std::move(*output);
    }
  }

  PyObject* read(bool at_root) {
    const Node& node = tape_[next_++];
    switch (node.kind) {
      case Kind::kTensor: {
        const size_t leaf = leaf_++;
        if (ahead_) return offered_object(leaf);
        at::Tensor tensor = next_tensor();
        if (!tensor.defined()) return reused_object(leaf);
        return wrap(std::move(tensor), created_, leaf);
      }
      case Kind::kObject:
        Py_INCREF(node.object);
        return node.object;
      case Kind::kList:
      case Kind::kDeque:
        return sequence(
            node, at_root, Kind::kList, PyList_New,
            [](PyObject* list, Py_ssize_t i, PyObject* item) { PyList_SET_ITEM(list, i, item); });
      case Kind::kTuple:
      case Kind::kNamedTuple:
        return sequence(node, at_root, Kind::kTuple, PyTuple_New,
                        [](PyObject* tuple, Py_ssize_t i, PyObject* item) {
                          PyTuple_SET_ITEM(tuple, i, item);
                        });
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
  // A new list or tuple of the node's elements (`make` and `set` are its kind's), the named tuple
  // or deque around it unless the node is of the `plain` kind itself.
  template <typename Make, typename Set>
  PyObject* sequence(const Node& node, bool at_root, Kind plain, Make make, Set set) {
    py::object items = steal(make(node.size));
    for (Py_ssize_t i = 0; i < node.size; ++i) set(items.ptr(), i, element(at_root, i));
    if (node.kind == plain) return items.release().ptr();
    return steal(finish_sequence(node.kind, node.object, items.ptr())).release().ptr();
  }
  static py::object steal(PyObject* object) {
    if (object == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(object);
  }
  // A tensor without a Python object gets a new one here: a new tensor (one already on the target
  // comes back as its input's object).
  static PyObject* wrap(at::Tensor tensor, NewTensors& created, size_t leaf) {
    const bool new_object = tensor.unsafeGetTensorImpl()->pyobj_slot()->load_pyobj() == nullptr;
    const int64_t bytes = static_cast<int64_t>(tensor.nbytes());
    PyObject* object = THPVariable_Wrap(std::move(tensor));
    if (object == nullptr) throw py::error_already_set();
    if (new_object) {
      try {
        created.add(object, bytes, leaf);
      } catch (...) {
        Py_DECREF(object);
        throw;
      }
    }
    return object;
  }
  // The offered object the engine made leaf `leaf`'s output in (its output is undefined): the
  // structure's reference passes to the result.
  PyObject* reused_object(size_t leaf) {
    TORCH_INTERNAL_ASSERT(leaf < reused_.size() && reused_[leaf] != 0 && offered_[leaf] != nullptr,
                          "mtc: the engine gave no output for tensor leaf ", leaf);
    PyObject* object = offered_[leaf];
    created_.add(object, offered_bytes_[leaf], leaf);
    offered_[leaf] = nullptr;
    return object;
  }
  // Leaf `leaf`'s offered object, for a build ahead of the engine: a new reference, the
  // structure keeping its own until the engine has confirmed the reuse.
  PyObject* offered_object(size_t leaf) {
    PyObject* object = offered_[leaf];
    TORCH_INTERNAL_ASSERT(object != nullptr, "mtc: no object offered for tensor leaf ", leaf);
    created_.add(object, offered_bytes_[leaf], leaf);
    Py_INCREF(object);
    return object;
  }
  // The next element of a container; a root element's tensors are in its own entry.
  PyObject* element(bool at_root, Py_ssize_t index) {
    if (at_root && root_is_container_ && !ahead_) {
      entry_ = roots_.extract(static_cast<size_t>(index));
      in_entry_ = 0;
      if (entry_.isList()) {
        entry_tensors_ = entry_.toListRef();
        for (size_t i = 0; i < std::min(kAhead, entry_tensors_.size()); ++i) ask_for_header(i);
      }
    }
    return read(false);
  }
  // The engine's workers made the output tensors: their headers are in other cores' caches, or
  // after a gap in memory. Wrapping one writes its header (the Python object's slot, the count),
  // so each is asked for, to be written, kAhead tensors before it is wrapped: the transfers
  // overlap instead of coming one after another.
  static constexpr size_t kAhead = 16;
  void ask_for_header(size_t index) const {
    const char* header = reinterpret_cast<const char*>(entry_tensors_[index].unsafeToTensorImpl());
    __builtin_prefetch(header, 1);
    __builtin_prefetch(header + 64, 1);
    __builtin_prefetch(header + 128, 1);
  }
  at::Tensor next_tensor() {
    if (entry_.isTensor()) return std::move(entry_).toTensor();
    if (in_entry_ + kAhead < entry_tensors_.size()) ask_for_header(in_entry_ + kAhead);
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
  size_t leaf_ = 0;  // tensor leaves read so far
  bool root_is_container_;
  bool ahead_;  // no output: every tensor leaf is its offered object
  NewTensors& created_;
  std::vector<PyObject*>& offered_;
  const std::vector<int64_t>& offered_bytes_;
  const std::vector<uint8_t>& reused_;
};

PyObject* PyStructure::rebuild(c10::IValue output, NewTensors& created,
                               const std::vector<uint8_t>& reused) {
  TORCH_INTERNAL_ASSERT(!tape_.empty(), "mtc: rebuild() after clear()");
  return Reader(*this, &output, created, reused).read(/*at_root=*/true);
}

bool PyStructure::can_build_ahead() const {
  // An offer for every tensor leaf: a walk that offered by position may have had more or fewer.
  return !offered_.empty() && offered_.size() == lent_.size() &&
         std::none_of(offered_.begin(), offered_.end(),
                      [](PyObject* object) { return object == nullptr; }) &&
         std::none_of(tape_.begin(), tape_.end(),
                      [](const Node& node) { return node.kind == Kind::kNamedTuple; });
}

PyObject* PyStructure::build_ahead(NewTensors& created) {
  TORCH_INTERNAL_ASSERT(!tape_.empty() && can_build_ahead(), "mtc: build_ahead() without offers");
  static const std::vector<uint8_t> kNone;
  return Reader(*this, nullptr, created, kNone).read(/*at_root=*/true);
}

bool PyStructure::reused_every_leaf(const std::vector<uint8_t>& reused) const {
  return reused.size() == offered_.size() &&
         std::all_of(reused.begin(), reused.end(), [](uint8_t r) { return r != 0; });
}

}  // namespace mtc::python
