// A Python structure taken apart for the engine, and put back together around its outputs.
//
// The walk descends into the containers torch.utils._pytree knows (containers.h): list, tuple,
// dict, named tuples, OrderedDict, defaultdict and deque; every other object is an opaque leaf.
// Tensor leaves are torch.Tensor objects (subclasses included); numpy arrays become tensors
// through torch.from_numpy, without a copy where the memory allows it.
//
// The engine is not given the containers. It gets one entry per root element: the element's
// tensors as a tensor list, the tensor itself, or None. That keeps the engine's split walk at
// the granularity of the structure, keeps its error messages ("tensor leaf K of root element
// E", leaves numbered in pre-order) true of the Python structure, and spares building an
// IValue container and a string key for every Python one. A tape of the containers, keys and
// opaque leaves in pre-order rebuilds the result, so the input is not read again after the
// walk.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/python_headers.h>

#include <cstdint>
#include <vector>

#include "containers.h"

namespace mtc::python {

// Deeper nesting is rejected: it is almost surely a container that holds itself.
inline constexpr int kMaxNestingDepth = 1000;

class PyStructure {
 public:
  // Walks `data`; the GIL must be held. Throws pybind11::value_error naming the place
  // (data[0]['boxes']) for a leaf that cannot become a tensor or for too deep a nesting.
  explicit PyStructure(PyObject* data);
  // Owns references to Python objects: copying would have to count them again.
  PyStructure(const PyStructure&) = delete;
  PyStructure& operator=(const PyStructure&) = delete;
  // The GIL must be held.
  ~PyStructure();

  // What the engine copies. Moves the tensors out: call once.
  c10::IValue take_engine_input();
  // The same containers, keys and opaque leaves around `output`, what the engine returned for
  // take_engine_input(); its tensors are moved into the result. A new reference; the GIL must
  // be held (`output` is released here, with it).
  PyObject* rebuild(c10::IValue output) const;
  // Drops the references to the input's keys and opaque leaves; the GIL must be held.
  void clear();

 private:
  struct Node {
    Kind kind;
    Py_ssize_t size;   // elements of a container (a mapping's entries)
    PyObject* object;  // an opaque leaf, a mapping's key or a container's extra (owned), or null
  };
  // One root element's share of the tensors, for the engine's input.
  struct RootElement {
    size_t first_tensor;
    size_t end_tensor;
    bool is_tensor;  // the element is a tensor leaf itself
  };
  class Reader;

  void walk(PyObject* object, int depth);
  // `extra` (owned, may be null) goes into the container's node.
  void walk_elements(PyObject* container, Kind kind, PyObject* extra, int depth);
  void add_tensor(at::Tensor tensor);
  void add_object(PyObject* object);

  std::vector<Node> tape_;
  std::vector<at::Tensor> tensors_;
  std::vector<RootElement> roots_;  // empty when the root is not a container
  bool root_is_container_ = false;
};

}  // namespace mtc::python
