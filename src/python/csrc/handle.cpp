#include "handle.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
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

// Marks the calling thread as the one building a handle's result until the build returns or
// fails (see AsyncCopyHandle::building_).
class Building {
 public:
  explicit Building(std::atomic<std::thread::id>& id) : id_(id) {
    id_.store(std::this_thread::get_id());
  }
  Building(const Building&) = delete;
  Building& operator=(const Building&) = delete;
  ~Building() { id_.store(std::thread::id()); }

 private:
  std::atomic<std::thread::id>& id_;
};

}  // namespace

AsyncCopyHandle::AsyncCopyHandle(std::unique_ptr<PyStructure> structure,
                                 std::shared_ptr<ReusableOutputs> reuse, CopyHandle handle,
                                 c10::Device target, const CopyOptions& options,
                                 const ModuleTimes& times)
    : structure_(std::move(structure)),
      reuse_(std::move(reuse)),
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
  if (cleared_)
    throw std::runtime_error(
        "mtc: this handle was cleared by the garbage collector, which found it unreachable");
  if (result_) return result_;
  raise_if_build_failed();
  // On the thread that builds the result, from Python code the build runs: waiting for the lock
  // that thread holds would never end.
  if (building_.load(std::memory_order_relaxed) == std::this_thread::get_id())
    throw std::runtime_error(
        "mtc: get() was called on a handle while its result is being built, from Python code "
        "that the build runs (a named tuple's constructor, a dict key's __hash__ or __eq__)");
  // The earlier results the program dropped die first: while a worker walks, stages and submits
  // this copy, the caller would only wait (a caller that finds the copy not started yet runs it
  // itself afterwards, as before). Before any lock is taken: a release may run Python code (weak
  // reference callbacks), which may call get() again.
  if (!built_) release_dropped();
  if (!built_ && !ahead_ && structure_->can_build_ahead()) {
    // Under the lock that guards the build: Python code the build runs may let another thread
    // into get(), which must not build or clear the structure meanwhile. Only tried (a thread
    // holding the lock may wait for the GIL); without it the result is built after the wait.
    const std::unique_lock<std::mutex> lock(get_mutex_, std::try_to_lock);
    if (lock.owns_lock() && !built_ && !ahead_) build_ahead();
  }
  {
    // A copy that is complete already needs no wait: no need to let go of the GIL. Only
    // tried: a thread holding the lock may be waiting for the GIL.
    const std::unique_lock<std::mutex> lock(get_mutex_, std::try_to_lock);
    if (lock.owns_lock() && handle_.ready()) {
      raise_if_build_failed();  // by another thread, since this one checked
      if (!built_) {
        const Clock::time_point start = Clock::now();
        build_once(handle_.take_result());
        times_.build_us += microseconds_since(start);
      }
      result_ = built_;
      return result_;
    }
  }
  {
    // The lock keeps two threads from taking the engine's result of one handle; it is taken
    // without the GIL, so a thread that holds the GIL never waits for it.
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(get_mutex_);
    if (!built_ && !build_error_) {
      Clock::time_point start = Clock::now();
      c10::IValue output = handle_.take_result();
      times_.result_wait_us = microseconds_since(start);
      const py::gil_scoped_acquire gil;
      start = Clock::now();
      build_once(std::move(output));
      times_.build_us += microseconds_since(start);
    }
    if (!build_error_) {
      const Clock::time_point start = Clock::now();
      handle_.wait();
      times_.complete_wait_us = microseconds_since(start);
    }
  }
  raise_if_build_failed();  // by another thread, while this one waited for the lock
  if (!result_) result_ = built_;
  return result_;
}

void AsyncCopyHandle::build_once(c10::IValue output) {
  try {
    build(std::move(output));
  } catch (py::error_already_set& e) {
    build_error_ = e.value();
    throw;
  } catch (const std::exception& e) {
    build_error_ =
        py::reinterpret_steal<py::object>(PyObject_CallFunction(PyExc_RuntimeError, "s", e.what()));
    // Out of memory even for that: the error its making raised stands for it.
    if (!build_error_) build_error_ = py::error_already_set().value();
    throw;
  }
}

