#include "py_walk_errors.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace mtc::python {
namespace {

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

}  // namespace

std::string place_part(PyObject* key, size_t index) {
  std::string part(1, '[');
  part += key != nullptr ? key_text(key) : std::to_string(index);
  part += ']';
  return part;
}

void rethrow_walk_error() {
  try {
    throw;
  } catch (const PathError& e) {
    raise_path_error(e);
  }
}

}  // namespace mtc::python
