// AsyncCopyHandle, the pending result of one start_copy, and start() that makes one.
#pragma once

#include <c10/core/Device.h>
#include <mtc/copier.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>

#include "py_structure.h"

namespace mtc::python {

// Where the module's own time went, per call (stats()["module"]): the engine's stats say
// nothing of the walk of the Python structure or of building the result, the module's share.
struct ModuleTimes {
  double walk_us = 0;           // the Python structure taken apart, the engine's input made
  double engine_start_us = 0;   // the engine's start_copy
  double result_wait_us = 0;    // get(): waiting for the engine's output tensors
  double build_us = 0;          // get(): the Python result built around them
  double complete_wait_us = 0;  // get(): waiting for the device to finish, after the build
  // get(): earlier results' tensors released while the copy ran without the caller (see
  // deferred_release.h), and the time that took; written under the GIL.
  int64_t released_tensors = 0;
  double release_us = 0;
  // get(): earlier results' tensors released at once, after the build, to keep this result's
  // within the bounds: a cost the waits did not absorb.
  int64_t released_to_keep = 0;
};

class AsyncCopyHandle {
 public:
  AsyncCopyHandle(std::unique_ptr<PyStructure> structure, CopyHandle handle, c10::Device target,
                  const CopyOptions& options, const ModuleTimes& times);
  // Owns the copy's completion, like CopyHandle.
  AsyncCopyHandle(const AsyncCopyHandle&) = delete;
  AsyncCopyHandle& operator=(const AsyncCopyHandle&) = delete;
  // Waits for an unfinished copy's device work without the GIL (see handle.cpp).
  ~AsyncCopyHandle();

  bool ready() const { return handle_.ready(); }
  pybind11::object get();
  pybind11::dict stats() const;
  // The target and the CopyOptions this copy was given, after coercion: what reached the engine.
  pybind11::dict options() const;

 private:
  // Builds built_ around `output`; `created` gets its new tensor objects. The GIL must be held.
  void build(c10::IValue output, NewTensors& created);
  // A wait of get() used to release earlier results' kept tensors (deferred_release.h).
  struct ReleaseWindow {
    size_t released = 0;
    bool wanted_more = false;  // it ran out of tensors to release before the wait ended
  };
  // Releases kept tensors, `slice` at a time, while `waiting()` says the copy still runs without
  // the caller; the GIL must be held.
  template <typename Waiting>
  ReleaseWindow release_kept_while(size_t slice, Waiting waiting);
  // Tells the deferred release how get()'s waits went, and keeps the new result's tensors.
  void keep(const NewTensors& created, ReleaseWindow waits);

  std::unique_ptr<PyStructure> structure_;
  CopyHandle handle_;
  c10::Device target_;
  CopyOptions options_;
  ModuleTimes times_;  // the get() parts written under get_mutex_, read once ready
  std::mutex get_mutex_;
  pybind11::object built_;   // the result, built before the device has finished; get_mutex_
  pybind11::object result_;  // built_ once the copy has completed
};

// Walks `data` and starts the engine's copy; an invalid argument is the engine's ValueError.
std::unique_ptr<AsyncCopyHandle> start(pybind11::handle data, const c10::Device& target,
                                       const CopyOptions& options);

}  // namespace mtc::python
