// mtc._C: start_copy and AsyncCopyHandle over the engine's public header, nothing else of the
// project. The walk of the Python structure and the rebuild of the result are in
// py_structure.cpp; this file is the module: arguments, the GIL, errors.
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#include <mtc/copier.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/Device.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "py_structure.h"

namespace py = pybind11;

namespace mtc::python {
namespace {

c10::Device parse_device(py::handle device) {
  if (THPDevice_Check(device.ptr())) return reinterpret_cast<THPDevice*>(device.ptr())->device;
  if (PyUnicode_Check(device.ptr())) {
    const auto text = device.cast<std::string>();
    try {
      return c10::Device(text);
    } catch (const c10::Error& e) {
      throw py::value_error("mtc.start_copy: bad device '" + text +
                            "': " + e.what_without_backtrace());
    }
  }
  throw py::type_error(std::string("mtc.start_copy: device must be a str or a torch.device, got ") +
                       Py_TYPE(device.ptr())->tp_name);
}

// A CUDA index that does not exist is refused here, before the structure is walked or the
// engine is called: nothing touches a device that is not there, and the error is the module's
// own ValueError (the engine checks again for its C++ callers).
void check_cuda_index(const c10::Device& target) {
  if (!target.is_cuda() || !target.has_index()) return;
  const int count = c10::cuda::device_count();
  if (target.index() < count) return;
  throw py::value_error("mtc.start_copy: target " + target.str() + " does not exist (" +
                        std::to_string(count) + " CUDA device(s) visible)");
}

// The options' ranges, checked here as the engine checks them (same words), so that a bad
// argument is the module's own ValueError raised before anything is walked.
void check_options(const CopyOptions& options) {
  if (options.min_packed_alignment_bytes < 1) {
    throw py::value_error("mtc.start_copy: min_packed_alignment_bytes must be >= 1, got " +
                          std::to_string(options.min_packed_alignment_bytes));
  }
  if (options.max_packed_chunk_bytes <= 0) {
    throw py::value_error("mtc.start_copy: max_packed_chunk_bytes must be > 0, got " +
                          std::to_string(options.max_packed_chunk_bytes));
  }
}

// The pending result of one start_copy.
class AsyncCopyHandle {
 public:
  AsyncCopyHandle(std::unique_ptr<PyStructure> structure, CopyHandle handle)
      : structure_(std::move(structure)), handle_(std::move(handle)) {}
  // Owns the copy's completion, like CopyHandle.
  AsyncCopyHandle(const AsyncCopyHandle&) = delete;
  AsyncCopyHandle& operator=(const AsyncCopyHandle&) = delete;

  // Dropping an unfinished handle waits for the copy's device work (the engine's rule), without
  // the GIL: other Python threads go on meanwhile. The engine then destroys the copy on this
  // thread, and the input tensors it drops take the GIL back for their Python objects.
  ~AsyncCopyHandle() {
    bool done = true;
    try {
      done = handle_.ready();
    } catch (const std::exception&) {
      // A failed copy: the engine's own destructor still waits for what it had submitted.
    }
    if (!done) {
      py::gil_scoped_release release;
      handle_ = CopyHandle();
    }
  }

  bool ready() const { return handle_.ready(); }

  // The result is built while the device still writes the new tensors: the engine hands them
  // over once they exist, and only then is completion awaited.
  py::object get() {
    if (result_) return result_;
    {
      // A copy that is complete already needs no wait: no need to let go of the GIL. Only
      // tried: a thread holding the lock may be waiting for the GIL.
      const std::unique_lock<std::mutex> lock(get_mutex_, std::try_to_lock);
      if (lock.owns_lock() && handle_.ready()) {
        if (!built_) build(handle_.take_result());
        result_ = built_;
        return result_;
      }
    }
    {
      // The lock keeps two threads from taking the engine's result of one handle; it is taken
      // without the GIL, so a thread that holds the GIL never waits for it.
      py::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(get_mutex_);
      if (!built_) {
        c10::IValue output = handle_.take_result();
        const py::gil_scoped_acquire gil;
        build(std::move(output));
      }
      handle_.wait();
    }
    if (!result_) result_ = built_;
    return result_;
  }

