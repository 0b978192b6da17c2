#include "finished_copies.h"

#include <type_traits>
#include <utility>

namespace mtc::python {

static_assert(std::is_nothrow_move_constructible_v<FinishedCopies::Remains>);

FinishedCopies& FinishedCopies::instance() {
  static auto* const kept = new FinishedCopies();  // never destroyed: see the header
  return *kept;
}

bool FinishedCopies::set_enabled(bool enabled) {
  const bool previous = enabled_;
  enabled_ = enabled;
  if (!enabled) release_all();
  return previous;
}

bool FinishedCopies::keep(Remains& remains) noexcept {
  if (!enabled_) return false;
  try {
    kept_.push_back(std::move(remains));  // no effect if it throws: the moves cannot
  } catch (...) {                         // no memory: the program's `del` pays, as without this
    return false;
  }
  release_oldest(kMaxKept);
  return true;
}

size_t FinishedCopies::release_all() { return release_oldest(0); }

size_t FinishedCopies::release_oldest(size_t leave) noexcept {
  size_t released = 0;
  while (kept_.size() > leave) {
    // Out of kept_ before it is destroyed: its destruction may run Python code that calls back
    // into this class.
    const Remains oldest = std::move(kept_.front());
    kept_.pop_front();
    ++released;
  }
  return released;
}

}  // namespace mtc::python
