// PyStructure's first half: the walk of the Python structure (the leaves' intake and the engine's
// input are in py_structure.cpp, the rebuild in py_rebuild.cpp).
#include <c10/util/Exception.h>
#include <mtc/stack_room.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/tensor_numpy.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "py_structure.h"

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

// numpy's own flag; an array whose flags cannot be read counts as read-only.
bool array_is_writeable(PyObject* array) {
  PyObject* flags = PyObject_GetAttrString(array, "flags");
  PyObject* writeable = flags == nullptr ? nullptr : PyObject_GetAttrString(flags, "writeable");
  const int answer = writeable == nullptr ? -1 : PyObject_IsTrue(writeable);
  Py_XDECREF(writeable);
  Py_XDECREF(flags);
  if (answer < 0) PyErr_Clear();
  return answer == 1;
}

// A tensor over `array`'s memory, or over a contiguous copy of it (then `copied` is set).
at::Tensor tensor_from_array(PyObject* array, bool& copied) {
  copied = false;
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
  copied = true;
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

// The error of a leaf that cannot be copied, as Python sees it.
[[noreturn]] void raise_path_error(const PathError& e) {
  // A structure that holds itself gives a path a thousand levels long: its ends say enough.
  // They are cut between characters: Python refuses a message that is not valid UTF-8 and
  // would raise a UnicodeDecodeError in place of this error.
  constexpr size_t kEnd = 60;
  auto character_start = [&](size_t at) {
    while (at < e.path.size() && (static_cast<unsigned char>(e.path[at]) & 0xC0) == 0x80) ++at;
    return at;
  };
  const std::string path = e.path.size() <= 3 * kEnd
                               ? e.path
                               : e.path.substr(0, character_start(kEnd)) + "..." +
                                     e.path.substr(character_start(e.path.size() - kEnd));
  throw py::value_error("mtc.start_copy: data" + path + ": " + e.message);
}

// Inside a catch block: the walk's error as Python should see it (a PathError as the ValueError
// naming the place, any other as it is).
[[noreturn]] void rethrow_walk_error() {
  try {
    throw;
  } catch (const PathError& e) {
    raise_path_error(e);
  }
}

// A training loop copies structures of the same shape again and again: the last one's sizes
// spare the vectors their growth.
thread_local size_t last_tape = 0;
thread_local size_t last_tensors = 0;

}  // namespace

void PyStructure::begin_walk() {
  tape_.reserve(last_tape);
  leaf_objects_.reserve(last_tensors);
}

void PyStructure::end_walk() {
  leaf_objects_.clear();
  array_tensors_.clear();
  leaves_taken_ = 0;
  arrays_taken_ = 0;
  last_tape = tape_.size();
  last_tensors = lent_.size();
}

PyStructure::PyStructure(PyObject* data, const LendingRule& lending) : lending_(lending) {
  try {
    begin_walk();
    walk(data, 0);
    root_is_container_ = is_container(tape_.front().kind);
    take_tensor_leaves();
    end_walk();
  } catch (...) {
    clear();
    release_lent();
    rethrow_walk_error();
  }
}

void PyStructure::walk_into(PyObject* root, RootFeed& feed, ReusableOutputs* reuse) {
  root_is_container_ = true;
  engine_input_ = feed.root();  // where release_lent() finds the lent tensors
  feed_ = &feed;
  feed_reuse_ = reuse;
  try {
    begin_walk();
    walk(root, 0);  // each root element goes into the feed as it is walked (walk_elements)
    TORCH_INTERNAL_ASSERT(feed.arrived() == feed.size(), "mtc: the root changed size in its walk");
  } catch (...) {
    feed_ = nullptr;
    feed.abandon();
    rethrow_walk_error();
  }
  feed_ = nullptr;
  tensors_.clear();  // moved into the feed's entries
  end_walk();
}

// The walk asks for each tensor leaf's header (TensorImpl) here and reads it only in
// take_tensor_leaves(), by when it has come: after a training step's gap, reading it at once
// waited for each header in turn. The lending test reads the header's last 24 bytes (numel,
// dtype, device, flags and key set in torch 2.11's layout; another layout only makes these
// prefetches miss); a tensor that is referenced instead has its count in the first line. The
// object is held: code run later in the walk could drop it from its container.
void PyStructure::note_tensor_leaf(PyObject* object) {
  tape_.push_back({Kind::kTensor, 0, nullptr});
  leaf_objects_.push_back(object);
  Py_INCREF(object);
  const char* header =
      reinterpret_cast<const char*>(THPVariable_Unpack(object).unsafeGetTensorImpl());
  if (!lending_.enabled) __builtin_prefetch(header);
  __builtin_prefetch(header + sizeof(c10::TensorImpl) - 24);
  __builtin_prefetch(header + sizeof(c10::TensorImpl) - 1);
}

void PyStructure::note_array_tensor(at::Tensor tensor) {
  tape_.push_back({Kind::kTensor, 0, nullptr});
  leaf_objects_.push_back(nullptr);
  array_tensors_.push_back(std::move(tensor));
}

void PyStructure::add_object(PyObject* object) {
  Py_INCREF(object);
  add_owned_object(object);
}

// Takes over the reference to `object`; so does the tape, should the push fail.
void PyStructure::add_owned_object(PyObject* object) {
  try {
    tape_.push_back({Kind::kObject, 0, object});
  } catch (...) {
    Py_DECREF(object);
    throw;
  }
}

