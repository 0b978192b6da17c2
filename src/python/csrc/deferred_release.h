// The new tensors of the last results, kept alive by the module after the program drops them, so
// that they die inside the next get() while the engine's workers make that copy's outputs,
// instead of in the program's own code, after get() returned.
//
// Why: dropping a result of 528 small tensors costs ~90-120 us on the GPU host, nearly all of it
// torch's teardown of the tensor objects. A training loop drops the previous batch, copies the
// next and waits for it: the two come one after the other. Released inside the next get()
// before it waits, the teardown runs while a worker walks, stages and submits.
//
// Which results die where:
// - `out = mtc.start_copy(batch, dev).get()` in a loop (the original package's evaluation): the
//   previous result is still bound to `out` during get() and only dropped after it. So the
//   last two results are kept; a get() releases the older one, which the program dropped after
//   the last get() returned.
// - `out = None` before the copy (a step that frees its batch first): the newest kept result is
//   dropped too; a get() releases it as well when its first tensor has no other reference than
//   the module's.
// A tensor the program still holds is only referenced once less when its result is released.
//
// What a program sees: after `del result`, up to two results' tensors live on until a later
// get(), release_all() or the interpreter's exit (their memory stays allocated; weak references
// fire later). Only results of at least kMinTensors new tensors and at most kMaxResultBytes are
// kept. The GIL guards everything here.
#pragma once

#include <torch/csrc/python_headers.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace mtc::python {

// One tensor object a rebuild created: an owned reference, its tensor leaf (in pre-order) and its
// bytes.
struct KeptTensor {
  PyObject* object;
  size_t leaf;
  int64_t bytes;
};

// The tensor objects a rebuild created and their bytes: what may be kept. Holds a reference to
// each (Python code that runs in the rebuild, a named tuple's constructor, may drop the result's);
// dropped when it is destroyed, which must be with the GIL, unless keep() took them.
struct NewTensors {
  NewTensors() = default;
  NewTensors(const NewTensors&) = delete;  // owns references
  NewTensors& operator=(const NewTensors&) = delete;
  ~NewTensors() {
    for (const KeptTensor& tensor : tensors) Py_DECREF(tensor.object);
  }
  // `object` is the output of tensor leaf `leaf` (in pre-order).
  void add(PyObject* object, int64_t object_bytes, size_t leaf) {
    tensors.push_back({object, leaf, object_bytes});  // may throw: nothing has changed yet
    Py_INCREF(object);
    bytes += object_bytes;
  }

  std::vector<KeptTensor> tensors;  // leaves returned as they are have no entry
  int64_t bytes = 0;
};

class DeferredRelease {
 public:
  // A result of fewer tensors costs a few microseconds to drop where the program drops it.
  static constexpr size_t kMinTensors = 16;
  // Larger results are memory a program expects back at `del`; their tensors are few per byte,
  // so dropping them is cheap anyway.
  static constexpr int64_t kMaxResultBytes = int64_t{16} << 20;
  // The result the program may still hold (bound to the name the new one replaces) and one more.
  static constexpr size_t kMaxResults = 2;

  // The process's one instance. Never destroyed: a Py_DECREF after the interpreter has finalized
  // would crash, so mtc/_deferred.py releases what is kept when the interpreter exits.
  static DeferredRelease& instance();

  bool enabled() const { return enabled_; }
  // Off releases everything kept at once. Returns the previous setting.
  bool set_enabled(bool enabled);
  // Whether take_reusable() hands out anything (on by default). Returns the previous setting.
  bool reuse_enabled() const { return reuse_enabled_; }
  bool set_reuse_enabled(bool enabled);

  // The tensor objects of the oldest dropped result (one release_dropped() would release) that
  // may become the outputs of a new copy's leaves (mtc::ReusableOutputs), as owned references by
  // leaf: the output of that result's leaf k for the new leaf k, where wanted[k] and the object
  // qualifies (only the module references it, a torch.Tensor exactly, with no hook, weak
  // reference or attribute of its own), else null; empty when none. The engine checks their
  // TensorImpls. The result keeps the others, for the next release.
  std::vector<PyObject*> take_reusable(const std::vector<bool>& wanted);
  // take_reusable() with every leaf of that result wanted, for a copy that offers by position
  // before its walk knows its leaves.
  std::vector<PyObject*> take_all_reusable();

  // Before a copy's wait: releases every kept result but the newest, and the newest too when the
  // program has dropped it. Returns how many tensor references were dropped.
  size_t release_dropped();
  // Takes over the references to a result's new tensors, within the bounds above (outside them,
  // `tensors` keeps them); a result beyond kMaxResults releases the oldest.
  void keep(NewTensors& tensors);
  // Releases everything kept; returns how many tensor references that was.
  size_t release_all();

  size_t kept_results() const { return results_.size(); }
  size_t kept_tensors() const;
  int64_t kept_bytes() const;

 private:
  DeferredRelease() = default;
  struct Result {
    std::vector<KeptTensor> tensors;
    int64_t bytes;  // of the tensors it still holds
  };
  // A release may run Python code (weak reference callbacks) that calls back into this class:
  // the results leave results_ (take_oldest) before any reference is dropped.
  static size_t release(std::vector<Result> results);
  // Moves the oldest results out of results_ until at most `leave` remain.
  std::vector<Result> take_oldest(size_t leave);

  // How many results release_dropped() would release: all but the newest, and the newest too
  // once the program has dropped it (only the module references its first tensor).
  size_t dropped_results() const;

  bool enabled_ = true;
  bool reuse_enabled_ = true;
  std::deque<Result> results_;  // oldest first
};

}  // namespace mtc::python
