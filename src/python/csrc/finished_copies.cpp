#include "finished_copies.h"

#include <utility>

namespace mtc::python {

FinishedCopies& FinishedCopies::instance() {
  static auto* const copies = new FinishedCopies();  // never destroyed: see the header
  return *copies;
}

bool FinishedCopies::set_enabled(bool enabled) {
  const bool previous = enabled_;
  enabled_ = enabled;
  if (!enabled) tear_down();
  return previous;
}

void FinishedCopies::keep(std::unique_ptr<PyStructure> structure,
                          std::shared_ptr<ReusableOutputs> reuse, CopyHandle handle) noexcept {
  tear_down();
  kept_.emplace(Parts{std::move(handle), std::move(reuse), std::move(structure)});
}

bool FinishedCopies::tear_down() noexcept {
  if (!kept_) return false;
  // Out of kept_ before anything is destroyed: letting go of Python objects may run Python code,
  // which may drop another handle and keep its copy here.
  Parts parts = std::move(*kept_);
  kept_.reset();
  parts.handle = CopyHandle();
  parts.reuse.reset();
  parts.structure.reset();
  return true;
}

}  // namespace mtc::python
