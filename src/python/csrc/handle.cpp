#include "handle.h"

#include <chrono>
#include <string>
#include <utility>

#include "deferred_release.h"

namespace py = pybind11;

namespace mtc::python {
namespace {

using Clock = std::chrono::steady_clock;

double microseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

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
// over once they exist, and only then is completion awaited.
py::object AsyncCopyHandle::get() {
  if (result_) return result_;
  {
    // A copy that is complete already needs no wait: no need to let go of the GIL. Only
    // tried: a thread holding the lock may be waiting for the GIL.
    const std::unique_lock<std::mutex> lock(get_mutex_, std::try_to_lock);
    if (lock.owns_lock() && handle_.ready()) {
      if (!built_) {
        const Clock::time_point start = Clock::now();
        NewTensors created;
        build(handle_.take_result(), created);
        times_.build_us = microseconds_since(start);
        keep(created, {});  // the copy ran while the program did other work: no wait to use
      }
      result_ = built_;
      return result_;
    }
  }
  // While a worker prepares the outputs, the caller releases kept tensors until the outputs
  // exist, in slices of 4 (preparing() costs two atomic reads, and a slice that outlasts the
  // wait delays the caller). Once the worker's walk opens to helpers, the caller first walks
  // its share, as take_result() would (the walk is faster for it), without the GIL (a large
  // structure's share is long). With nothing kept, take_result() does all of that.
  ReleaseWindow preparing;
  if (DeferredRelease::instance().kept_tensors() > 0 && handle_.preparing()) {
    bool helped = false;
    preparing = release_kept_while(4, [this, &helped] {
      if (!helped && handle_.can_help()) {
        helped = true;
        const py::gil_scoped_release release;
        handle_.help();
      }
      return handle_.preparing();
    });
  }
  {
    // The lock keeps two threads from taking the engine's result of one handle; it is taken
    // without the GIL, so a thread that holds the GIL never waits for it.
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(get_mutex_);
    if (!built_) {
      Clock::time_point start = Clock::now();
      c10::IValue output = handle_.take_result();
      times_.result_wait_us = microseconds_since(start);
      const py::gil_scoped_acquire gil;
      start = Clock::now();
      NewTensors created;
      build(std::move(output), created);
      times_.build_us = microseconds_since(start);
      // The device may still be writing the outputs (GPU->CPU: their host copies may be pending).
      // Released before this result's tensors are kept: only earlier results' go.
      // Slices of 16: ready() queries the device.
      const ReleaseWindow completing = release_kept_while(16, [this] { return !handle_.ready(); });
      keep(created, {preparing.released + completing.released,
                     preparing.wanted_more || completing.wanted_more});
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
  module["result_wait_us"] = times_.result_wait_us;
  module["build_us"] = times_.build_us;
  module["complete_wait_us"] = times_.complete_wait_us;
  module["released_tensors"] = times_.released_tensors;
  module["release_us"] = times_.release_us;
  module["released_to_keep"] = times_.released_to_keep;
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
// is dropped in rebuild(), with the GIL: a tensor that loses its last C++ reference other than
// its Python object's takes the GIL to release that object. The GIL must be held.
void AsyncCopyHandle::build(c10::IValue output, NewTensors& created) {
  thread_local size_t last_created = 0;  // a training loop's results are alike: no regrowth
  created.objects.reserve(last_created);
  created.bytes.reserve(last_created);
  built_ = py::reinterpret_steal<py::object>(structure_->rebuild(std::move(output), created));
  structure_->clear();
  last_created = created.objects.size();
}

void AsyncCopyHandle::keep(const NewTensors& created, ReleaseWindow waits) {
  DeferredRelease& kept = DeferredRelease::instance();
  kept.learn(waits.released, waits.wanted_more);
  times_.released_to_keep = static_cast<int64_t>(kept.keep(created));
}

// In slices: between two, the copy may have got where the caller should go on.
template <typename Waiting>
AsyncCopyHandle::ReleaseWindow AsyncCopyHandle::release_kept_while(size_t slice, Waiting waiting) {
  DeferredRelease& kept = DeferredRelease::instance();
  if (!kept.enabled() || !waiting()) return {};
  if (kept.kept_tensors() == 0) return {0, true};
  const Clock::time_point start = Clock::now();
  const size_t before = kept.kept_tensors();
  while (kept.release_some(slice) && waiting()) {
  }
  // Python code run by a release may have kept more; the difference is what left here.
  const size_t after = kept.kept_tensors();
  const ReleaseWindow window{before > after ? before - after : 0, after == 0 && waiting()};
  times_.released_tensors += static_cast<int64_t>(window.released);
  times_.release_us += microseconds_since(start);
  return window;
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
