#include "errors.h"

#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace mtc::python {

// pybind11 calls translators in the thread that called into the module, with the GIL held.
void translate_engine_error(std::exception_ptr error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const c10::ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
  } catch (const c10::TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what_without_backtrace());
  } catch (const c10::OutOfMemoryError& e) {
    const py::object out_of_memory = py::module_::import("torch").attr("OutOfMemoryError");
    PyErr_SetString(out_of_memory.ptr(), e.what_without_backtrace());
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  }
}

}  // namespace mtc::python