void PyStructure::walk(PyObject* object, int depth) {
  PyTypeObject* type = Py_TYPE(object);
  if (type == &PyList_Type) return walk_elements(object, Kind::kList, nullptr, depth);
  if (type == &PyTuple_Type) return walk_elements(object, Kind::kTuple, nullptr, depth);
  if (type == &PyDict_Type) return walk_elements(object, Kind::kDict, nullptr, depth);
  if (THPVariable_CheckExact(object)) return note_tensor_leaf(object);
  if (is_plain_leaf(object)) return add_object(object);
  // What follows may run Python code (attribute lookups, an __instancecheck__, numpy), which
  // could drop the object from its container: hold it meanwhile.
  const py::object hold = py::reinterpret_borrow<py::object>(object);
  Kind kind = Kind::kObject;
  PyObject* extra = nullptr;
  if (other_container_kind(object, kind, extra)) return walk_elements(object, kind, extra, depth);
  if (is_tensor(object)) return note_tensor_leaf(object);
  PyTypeObject* ndarray = ndarray_type();
  if (ndarray != nullptr && PyObject_TypeCheck(object, ndarray)) {
    bool copied = false;
    at::Tensor tensor = tensor_from_array(object, copied);
    // To the CPU this tensor is the result: over a read-only array (bytes, a file mapped
    // read-only) a write through it would change what must not change, or fault. A contiguous
    // copy of the array is the program's own already.
    if (lending_.to_cpu && !copied && !array_is_writeable(object)) tensor = tensor.clone();
    return note_array_tensor(std::move(tensor));
  }
  add_object(object);
}

// PyDict_Next gives one entry at a time, so the entries are taken kGathered at a time, each value
// asked for as it is taken and walked after the others: their objects come in together. The
// taken keys and values are held until walked, as code run by the walk of one could drop the
// others from the dict.
// Not inlined: its gathered entries would otherwise take stack space in every level of the
// walk's recursion, lists and tuples included.
template <typename Element>
[[gnu::noinline]] void PyStructure::walk_dict_entries(PyObject* dict, Element&& element) {
  constexpr int kGathered = 16;
  struct Taken {
    PyObject* keys[kGathered];
    PyObject* values[kGathered];
    int count = 0;
    int next = 0;  // the first not yet walked; those from here on are still held
    ~Taken() {
      for (int i = next; i < count; ++i) {
        Py_DECREF(keys[i]);
        Py_DECREF(values[i]);
      }
    }
  } taken;
  Py_ssize_t position = 0;
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  bool more = true;
  while (more) {
    taken.count = 0;
    taken.next = 0;
    while (taken.count < kGathered && (more = PyDict_Next(dict, &position, &key, &value))) {
      __builtin_prefetch(value);
      Py_INCREF(key);
      Py_INCREF(value);
      taken.keys[taken.count] = key;
      taken.values[taken.count] = value;
      ++taken.count;
    }
    while (taken.next < taken.count) {
      const int i = taken.next++;
      const py::object held = py::reinterpret_steal<py::object>(taken.values[i]);
      add_owned_object(taken.keys[i]);
      element(taken.values[i], taken.keys[i]);
    }
  }
}

namespace {

// A list's or tuple's items, each asked for kAhead items before it is walked (a prefetch of a
// pointer the container no longer holds does no harm). The size is read at every step: walking
// an item may run code that resizes a list.
template <typename Size, typename Item, typename Element>
void walk_items_ahead(Size size, Item item, Element& element) {
  constexpr Py_ssize_t kAhead = 8;
  for (Py_ssize_t i = 0; i < std::min(kAhead, size()); ++i) __builtin_prefetch(item(i));
  for (Py_ssize_t i = 0; i < size(); ++i) {
    if (i + kAhead < size()) __builtin_prefetch(item(i + kAhead));
    element(item(i), nullptr);
  }
}

}  // namespace

void PyStructure::walk_elements(PyObject* container, Kind kind, PyObject* extra, int depth) {
  // The node owns `extra` from here on, so clear() releases it whatever happens next.
  const size_t node = tape_.size();
  try {
    tape_.push_back({kind, 0, extra});
  } catch (...) {
    Py_XDECREF(extra);
    throw;
  }
  if (depth >= kMaxNestingDepth) {
    throw PathError("nested deeper than " + std::to_string(kMaxNestingDepth) +
                    " levels (a container that holds itself?)");
  }
  // A thread of small stack (threading.stack_size) meets its end first (mtc/stack_room.h).
  if (!mtc::stack_room_for_a_level()) {
    throw PathError("nested " + std::to_string(depth) +
                    " levels deep, as deep as this thread's stack allows");
  }
  // Held while walked: code run by the walk could drop it from its parent.
  const py::object hold = py::reinterpret_borrow<py::object>(container);
  Py_ssize_t count = 0;
  auto element = [&](PyObject* item, PyObject* key) {
    const size_t first_tensor = leaf_objects_.size();
    const size_t first_node = tape_.size();
    try {
      walk(item, depth + 1);
    } catch (PathError& e) {
      e.path =
          (key != nullptr ? "[" + key_text(key) + "]" : "[" + std::to_string(count) + "]") + e.path;
      throw;
    }
    if (depth == 0) {
      roots_.push_back(
          {first_tensor, leaf_objects_.size(), tape_[first_node].kind == Kind::kTensor});
      if (feed_ != nullptr) put_root_element();
    }
    ++count;
  };
  switch (kind) {
    case Kind::kDict:
    case Kind::kDefaultDict:
      // A defaultdict is a dict underneath, in the same order.
      walk_dict_entries(container, element);
      break;
    case Kind::kList:
      walk_items_ahead([&] { return PyList_GET_SIZE(container); },
                       [&](Py_ssize_t i) { return PyList_GET_ITEM(container, i); }, element);
      break;
    case Kind::kTuple:
    case Kind::kNamedTuple:
      walk_items_ahead([&] { return PyTuple_GET_SIZE(container); },
                       [&](Py_ssize_t i) { return PyTuple_GET_ITEM(container, i); }, element);
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

}  // namespace mtc::python
