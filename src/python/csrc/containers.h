// The containers the walk takes apart, and how each is put back together.
//
// The set is torch.utils._pytree's built-in node types: list, tuple, dict, named tuples,
// collections.OrderedDict, collections.defaultdict and collections.deque. Each comes back as its
// own type: the same named tuple class, the same default_factory, the same maxlen. Like pytree,
// only those exact types count (a named tuple is any class that pytree's rule calls one); a
// subclass of list or dict, or of OrderedDict, is a leaf, because its constructor may want more
// than its elements. Exact list, tuple and dict are told apart by a type comparison alone (the
// common case); the others cost one comparison each, and a named tuple a few attribute reads.
#pragma once

#include <torch/csrc/python_headers.h>

#include <cstdint>

namespace mtc::python {

enum class Kind : uint8_t {
  kTensor,
  kObject,  // an opaque leaf, returned as it is
  kList,
  kTuple,
  kDict,
  kNamedTuple,   // extra: the class
  kOrderedDict,  // extra: none
  kDefaultDict,  // extra: the default_factory
  kDeque,        // extra: the maxlen (None or an int)
};

inline bool is_container(Kind kind) { return kind >= Kind::kList; }
// Containers whose elements are values under keys (the tape holds each key before its value).
inline bool is_mapping(Kind kind) {
  return kind == Kind::kDict || kind == Kind::kOrderedDict || kind == Kind::kDefaultDict;
}

// The kind of a container other than exact list, tuple and dict, with what rebuilding it needs
// in `extra` (a new reference, or null); false for a leaf. The GIL must be held; may run Python
// code (attribute lookups of a tuple subclass) and throw pybind11::error_already_set.
bool other_container_kind(PyObject* object, Kind& kind, PyObject*& extra);

// A new, empty mapping of `kind` (dict, OrderedDict or defaultdict with `extra` as its factory);
// a new reference, or null with a Python error set.
PyObject* new_mapping(Kind kind, PyObject* extra);
// Inserts into a mapping made by new_mapping; -1 with a Python error set on failure.
// OrderedDict keeps its own order, so it is filled through its mapping protocol, not the dict's.
int mapping_insert(Kind kind, PyObject* mapping, PyObject* key, PyObject* value);
// The named tuple or deque around a finished tuple or list of elements; a new reference, or null
// with a Python error set. The elements are not stolen.
PyObject* finish_sequence(Kind kind, PyObject* extra, PyObject* elements);

}  // namespace mtc::python
