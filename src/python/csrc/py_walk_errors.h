// The walk's errors (py_walk.cpp, py_walk_parallel.cpp): a leaf that cannot be copied, with the
// place in the structure where it is, and how Python sees it.
#pragma once

#include <torch/csrc/python_headers.h>

#include <exception>
#include <string>
#include <utility>

namespace mtc::python {

// A leaf that cannot be copied, with where it is; each container it unwinds through prepends
// its own part of the place.
struct PathError : std::exception {
  explicit PathError(std::string why) : message(std::move(why)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string path;
  std::string message;
};

// The place's part for an element: "[repr(key)]", or "[index]" without a key. The GIL must be held.
std::string place_part(PyObject* key, size_t index);

// Inside a catch block: the walk's error as Python should see it (a PathError as the ValueError
// naming the place, any other as it is).
[[noreturn]] void rethrow_walk_error();

// Leaves that are never tensors, told apart without an isinstance call (reads only the type).
inline bool is_plain_leaf(PyObject* object) {
  const PyTypeObject* type = Py_TYPE(object);
  return object == Py_None || type == &PyUnicode_Type || type == &PyLong_Type ||
         type == &PyFloat_Type || type == &PyBool_Type || type == &PyBytes_Type;
}

}  // namespace mtc::python
