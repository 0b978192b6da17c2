#include "arguments.h"

#include <c10/util/Exception.h>
#include <torch/csrc/Device.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace py = pybind11;

namespace mtc::python {
namespace {

// What was passed, for a message of one line: the type and a repr cut to a few dozen characters.
std::string describe(py::handle value) {
  std::string text = Py_TYPE(value.ptr())->tp_name;
  PyObject* repr = PyObject_Repr(value.ptr());
  if (repr == nullptr) {
    PyErr_Clear();
    return text;
  }
  Py_ssize_t size = 0;
  const char* chars = PyUnicode_AsUTF8AndSize(repr, &size);
  if (chars == nullptr) {
    PyErr_Clear();
  } else {
    constexpr Py_ssize_t kMax = 60;
    text += " " + (size <= kMax ? std::string(chars, size) : std::string(chars, kMax) + "...");
  }
  Py_DECREF(repr);
  return text;
}

[[noreturn]] void wrong_type(const char* option, const char* wanted, py::handle value) {
  throw py::type_error(std::string("mtc.start_copy: ") + option + " must be " + wanted + ", got " +
                       describe(value));
}

// An integer through operator.index; -1 with OverflowError set when it does not fit.
int64_t index_value(PyObject* object, const char* option) {
  PyObject* index = PyNumber_Index(object);
  if (index == nullptr) {
    PyErr_Clear();
    wrong_type(option, "an integer", object);
  }
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (overflow != 0) {
    throw py::value_error(std::string("mtc.start_copy: ") + option + " is out of range, got " +
                          describe(object));
  }
  return value;
}

// What a flag may be, as its errors say.
constexpr const char* kFlagKinds = "a bool (or the integer 0 or 1)";

// A flag's value: a bool, numpy's bool or the integer 0 or 1; nullopt for anything else (None,
// 0.0, 'no', 2).
std::optional<bool> as_flag(py::handle value) {
  PyObject* object = value.ptr();
  if (object == Py_True) return true;
  if (object == Py_False) return false;
  // numpy's bool scalar (numpy.bool_, named numpy.bool since numpy 2), as a mask's element gives
  // it; told by its type's name, so that numpy need not be imported.
  const std::string_view type_name = Py_TYPE(object)->tp_name;
  if (type_name == "numpy.bool_" || type_name == "numpy.bool") {
    const int truth = PyObject_IsTrue(object);
    if (truth >= 0) return truth == 1;
    PyErr_Clear();
    return std::nullopt;
  }
  // Not truthiness: 'no' would be True. An integer 0 or 1 is what a C-minded caller passes.
  if (PyIndex_Check(object) && !PyFloat_Check(object)) {
    PyObject* index = PyNumber_Index(object);
    if (index != nullptr) {
      int overflow = 0;
      const long long number = PyLong_AsLongLongAndOverflow(index, &overflow);
      Py_DECREF(index);
      if (overflow == 0 && (number == 0 || number == 1)) return number == 1;
    } else {
      PyErr_Clear();
    }
  }
  return std::nullopt;
}

bool flag(py::handle value, const char* option) {
  if (const std::optional<bool> on = as_flag(value)) return *on;
  wrong_type(option, kFlagKinds, value);
}

int64_t integer(py::handle value, const char* option) {
  PyObject* object = value.ptr();
  if (PyFloat_Check(object)) {
    // 1.5e6 is a byte count written the short way; 1.5 is not a byte count.
    const double number = PyFloat_AS_DOUBLE(object);
    if (!std::isfinite(number) || std::floor(number) != number)
      wrong_type(option, "an integer (a float only with an integral value)", value);
    if (number < -9.2233720368547758e18 || number >= 9.2233720368547758e18) {
      throw py::value_error(std::string("mtc.start_copy: ") + option + " is out of range, got " +
                            describe(value));
    }
    return static_cast<int64_t>(number);
  }
  return index_value(object, option);
}

// torch.device, called for what is neither a torch.device nor a str (bytes, an int index).
c10::Device device_from_torch(py::handle device) {
  static PyObject* torch_device = nullptr;  // the GIL guards it; kept for the process's life
  if (torch_device == nullptr)
    torch_device = py::object(py::module_::import("torch").attr("device")).release().ptr();
  PyObject* made = PyObject_CallOneArg(torch_device, device.ptr());
  if (made != nullptr && THPDevice_Check(made)) {
    const c10::Device parsed = reinterpret_cast<THPDevice*>(made)->device;
    Py_DECREF(made);
    return parsed;
  }
  // torch.device's own TypeError lists its overloads over several lines; one line is enough.
  const bool type_problem = made != nullptr || PyErr_ExceptionMatches(PyExc_TypeError);
  Py_XDECREF(made);
  if (type_problem) {
    PyErr_Clear();
    throw py::type_error(
        "mtc.start_copy: device must be a torch.device, str, bytes or int index (what "
        "torch.device() accepts), got " +
        describe(device));
  }
  const py::error_already_set error;  // takes the Python error over
  const std::string why = error.what();
  throw py::value_error("mtc.start_copy: bad device " + describe(device) + ": " +
                        why.substr(0, why.find('\n')));
}

}  // namespace

c10::Device parse_device(py::handle device) {
  if (THPDevice_Check(device.ptr())) return reinterpret_cast<THPDevice*>(device.ptr())->device;
  if (PyUnicode_Check(device.ptr())) {
    // A loop copies to the same device string call after call: the last one parsed is kept
    // (the GIL guards it), which spares parsing it again (~0.5 us). Only an exact str: letting go
    // of the one kept then runs no code (a subclass's __del__ could call start_copy and find the
    // cache half updated).
    static PyObject* last_text = nullptr;
    static c10::Device last_device(c10::kCPU);
    const bool exact = PyUnicode_CheckExact(device.ptr());
    if (exact && last_text != nullptr &&
        (device.ptr() == last_text || PyUnicode_Compare(device.ptr(), last_text) == 0))
      return last_device;
    const auto text = device.cast<std::string>();
    try {
      const c10::Device parsed(text);
      if (exact) {
        last_device = parsed;
        Py_INCREF(device.ptr());
        Py_XSETREF(last_text, device.ptr());
      }
      return parsed;
    } catch (const c10::Error& e) {
      throw py::value_error("mtc.start_copy: bad device '" + text +
                            "': " + e.what_without_backtrace());
    }
  }
  // bool is an int, and torch.device(True) is refused by torch too, with its long message.
  if (PyBool_Check(device.ptr()) || device.is_none()) {
    throw py::type_error(
        "mtc.start_copy: device must be a torch.device, str, bytes or int index (what "
        "torch.device() accepts), got " +
        describe(device));
  }
  return device_from_torch(device);
}

CopyOptions coerce_options(const OptionArguments& arguments) {
  CopyOptions options;
  options.use_pinned_staging = flag(arguments.use_pinned_staging, "use_pinned_staging");
  options.pack_cpu_tensors = flag(arguments.pack_cpu_tensors, "pack_cpu_tensors");
  options.min_packed_alignment_bytes =
      integer(arguments.min_packed_alignment_bytes, "min_packed_alignment_bytes");
  options.max_packed_chunk_bytes =
      integer(arguments.max_packed_chunk_bytes, "max_packed_chunk_bytes");
  options.use_background_thread = flag(arguments.use_background_thread, "use_background_thread");
  options.pinned_host_outputs = flag(arguments.pinned_host_outputs, "pinned_host_outputs");
  return options;
}

bool switch_flag(py::handle value, const char* function) {
  if (const std::optional<bool> on = as_flag(value)) return *on;
  throw py::type_error(std::string("mtc.") + function + ": enabled must be " + kFlagKinds +
                       ", got " + describe(value));
}

}  // namespace mtc::python
