// The idle gap of the step pattern: what the caller does between two copies of a training step,
// outside the clock. Two models of a training loop:
//   sleep  the caller sleeps; its CPU may idle or run other tenants, and the copy that follows
//          starts from cold caches and a CPU that has to wake up.
//   busy   the caller keeps its CPU busy touching a buffer larger than the last-level cache (its
//          forward pass): the CPU stays awake, and the copy finds the caches holding other data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace mtc::bench {

enum class GapMode { kSleep, kBusy };

std::string_view to_string(GapMode mode);
std::optional<GapMode> parse_gap_mode(std::string_view name);

// The default buffer of a busy gap: larger than the last-level cache of the GPU hosts' CPUs.
inline constexpr int64_t kDefaultGapTouchBytes = int64_t{32} << 20;

class Gap {
 public:
  // touch_bytes: the busy gap's buffer (allocated on its first busy pass, then reused).
  Gap(GapMode mode, int64_t touch_bytes);
  Gap(const Gap&) = delete;  // owns the buffer
  Gap& operator=(const Gap&) = delete;
  ~Gap();

  // Lets `seconds` pass the way the mode says. A busy gap returns the bytes it touched (for the
  // tests); a sleep returns 0.
  int64_t pass(double seconds);
  GapMode mode() const { return mode_; }

 private:
  GapMode mode_;
  int64_t touch_bytes_;
  std::unique_ptr<unsigned char[]> buffer_;
  int64_t next_ = 0;  // where the next busy pass goes on, so passes sweep the whole buffer
};

}  // namespace mtc::bench
