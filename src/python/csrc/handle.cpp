#include "handle.h"

#include <atomic>
#include <chrono>
#include <string>
#include <utility>

namespace py = pybind11;

namespace mtc::python {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<BuildAhead>& build_ahead_setting() {
  static std::atomic<BuildAhead> mode{BuildAhead::kWhileWaiting};
  return mode;
}

double microseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

BuildAhead build_ahead_mode() { return build_ahead_setting().load(std::memory_order_relaxed); }
void set_build_ahead_mode(BuildAhead mode) { build_ahead_setting().store(mode); }

AsyncCopyHandle::AsyncCopyHandle(std::unique_ptr<PyStructure> structure, CopyHandle handle,
                                 c10::Device target, const CopyOptions& options,
                                 const ModuleTimes& times)
    : structure_(std::move(structure)),
      handle_(std::move(handle)),
      target_(target),
      options_(options),
      times_(times) {}

// Dropping an unfinished handle waits for the copy's device work (the engine's rule), without
// the GIL: other Python threads go on meanwhile. The engine then destroys the copy on this
// thread, and the input tensors it drops take the GIL back for their Python objects.
AsyncCopyHandle::~AsyncCopyHandle() {
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

// The result is built while the device still writes the new tensors: the engine hands them
// over once they exist, and only then is completion awaited. While the engine still makes them,
// the result's containers are built ahead (with the GIL, which this thread holds anyway), so
// that only the outputs are left to place once they exist.
py::object AsyncCopyHandle::get() {
  if (result_) return result_;
  // The lock keeps two threads from taking the engine's result of one handle. Holding the GIL,
  // it is only tried: a thread holding the lock may be waiting for the GIL.
  std::unique_lock<std::mutex> lock(get_mutex_, std::try_to_lock);
  // Declared before the GIL is let go, so that it is dropped with the GIL held.
  std::unique_ptr<PyStructure::Ahead> ahead;
  if (lock.owns_lock() && !built_) {
    const BuildAhead mode = build_ahead_mode();
    const bool ready = handle_.ready();
    if (ready && mode != BuildAhead::kAlways) {
      // A copy that is complete already needs no wait: no need to let go of the GIL.
      const Clock::time_point start = Clock::now();
      build(handle_.take_result(), nullptr);
      times_.build_us = microseconds_since(start);
      result_ = built_;
      return result_;
    }
    if (mode != BuildAhead::kNever) {
      const Clock::time_point start = Clock::now();
      ahead = structure_->build_ahead();
      times_.build_ahead_us = microseconds_since(start);
    }
  }
  {
    py::gil_scoped_release release;
    if (!lock.owns_lock())
      lock.lock();  // without the GIL: never waits for a thread that waits for it
    if (!built_) {
      Clock::time_point start = Clock::now();
      c10::IValue output = handle_.take_result();
      times_.result_wait_us = microseconds_since(start);
      const py::gil_scoped_acquire gil;
      start = Clock::now();
      build(std::move(output), ahead.get());
      times_.build_us = microseconds_since(start);
    }
    const Clock::time_point start = Clock::now();
    handle_.wait();
    times_.complete_wait_us = microseconds_since(start);
  }
  if (!result_) result_ = built_;
  return result_;
}

py::dict AsyncCopyHandle::stats() const {
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
  py::dict module;
  module["walk_us"] = times_.walk_us;
  module["engine_start_us"] = times_.engine_start_us;
  module["build_ahead_us"] = times_.build_ahead_us;
  module["result_wait_us"] = times_.result_wait_us;
  module["build_us"] = times_.build_us;
  module["complete_wait_us"] = times_.complete_wait_us;
  out["module"] = module;
  return out;
}

py::dict AsyncCopyHandle::options() const {
  py::dict out;
  out["device"] = target_.str();
  out["use_pinned_staging"] = options_.use_pinned_staging;
  out["pack_cpu_tensors"] = options_.pack_cpu_tensors;
  out["min_packed_alignment_bytes"] = options_.min_packed_alignment_bytes;
  out["max_packed_chunk_bytes"] = options_.max_packed_chunk_bytes;
  out["use_background_thread"] = options_.use_background_thread;
  out["pinned_host_outputs"] = options_.pinned_host_outputs;
  return out;
}

// The outputs are moved into their Python objects, and what is left of the engine's structure
// is dropped in rebuild() or fill(), with the GIL: a tensor that loses its last C++ reference
// other than its Python object's takes the GIL to release that object. The GIL must be held.
void AsyncCopyHandle::build(c10::IValue output, PyStructure::Ahead* ahead) {
  built_ = py::reinterpret_steal<py::object>(ahead != nullptr
                                                 ? structure_->fill(*ahead, std::move(output))
                                                 : structure_->rebuild(std::move(output)));
  structure_->clear();
}

std::unique_ptr<AsyncCopyHandle> start(py::handle data, const c10::Device& target,
                                       const CopyOptions& options) {
  ModuleTimes times;
  Clock::time_point start_time = Clock::now();
  auto structure = std::make_unique<PyStructure>(data.ptr());
  c10::IValue input = structure->take_engine_input();
  times.walk_us = microseconds_since(start_time);
  start_time = Clock::now();
  CopyHandle handle;
  if (options.use_background_thread) {
    // Only validation and a hand-off: keeping the GIL is cheaper than taking it back.
    handle = start_copy(input, target, options);
  } else {
    py::gil_scoped_release release;
    handle = start_copy(input, target, options);
  }
  times.engine_start_us = microseconds_since(start_time);
  return std::make_unique<AsyncCopyHandle>(std::move(structure), std::move(handle), target, options,
                                           times);
}

}  // namespace mtc::python
