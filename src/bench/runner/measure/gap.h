// The idle gap of the step patterns: what the caller does between two copies of a training
// step, outside the clock. Two models of a training loop:
//   sleep  the caller sleeps (pattern `step`); its CPU may idle or run other tenants, and the
//          copy that follows starts from cold caches on a CPU that has to wake up.
//   busy   the caller keeps its CPU busy touching a buffer larger than the last-level cache
//          (pattern `step-busy`: its forward pass): the CPU stays awake, and the copy finds the
//          caches holding other data.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "types.h"

namespace mtc::bench {

enum class GapMode { kSleep, kBusy };

std::string_view to_string(GapMode mode);
std::optional<GapMode> parse_gap_mode(std::string_view name);
// The gap a step pattern's caller has: busy for step-busy, else sleep.
GapMode gap_mode_of(Pattern pattern);

class Gap {
 public:
  // touch_bytes: the busy gap's buffer, one per thread (allocated on its first busy pass there,
  // grown when a later gap asks for more), shared by every case that thread measures.
  Gap(GapMode mode, int64_t touch_bytes);

  // Lets `seconds` pass the way the mode says. A busy gap returns the bytes it touched (for the
  // tests); a sleep returns 0.
  int64_t pass(double seconds) const;
  GapMode mode() const { return mode_; }

 private:
  GapMode mode_;
  int64_t touch_bytes_;
};

}  // namespace mtc::bench
