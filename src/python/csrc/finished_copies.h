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
// mtc.release_deferred() or the interpreter's exit (the packed ones only, the engine's small
// leaves). An unfinished or failed copy's handle is torn down where it is dropped, as before. The
// GIL guards everything here.
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
  bool enabled_ = false;
  std::optional<Parts> kept_;
};

}  // namespace mtc::python
