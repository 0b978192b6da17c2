// AsyncCopyHandle, the pending result of one start_copy, and start() that makes one.
#pragma once

#include <c10/core/Device.h>
#include <mtc/copier.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "py_structure.h"

namespace mtc::python {

// Where the module's own time went, per call (stats()["module"]): the engine's stats say
// nothing of the walk of the Python structure or of building the result, the module's share.
struct ModuleTimes {
  double walk_us = 0;            // the Python structure taken apart, the engine's input made
  double engine_start_us = 0;    // the engine's start_copy
  double result_wait_us = 0;     // get(): waiting for the engine's output tensors
  double build_us = 0;           // get(): the Python result built around them
  double complete_wait_us = 0;   // get(): waiting for the device to finish, after the build
  double release_us = 0;         // get(): dropped earlier results' tensors released (deferred)
  int64_t released_tensors = 0;  // how many tensor references that dropped
};

class AsyncCopyHandle {
 public:
  // `reuse`: what the structure offered the engine (null when nothing).
  AsyncCopyHandle(std::unique_ptr<PyStructure> structure, std::shared_ptr<ReusableOutputs> reuse,
                  CopyHandle handle, c10::Device target, const CopyOptions& options,
                  const ModuleTimes& times);
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

  // For the garbage collector (module.cpp's type setup): an opaque leaf, a key or the result can
  // refer back to the handle. traverse() visits the Python objects the handle holds that could
  // (PyStructure::traverse); clear() drops those while the copy runs, for a handle that only a
  // cycle of garbage reaches; get() then raises. The GIL must be held.
  int traverse(visitproc visit, void* arg) const;
  void clear();

 private:
  void build(c10::IValue output);
  // build(), remembering its error: the engine's output is gone with it, so a later get() raises
  // the same error instead of failing to take an output that is no longer there. get_mutex_ held.
  void build_once(c10::IValue output);
  // Raises the error of a failed build again, if there was one; GIL held.
  void raise_if_build_failed() const;
  // The result built before the engine's outputs exist (PyStructure::can_build_ahead): the build
  // then overlaps the engine's walk instead of following it. GIL and get_mutex_ held.
  void build_ahead();
  // Earlier results' kept tensors that the program dropped (deferred_release.h); GIL held.
  void release_dropped();

  // Declared in this order so that handle_ is destroyed first: the engine is done with its
  // input (the job gone with its waits) before the structure takes back the tensors it lent.
  std::unique_ptr<PyStructure> structure_;
  std::shared_ptr<ReusableOutputs> reuse_;
  CopyHandle handle_;
  c10::Device target_;
  CopyOptions options_;
  ModuleTimes times_;  // the get() parts written under get_mutex_, read once ready
  std::mutex get_mutex_;
  pybind11::object ahead_;  // build_ahead()'s result, until the engine confirms every reuse
  std::unique_ptr<NewTensors> ahead_created_;  // its tensor objects, for DeferredRelease
  pybind11::object built_;   // the result, built before the device has finished; get_mutex_
  pybind11::object result_;  // built_ once the copy has completed
  // The exception a failed build() raised: set with the GIL and get_mutex_ held, so either
  // guards a test of whether it is set.
  pybind11::object build_error_;
  // The thread building the result, while it does (Python code that the build runs, a named
  // tuple's constructor or a key's __hash__, could call get() on this handle from it).
  std::atomic<std::thread::id> building_{};
  bool cleared_ = false;  // by the garbage collector; the GIL guards it
};

// Walks `data` and starts the engine's copy; an invalid argument is the engine's ValueError.
// A list, tuple or dict root of two or more elements, copied by the workers (the default), is
// walked into the copy element by element (PyStructure::walk_into): the engine starts first.
std::unique_ptr<AsyncCopyHandle> start(pybind11::handle data, const c10::Device& target,
                                       const CopyOptions& options);
// Turns that streamed walk on (the default) or off, for every later copy; returns the previous
// setting. Off, the whole structure is walked before the engine starts.
bool set_streamed_walk(bool enabled);

}  // namespace mtc::python
