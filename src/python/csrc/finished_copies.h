// The parts of a finished copy whose handle the program dropped (its engine job, its offers and
// its input taken apart) torn down in the next get(), while the engine's workers make that copy,
// instead of where the handle is dropped.
//
// Why: dropping a handle costs 15-20 us on the GPU host, none of it waiting: the engine's job
// destroyed, the lent input tensors taken back and their Python objects let go of. A loop drops
// the handle right after get() returns (`out = mtc.start_copy(...).get()`), where nothing else
// runs beside it, while the next get() waits tens of microseconds for the engine with nothing to
// do.
//
// What a program sees: the input tensors of the last copy stay referenced until the next get(),
// mtc.release_deferred() or the interpreter's exit; so does the device memory of the outputs
// whose tensor objects that copy reused (deferred_release.h). Only copies of at most
// DeferredRelease::kMaxResultBytes are kept: larger inputs are memory a program expects back.
// Nor are copies that returned a leaf as it is (every copy to the CPU of CPU tensors): the job
// holds that leaf, which is the result's, and would keep the result alive after its drop. An
// unfinished or failed copy's handle is torn down where it is dropped, as before. On by default;
// mtc.set_deferred_release(False) (or MTC_DEFER_RELEASE=0) turns it off with the deferred release
// of results. The GIL guards everything here.
#pragma once

#include <mtc/copier.h>

#include <memory>
#include <optional>

#include "py_structure.h"

namespace mtc::python {

class FinishedCopies {
 public:
  // The process's one instance, never destroyed (mtc/_deferred.py tears down what it keeps at
  // the interpreter's exit).
  static FinishedCopies& instance();

  bool enabled() const { return enabled_; }
  // Off tears down what is kept. Returns the previous setting.
  bool set_enabled(bool enabled);

  // Takes over a finished copy's parts; a copy kept before is torn down first, here. Never
  // throws (handles' destructors call it).
  void keep(std::unique_ptr<PyStructure> structure, std::shared_ptr<ReusableOutputs> reuse,
            CopyHandle handle) noexcept;
  // Tears down what is kept; returns whether anything was.
  bool tear_down() noexcept;

 private:
  FinishedCopies() = default;
  // Destroyed in this order: the engine's job first, which must be done with its input before
  // the structure takes back the tensors it lent (AsyncCopyHandle's own order).
  struct Parts {
    CopyHandle handle;
    std::shared_ptr<ReusableOutputs> reuse;
    std::unique_ptr<PyStructure> structure;
  };
  bool enabled_ = true;
  std::optional<Parts> kept_;
};

}  // namespace mtc::python
