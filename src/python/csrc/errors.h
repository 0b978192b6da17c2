// The engine's exceptions as Python exceptions.
#pragma once

#include <exception>

namespace mtc::python {

// A pybind11 exception translator (registered module-locally, so it runs before any other):
// c10::ValueError -> ValueError, c10::TypeError -> TypeError, c10::OutOfMemoryError ->
// torch.OutOfMemoryError, any other c10::Error -> RuntimeError, each with the engine's message
// without its C++ backtrace. Other exceptions fall through to pybind11's translators.
void translate_engine_error(std::exception_ptr error);

}  // namespace mtc::python