void AsyncCopyHandle::raise_if_build_failed() const {
  if (!build_error_) return;
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(build_error_.ptr())), build_error_.ptr());
  throw py::error_already_set();
}

int AsyncCopyHandle::traverse(visitproc visit, void* arg) const {
  if (structure_) {
    if (const int stop = structure_->traverse(visit, arg)) return stop;
  }
  Py_VISIT(ahead_.ptr());
  Py_VISIT(built_.ptr());
  Py_VISIT(result_.ptr());
  Py_VISIT(build_error_.ptr());
  // Not ahead_created_'s tensor objects: they are offered ones (PyStructure::traverse says why).
  return 0;
}

// Each reference leaves its member before it is dropped: dropping one may run Python code,
// which must find the handle as traverse() would. A handle whose result is being built is
// reachable from that call, so the collector never gets here then; the check only makes sure.
void AsyncCopyHandle::clear() {
  if (building_.load() != std::thread::id()) return;
  cleared_ = true;
  ahead_created_.reset();  // unique_ptr::reset lets go of the pointer before deleting
  const py::object dropped[] = {std::move(ahead_), std::move(built_), std::move(result_),
                                std::move(build_error_)};
  if (structure_) structure_->drop_tape();
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
  out["recycled"] = s.recycled;
  out["queued_us"] = s.queued_us;
  out["traverse_us"] = s.traverse_us;
  out["submit_us"] = s.submit_us;
  out["outputs_us"] = s.outputs_us;
  out["feed_sleeps"] = s.feed_sleeps;
  out["feed_tail_us"] = s.feed_tail_us;
  out["split_wait_us"] = s.split_wait_us;
  out["split_queue_us"] = s.split_queue_us;
  out["split_join_us"] = s.split_join_us;
  out["split_leaf_ns"] = s.split_leaf_ns;
  out["split_stage_us"] = s.split_stage_us;
  out["allocate_us"] = s.allocate_us;
  out["driver_us"] = s.driver_us;
  py::dict module;
  module["walk_us"] = times_.walk_us;
  module["engine_start_us"] = times_.engine_start_us;
  module["result_wait_us"] = times_.result_wait_us;
  module["build_us"] = times_.build_us;
  module["complete_wait_us"] = times_.complete_wait_us;
  module["release_us"] = times_.release_us;
  module["released_tensors"] = times_.released_tensors;
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
void AsyncCopyHandle::build(c10::IValue output) {
  const Building building(building_);
  if (ahead_) {
    if (structure_->reused_every_leaf(reuse_->reused)) {
      // The engine made every output in its offered object: the result built ahead is the
      // result. Its outputs are undefined tensors; the structure's references to the objects go.
      output = c10::IValue();
      built_ = std::move(ahead_);
      structure_->clear();
      DeferredRelease::instance().keep(*ahead_created_);
      ahead_created_.reset();
      return;
    }
    ahead_ = py::object();
    ahead_created_.reset();
  }
  NewTensors created;
  static const std::vector<uint8_t> kNoneReused;
  built_ = py::reinterpret_steal<py::object>(
      structure_->rebuild(std::move(output), created, reuse_ ? reuse_->reused : kNoneReused));
  structure_->clear();
  DeferredRelease::instance().keep(created);
}

void AsyncCopyHandle::build_ahead() {
  const Building building(building_);
  const Clock::time_point start = Clock::now();
  auto created = std::make_unique<NewTensors>();
  ahead_ = py::reinterpret_steal<py::object>(structure_->build_ahead(*created));
  ahead_created_ = std::move(created);
  times_.build_us = microseconds_since(start);
}

void AsyncCopyHandle::release_dropped() {
  DeferredRelease& kept = DeferredRelease::instance();
  if (kept.kept_results() == 0) return;
  const Clock::time_point start = Clock::now();
  times_.released_tensors += static_cast<int64_t>(kept.release_dropped());
  times_.release_us += microseconds_since(start);
}

namespace {

std::atomic<bool> streamed_walk{true};

// The root of a streamed walk: a copy of `data`'s own (code run by the walk cannot change its
// size), or null when `data` is not a list, tuple or dict of at least two elements, or the copy
// runs on the calling thread (which could not put elements while it copies).
py::object streamable_root(py::handle data, const CopyOptions& options) {
  if (!streamed_walk.load(std::memory_order_relaxed) || !options.use_background_thread) return {};
  PyObject* object = data.ptr();
  PyObject* copy = nullptr;
  if (PyList_CheckExact(object) && PyList_GET_SIZE(object) >= 2) {
    copy = PyList_GetSlice(object, 0, PyList_GET_SIZE(object));
  } else if (PyTuple_CheckExact(object) && PyTuple_GET_SIZE(object) >= 2) {
    return py::reinterpret_borrow<py::object>(object);  // immutable
  } else if (PyDict_CheckExact(object) && PyDict_GET_SIZE(object) >= 2) {
    copy = PyDict_Copy(object);
  } else {
    return {};
  }
  if (copy == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(copy);
}

Py_ssize_t root_size(PyObject* root) {
  if (PyList_CheckExact(root)) return PyList_GET_SIZE(root);
  if (PyTuple_CheckExact(root)) return PyTuple_GET_SIZE(root);
  return PyDict_GET_SIZE(root);
}

}  // namespace

bool set_streamed_walk(bool enabled) { return streamed_walk.exchange(enabled); }

std::unique_ptr<AsyncCopyHandle> start(py::handle data, const c10::Device& target,
                                       const CopyOptions& options) {
  ModuleTimes times;
  const Clock::time_point start_time = Clock::now();
  const LendingRule lending = LendingRule::for_copy(target, options);
  const py::object root = streamable_root(data, options);
  if (root) {
    // The engine starts first and copies each root element as soon as the walk has put it:
    // its workers walk the first elements while this thread walks the others.
    auto structure = std::make_unique<PyStructure>(lending);
    const auto elements = static_cast<size_t>(root_size(root.ptr()));
    // Offered by position before the walk, which then drops those the engine will not pack
    // (none is packed without lending: nothing is offered then).
    const std::shared_ptr<ReusableOutputs> reuse = structure->offer_outputs_by_position(
        lending.enabled ? DeferredRelease::instance().take_all_reusable()
                        : std::vector<PyObject*>(),
        elements);
    auto feed = std::make_shared<RootFeed>(static_cast<int64_t>(elements));
    const Clock::time_point engine_start = Clock::now();
    CopyHandle handle = start_copy(feed, target, options, reuse);
    times.engine_start_us = microseconds_since(engine_start);
    try {
      structure->walk_into(root.ptr(), *feed, reuse.get());
    } catch (...) {
      // The copy fails without its elements (the walk abandoned the feed); its handle goes
      // first, without the GIL (see ~AsyncCopyHandle), and then the structure takes its lent
      // tensors back.
      {
        py::gil_scoped_release release;
        handle = CopyHandle();
      }
      structure.reset();
      throw;
    }
    // The offers and the walk, as for a structure walked whole.
    times.walk_us = microseconds_since(start_time) - times.engine_start_us;
    return std::make_unique<AsyncCopyHandle>(std::move(structure), reuse, std::move(handle), target,
                                             options, times);
  }
  auto structure = std::make_unique<PyStructure>(data.ptr(), lending);
  // Tensor objects of dropped results, offered as the outputs of the leaves the engine packs:
  // each one it reuses is neither released nor made anew (deferred_release.h).
  const std::shared_ptr<ReusableOutputs> reuse =
      structure->offer_outputs(DeferredRelease::instance().take_reusable(structure->lent_leaves()));
  c10::IValue input = structure->take_engine_input();
  times.walk_us = microseconds_since(start_time);
  const Clock::time_point engine_start = Clock::now();
  CopyHandle handle;
  if (options.use_background_thread) {
    // Only validation and a hand-off: keeping the GIL is cheaper than taking it back.
    handle = start_copy(input, target, options, reuse);
  } else {
    py::gil_scoped_release release;
    handle = start_copy(input, target, options, reuse);
  }
  times.engine_start_us = microseconds_since(engine_start);
  return std::make_unique<AsyncCopyHandle>(std::move(structure), reuse, std::move(handle), target,
                                           options, times);
}

}  // namespace mtc::python