  py::dict stats() const {
    if (!handle_.ready())
      throw py::value_error("mtc: stats() is known once ready() is true or get() returned");
    const CopyStats s = handle_.stats();
    py::dict out;
    out["tensors"] = s.tensors;
    out["bytes"] = s.bytes;
    out["reused"] = s.reused;
    out["packed"] = s.packed;
    out["chunks"] = s.chunks;
    out["per_tensor"] = s.per_tensor;
    out["pinned_bytes"] = s.pinned_bytes;
    out["walk_threads"] = s.walk_threads;
    out["queued_us"] = s.queued_us;
    out["traverse_us"] = s.traverse_us;
    out["submit_us"] = s.submit_us;
    out["outputs_us"] = s.outputs_us;
    return out;
  }

 private:
  // The outputs are moved into their Python objects, and what is left of the engine's structure
  // is dropped in rebuild(), with the GIL: a tensor that loses its last C++ reference other
  // than its Python object's takes the GIL to release that object. The GIL must be held.
  void build(c10::IValue output) {
    built_ = py::reinterpret_steal<py::object>(structure_->rebuild(std::move(output)));
    structure_->clear();
  }

  std::unique_ptr<PyStructure> structure_;
  CopyHandle handle_;
  std::mutex get_mutex_;
  py::object built_;   // the result, built before the device has finished; guarded by get_mutex_
  py::object result_;  // built_ once the copy has completed
};

std::unique_ptr<AsyncCopyHandle> start(py::handle data, py::handle device, bool use_pinned_staging,
                                       bool pack_cpu_tensors, int64_t min_packed_alignment_bytes,
                                       int64_t max_packed_chunk_bytes, bool use_background_thread) {
  const c10::Device target = parse_device(device);
  check_cuda_index(target);
  CopyOptions options;
  options.use_pinned_staging = use_pinned_staging;
  options.pack_cpu_tensors = pack_cpu_tensors;
  options.min_packed_alignment_bytes = min_packed_alignment_bytes;
  options.max_packed_chunk_bytes = max_packed_chunk_bytes;
  options.use_background_thread = use_background_thread;
  check_options(options);
  auto structure = std::make_unique<PyStructure>(data.ptr());
  c10::IValue input = structure->take_engine_input();
  CopyHandle handle;
  if (use_background_thread) {
    // Only validation and a hand-off: keeping the GIL is cheaper than taking it back.
    handle = start_copy(input, target, options);
  } else {
    py::gil_scoped_release release;
    handle = start_copy(input, target, options);
  }
  return std::make_unique<AsyncCopyHandle>(std::move(structure), std::move(handle));
}

// The engine's errors keep its message; an invalid argument is a ValueError.
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

}  // namespace
}  // namespace mtc::python

PYBIND11_MODULE(_C, m) {
  using mtc::python::AsyncCopyHandle;
  m.doc() = "The mtc engine's binding; use the mtc package.";
  m.attr("__version__") = MTC_VERSION;
  py::register_local_exception_translator(mtc::python::translate_engine_error);

  py::class_<AsyncCopyHandle>(m, "AsyncCopyHandle",
                              "The pending result of start_copy(). Dropping an unfinished handle "
                              "waits for its device work.")
      .def(
          "ready", &AsyncCopyHandle::ready,
          "True once every copy has completed; never blocks. Raises the copy's error if it failed.")
      .def("get", &AsyncCopyHandle::get,
           "Waits (without the GIL) until the copy has completed and returns the structure on the "
           "target. Raises the copy's error if it failed. Later calls return the same object.")
      .def("stats", &AsyncCopyHandle::stats,
           "What the copy did (tensors, bytes, packed, chunks, per_tensor, pinned_bytes, ...): a "
           "dict, known once ready() is true or get() returned.");

  m.def("start_copy", &mtc::python::start, py::arg("data"), py::arg("device"), py::kw_only(),
        py::arg("use_pinned_staging") = true, py::arg("pack_cpu_tensors") = true,
        py::arg("min_packed_alignment_bytes") = 16, py::arg("max_packed_chunk_bytes") = 32 << 20,
        py::arg("use_background_thread") = true,
        "Starts copying every tensor of `data` (lists, tuples and dicts nested to any depth) to "
        "`device` (a str or a torch.device) and returns an AsyncCopyHandle at once. numpy "
        "arrays become tensors; every other object comes back as it is.");
}
