// What a finished copy's handle still holds when the program drops it, kept so that it dies inside
// the next get() instead of at the `del`. An experiment behind a switch, mtc._C._set_keep_finished,
// off by default until an in-process A/B on a GPU host says whether it pays (a tree with it on
// against one with it off: scripts/gpu-check.sh's python mode with MTC_AB_BASE).
//
// Why: dropping a finished handle costs ~21 us back to back and ~29 us in a training step for the
// 528-tensor reference batch (1 x NVIDIA H100, 2026-12-07): the engine's job torn down, the input
// tensors the walk lent to the engine given back, one reference to each input container, key and
// tensor object dropped. `out = mtc.start_copy(batch, dev).get()` drops the handle right after
// get() returns, on the program's own time; inside the next get(), before it waits for the
// engine's outputs, the same work could run while the engine's workers walk.
//
// What a program sees with it on: after `del handle`, the last finished copy's input objects keep
// one more reference until a later get(), mtc.release_deferred() or the interpreter's exit. A
// handle dropped before its copy finished is destroyed as before (its wait is the engine's rule).
// The GIL guards everything here.
#pragma once

#include <mtc/copier.h>

#include <cstddef>
#include <deque>
#include <memory>

#include "py_structure.h"

namespace mtc::python {

class FinishedCopies {
 public:
  // Two: a program with two copies in flight drops two finished handles between its get()s.
  static constexpr size_t kMaxKept = 2;

  // What one finished handle held. Members in this order so that the engine's job dies first, as
  // in AsyncCopyHandle: the engine is done with its input before the structure takes back the
  // tensors it lent.
  struct Remains {
    std::unique_ptr<PyStructure> structure;
    std::shared_ptr<ReusableOutputs> reuse;
    CopyHandle handle;
  };

  // The process's one instance. Never destroyed: a Py_DECREF after the interpreter has finalized
  // would crash, so mtc/_deferred.py releases what is kept when the interpreter exits.
  static FinishedCopies& instance();

  bool enabled() const { return enabled_; }
  // Off releases everything kept at once. Returns the previous setting.
  bool set_enabled(bool enabled);

  // Takes over `remains` of a finished copy; beyond kMaxKept, the oldest are released. Returns
  // false (and leaves `remains` as it was) when it is off or has no memory for it.
  bool keep(Remains& remains) noexcept;
  // Releases everything kept; returns how many copies' remains that was.
  size_t release_all();

  size_t kept() const { return kept_.size(); }

 private:
  FinishedCopies() = default;
  // Destroys the oldest remains until at most `leave` are kept; returns how many it destroyed.
  size_t release_oldest(size_t leave) noexcept;

  bool enabled_ = false;
  std::deque<Remains> kept_;  // oldest first
};

}  // namespace mtc::python
