#include "containers.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace mtc::python {
namespace {

// collections' container types, read once; they live as long as the interpreter.
struct CollectionsTypes {
  PyObject* ordered_dict = nullptr;
  PyObject* default_dict = nullptr;
  PyObject* deque = nullptr;
};

const CollectionsTypes& collections_types() {
  static CollectionsTypes types;  // the GIL guards its first filling
  if (types.deque != nullptr) return types;
  const py::module_ collections = py::module_::import("collections");
  types.ordered_dict = py::object(collections.attr("OrderedDict")).release().ptr();
  types.default_dict = py::object(collections.attr("defaultdict")).release().ptr();
  types.deque = py::object(collections.attr("deque")).release().ptr();
  return types;
}

bool has_callable(PyObject* type, const char* name) {
  PyObject* attribute = PyObject_GetAttrString(type, name);
  if (attribute == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool callable = PyCallable_Check(attribute) != 0;
  Py_DECREF(attribute);
  return callable;
}

// torch.utils._pytree.is_namedtuple_class: a tuple subclass with string _fields, _make and
// _asdict.
bool is_named_tuple_class(PyObject* type) {
  PyObject* fields = PyObject_GetAttrString(type, "_fields");
  if (fields == nullptr) {
    PyErr_Clear();
    return false;
  }
  bool named = PyTuple_CheckExact(fields) != 0;
  for (Py_ssize_t i = 0; named && i < PyTuple_GET_SIZE(fields); ++i)
    named = PyUnicode_CheckExact(PyTuple_GET_ITEM(fields, i)) != 0;
  Py_DECREF(fields);
  return named && has_callable(type, "_make") && has_callable(type, "_asdict");
}

}  // namespace

bool other_container_kind(PyObject* object, Kind& kind, PyObject*& extra) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(object));
  extra = nullptr;
  if (PyTuple_Check(object)) {
    if (!is_named_tuple_class(type)) return false;
    kind = Kind::kNamedTuple;
    Py_INCREF(type);
    extra = type;
    return true;
  }
  const CollectionsTypes& types = collections_types();
  if (type == types.ordered_dict) {
    kind = Kind::kOrderedDict;
    return true;
  }
  if (type == types.default_dict) {
    kind = Kind::kDefaultDict;
    extra = PyObject_GetAttrString(object, "default_factory");
    if (extra == nullptr) throw py::error_already_set();
    return true;
  }
  if (type == types.deque) {
    kind = Kind::kDeque;
    extra = PyObject_GetAttrString(object, "maxlen");
    if (extra == nullptr) throw py::error_already_set();
    return true;
  }
  return false;
}

PyObject* new_mapping(Kind kind, PyObject* extra) {
  switch (kind) {
    case Kind::kOrderedDict:
      return PyObject_CallNoArgs(collections_types().ordered_dict);
    case Kind::kDefaultDict:
      return PyObject_CallOneArg(collections_types().default_dict, extra);
    default:
      return PyDict_New();
  }
}

int mapping_insert(Kind kind, PyObject* mapping, PyObject* key, PyObject* value) {
  if (kind == Kind::kOrderedDict) return PyObject_SetItem(mapping, key, value);
  return PyDict_SetItem(mapping, key, value);
}

PyObject* finish_sequence(Kind kind, PyObject* extra, PyObject* elements) {
  // pytree rebuilds a named tuple with cls(*values) and a deque with deque(values, maxlen).
  if (kind == Kind::kNamedTuple) return PyObject_Call(extra, elements, nullptr);
  PyObject* deque = collections_types().deque;
  PyObject* arguments[] = {elements, extra};
  return PyObject_Vectorcall(deque, arguments, 2, nullptr);
}

}  // namespace mtc::python
