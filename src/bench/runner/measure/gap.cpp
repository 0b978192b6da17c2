#include "runner/measure/gap.h"

#include "runner/measure/clock.h"

#include <chrono>
#include <thread>

namespace mtc::bench {
namespace {

constexpr int64_t kLine = 64;          // one write per cache line
constexpr int64_t kBetweenChecks = 4096;  // bytes touched between two looks at the clock

}  // namespace

std::string_view to_string(GapMode mode) { return mode == GapMode::kBusy ? "busy" : "sleep"; }

std::optional<GapMode> parse_gap_mode(std::string_view name) {
  if (name == "sleep") return GapMode::kSleep;
  if (name == "busy") return GapMode::kBusy;
  return std::nullopt;
}

Gap::Gap(GapMode mode, int64_t touch_bytes) : mode_(mode), touch_bytes_(touch_bytes < kLine ? kLine : touch_bytes) {}

Gap::~Gap() = default;

int64_t Gap::pass(double seconds) {
  if (mode_ == GapMode::kSleep) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return 0;
  }
  if (!buffer_) buffer_ = std::make_unique<unsigned char[]>(static_cast<size_t>(touch_bytes_));
  // Reads and writes every line: the buffer's lines displace what the copy left in the caches,
  // as the caller's own work between two steps would.
  const auto deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                 std::chrono::duration<double>(seconds));
  int64_t touched = 0;
  volatile unsigned char* bytes = buffer_.get();
  do {
    for (int64_t i = 0; i < kBetweenChecks; i += kLine) {
      bytes[next_] = static_cast<unsigned char>(bytes[next_] + 1);
      next_ += kLine;
      if (next_ >= touch_bytes_) next_ = 0;
    }
    touched += kBetweenChecks;
  } while (SteadyClock::now() < deadline);
  return touched;
}

}  // namespace mtc::bench
