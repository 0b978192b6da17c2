// start_copy's arguments, from Python objects to the engine's types, in one place.
//
// Coercion follows what the original package accepted, minus its silent surprises: a device is
// whatever torch.device() accepts (a torch.device, a str, bytes, an int index); integers go
// through operator.index, and a float with an integral value is taken as that integer; a flag
// is a bool (Python's or numpy's) or the integer 0 or 1. Anything else is a one-line TypeError
// naming the option (pybind11's own conversion errors list every overload, which says nothing
// useful here).
#pragma once

#include <c10/core/Device.h>
#include <mtc/copier.h>
#include <pybind11/pybind11.h>

namespace mtc::python {

// Throws pybind11::type_error for a type torch.device() refuses and pybind11::value_error for a
// value it refuses (a string that does not parse, a negative index).
c10::Device parse_device(pybind11::handle device);

// The raw option values, as Python objects, in the order of start_copy's keywords.
struct OptionArguments {
  pybind11::handle use_pinned_staging;
  pybind11::handle pack_cpu_tensors;
  pybind11::handle min_packed_alignment_bytes;
  pybind11::handle max_packed_chunk_bytes;
  pybind11::handle use_background_thread;
  pybind11::handle pinned_host_outputs;
};

// Throws pybind11::type_error (wrong type) or pybind11::value_error (an integer out of int64's
// range) naming the option.
CopyOptions coerce_options(const OptionArguments& arguments);

// The argument of a module's switch (set_deferred_release, set_output_reuse) as a flag, as
// start_copy's flags are read; pybind11's bool took None, 0.5 and 2. Throws pybind11::type_error
// naming `function` for anything else.
bool switch_flag(pybind11::handle value, const char* function);

}  // namespace mtc::python
