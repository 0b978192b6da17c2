// The new tensors of recent results, kept alive by the module after the program drops them, so
// that they die while the next copy's workers walk its structure instead of inside the
// program's own `del`.
//
// Why: a result of 528 small tensors costs ~100 us to drop from Python, nearly all of it
// torch's teardown of 528 tensor objects (~0.2 us each; measured on the CPU machine, see
// results/notes). A training step drops the previous batch just before copying the next one,
// and then waits for the engine's workers for about as long: the caller is idle there (or helps
// with the walk, which the workers do without it). So the module holds one reference to each
// new tensor object of a result, and AsyncCopyHandle::get() releases them, oldest first, while
// CopyHandle::preparing() says a worker is still making the next outputs.
//
// How many to keep is learned: the tensors a get() released while it waited set how many are
// kept for the next one, those still kept from earlier results included (at least kProbe, so
// that a wait that opens is seen; twice as many when a wait ran out of tensors to release). In a
// loop whose caller runs each copy itself (its workers asleep, as in a tight loop from Python)
// there is no such wait, and a result's tensors beyond the probe die where the program drops them,
// as without this.
//
// What a program sees: after `del result`, the kept tensors of a result live on until a later
// get() or release_all() (their memory stays allocated; weak references fire later). Bounds
// keep that small: only results of at least kMinTensors new tensors and at most kMaxResultBytes
// are kept from, and at most kMaxResults of them; a further one releases the oldest at once.
// Tensors the program still holds are only referenced once more: they die when both the program
// and the module have let go.
//
// The GIL guards everything here.
#pragma once

#include <torch/csrc/python_headers.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace mtc::python {

// The tensor objects a rebuild created, and their bytes: what may be kept.
struct NewTensors {
  std::vector<PyObject*> objects;  // borrowed: the result owns them
  std::vector<int64_t> bytes;      // of each object
  int64_t total_bytes = 0;
};

class DeferredRelease {
 public:
  // Results with fewer new tensors cost little to drop where the program drops them.
  static constexpr size_t kMinTensors = 16;
  // Larger results are memory that a program expects back at `del`; their tensors are few per
  // byte, so their release is cheap anyway.
  static constexpr int64_t kMaxResultBytes = int64_t{16} << 20;
  // A copy's wait releases about one result of the reference batch's size; more kept results
  // would only hold memory longer.
  static constexpr size_t kMaxResults = 2;
  // The fewest tensors of a result kept: a few microseconds of teardown.
  static constexpr size_t kProbe = 16;

  // The process's one instance. Never destroyed: a Py_DECREF after the interpreter has finalized
  // would crash, so mtc/__init__.py releases what is kept when the interpreter exits.
  static DeferredRelease& instance();

  bool enabled() const { return enabled_; }
  // Off releases everything kept at once. On by default (MTC_DEFER_RELEASE, read by mtc).
  void set_enabled(bool enabled);

  // Takes a reference to a result's first new tensor objects, as many as budget() leaves room
  // for beside those kept already, within the bounds above. Returns how many objects of the
  // oldest results it released to stay within kMaxResults.
  size_t keep(const NewTensors& tensors);
  // After a get(): it released `released` tensors while it waited, and `wanted_more` says
  // whether its wait ran out of tensors to release. Sets budget().
  void learn(size_t released, bool wanted_more);
  // How many tensors a get()'s waits are expected to release: the most kept at once.
  size_t budget() const { return budget_; }
  // Releases up to `count` objects, oldest first; returns whether any are left.
  bool release_some(size_t count);
  // Releases everything kept; returns how many objects that was.
  size_t release_all();

  size_t kept_tensors() const { return objects_.size(); }
  // Of the results with a tensor still kept, counted whole.
  int64_t kept_bytes() const;

 private:
  DeferredRelease() = default;
  // A release may run Python code (weak reference callbacks) that calls back into this class:
  // each object leaves the queues before its reference is dropped.
  void release_front();

  struct Result {
    size_t tensors;  // of objects_, from the front, still kept
    int64_t bytes;
  };
  bool enabled_ = true;
  size_t budget_ = kProbe;
  std::deque<PyObject*> objects_;  // owned references, oldest result first
  std::deque<Result> results_;
};

}  // namespace mtc::python
