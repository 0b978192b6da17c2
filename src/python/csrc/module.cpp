// mtc._C: the binding of the engine's public header, nothing else of the project. The public
// start_copy, with its signature and keyword defaults, is Python (mtc/_copy.py); it calls this
// module's start_copy with every argument in place. Arguments: arguments.cpp; the handle and the
// GIL: handle.cpp; the walk: py_structure.cpp; the rebuild: py_rebuild.cpp; errors: errors.cpp;
// dropped results' tensors released in a later get(): deferred_release.cpp.
#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "arguments.h"
#include "deferred_release.h"
#include "errors.h"
#include "handle.h"

namespace py = pybind11;

namespace mtc::python {
namespace {

std::unique_ptr<AsyncCopyHandle> start_binding(
    py::handle data, py::handle device, py::handle use_pinned_staging, py::handle pack_cpu_tensors,
    py::handle min_packed_alignment_bytes, py::handle max_packed_chunk_bytes,
    py::handle use_background_thread, py::handle pinned_host_outputs) {
  const c10::Device target = parse_device(device);
  const CopyOptions options =
      coerce_options({use_pinned_staging, pack_cpu_tensors, min_packed_alignment_bytes,
                      max_packed_chunk_bytes, use_background_thread, pinned_host_outputs});
  return start(data, target, options);
}

// The handle's type takes part in the garbage collector's cycle search: an opaque leaf, a key or
// the result can refer back to the handle (`box.handle = mtc.start_copy([t, box], dev)`), and a
// cycle through a type the collector cannot see is never freed. pybind11 tracks each instance
// as it is allocated, before its handle exists: is_holder_constructed() tells. The type is final:
// a Python subclass's first instance would be tracked before pybind11 had laid it out. No cast
// that could throw: these run inside the collector.
AsyncCopyHandle* handle_of(PyObject* self) {
  if (!py::detail::is_holder_constructed(self)) return nullptr;
  return reinterpret_cast<py::detail::instance*>(self)
      ->get_value_and_holder()
      .value_ptr<AsyncCopyHandle>();
}

void collected_type(PyHeapTypeObject* heap_type) {
  PyTypeObject* type = &heap_type->ht_type;
  type->tp_flags |= Py_TPFLAGS_HAVE_GC;
  type->tp_traverse = [](PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));  // a heap type's instances hold a reference to it
    const AsyncCopyHandle* handle = handle_of(self);
    return handle != nullptr ? handle->traverse(visit, arg) : 0;
  };
  type->tp_clear = [](PyObject* self) {
    if (AsyncCopyHandle* handle = handle_of(self)) handle->clear();
    return 0;
  };
}

}  // namespace
}  // namespace mtc::python

PYBIND11_MODULE(_C, m) {
  using mtc::python::AsyncCopyHandle;
  m.doc() = "The mtc engine's binding; use the mtc package.";
  m.attr("__version__") = MTC_VERSION;
  py::register_local_exception_translator(mtc::python::translate_engine_error);

  // Local to this module: two builds of it in one process (an A/B of the module, each build
  // under its own package name) would otherwise register one C++ type twice, which pybind11
  // refuses at the second import.
  py::class_<AsyncCopyHandle>(m, "AsyncCopyHandle",
                              "The pending result of start_copy(). Dropping an unfinished handle "
                              "waits for its device work.",
                              py::is_final(), py::module_local(),
                              py::custom_type_setup(mtc::python::collected_type))
      .def(
          "ready", &AsyncCopyHandle::ready,
          "True once every copy has completed; never blocks. Raises the copy's error if it failed.")
      .def("get", &AsyncCopyHandle::get,
           "Waits (without the GIL) until the copy has completed and returns the structure on the "
           "target. Raises the copy's error if it failed. Later calls return the same object.")
      .def("stats", &AsyncCopyHandle::stats,
           "What the copy did (tensors, bytes, packed, chunks, per_tensor, pinned_bytes, ...): a "
           "dict, known once ready() is true or get() returned.")
      .def("options", &AsyncCopyHandle::options,
           "The target and the options the engine was given, after coercion: a dict.");

  using mtc::python::DeferredRelease;
  m.def(
      "set_deferred_release",
      [](py::handle enabled) {
        return DeferredRelease::instance().set_enabled(
            mtc::python::switch_flag(enabled, "set_deferred_release"));
      },
      py::arg("enabled"),
      "Turns the deferred release of dropped results' tensors on or off (off releases what is "
      "kept); returns the previous setting.");
  m.def(
      "set_output_reuse",
      [](py::handle enabled) {
        return DeferredRelease::instance().set_reuse_enabled(
            mtc::python::switch_flag(enabled, "set_output_reuse"));
      },
      py::arg("enabled"),
      "Turns on or off the reuse of dropped results' tensor objects as new outputs; returns the "
      "previous setting.");
  m.def("_set_walk_split", &mtc::set_walk_split, py::arg("min_leaves"), py::arg("leaves_per_part"),
        "For benchmarks: the engine's split of a structure among walking threads "
        "(mtc::set_walk_split; defaults 256 and 128), process-wide.");
  m.def("_set_streamed_walk", &mtc::python::set_streamed_walk, py::arg("enabled"),
        "For benchmarks and tests: whether a list, tuple or dict root is walked into the engine's "
        "copy element by element, the engine starting first (on by default), or walked whole "
        "first; returns the previous setting.");
  m.def(
      "_take_reusable",
      [](const py::sequence& wanted) {
        std::vector<bool> mask;
        for (const py::handle item : wanted) {
          const int truth = PyObject_IsTrue(item.ptr());
          if (truth < 0) throw py::error_already_set();
          mask.push_back(truth == 1);
        }
        std::vector<PyObject*> taken = DeferredRelease::instance().take_reusable(mask);
        py::list out;
        for (PyObject* object : taken) {
          // The list takes over each reference (a null position becomes None).
          out.append(object == nullptr ? py::none() : py::reinterpret_steal<py::object>(object));
        }
        return out;
      },
      py::arg("wanted"),
      "For tests of the module's side of the reuse on machines without a GPU: what a copy whose "
      "leaf k is wanted[k] would be offered, as a list by position (None where nothing), taken "
      "out of what the deferred release keeps.");
  m.def(
      "release_deferred", [] { return DeferredRelease::instance().release_all(); },
      "Releases every kept tensor of earlier results now; returns how many references that was.");
  m.def(
      "deferred_release_stats",
      [] {
        const DeferredRelease& kept = DeferredRelease::instance();
        py::dict out;
        out["enabled"] = kept.enabled();
        out["reuse"] = kept.reuse_enabled();
        out["results"] = kept.kept_results();
        out["tensors"] = kept.kept_tensors();
        out["bytes"] = kept.kept_bytes();
        return out;
      },
      "What the deferred release keeps now: enabled, reuse (set_output_reuse), results, tensors, "
      "bytes.");
  m.def("start_copy", &mtc::python::start_binding, py::arg("data"), py::arg("device"),
        py::arg("use_pinned_staging"), py::arg("pack_cpu_tensors"),
        py::arg("min_packed_alignment_bytes"), py::arg("max_packed_chunk_bytes"),
        py::arg("use_background_thread"), py::arg("pinned_host_outputs"),
        "The binding behind mtc.start_copy, every option in place.");
}
