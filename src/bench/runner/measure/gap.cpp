#include "runner/measure/gap.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "runner/measure/clock.h"
#include "runner/measure/interrupt.h"

namespace mtc::bench {
namespace {

constexpr int64_t kLine = 64;             // one write per cache line
constexpr int64_t kBetweenChecks = 4096;  // bytes touched between two looks at the clock
// A long sleeping gap is slept in slices this long, so that Ctrl-C ends it (a step's gap of a few
// milliseconds is one sleep, as before).
constexpr double kLongestSleepSlice = 0.1;

// The thread's busy-gap buffer and where its next pass goes on, so that passes sweep all of it.
struct TouchBuffer {
  std::unique_ptr<unsigned char[]> bytes;
  int64_t size = 0;
  int64_t next = 0;
};

TouchBuffer& thread_buffer(int64_t size) {
  thread_local TouchBuffer buffer;
  if (buffer.size < size) {
    buffer.bytes = std::make_unique<unsigned char[]>(static_cast<size_t>(size));
    buffer.size = size;
    buffer.next = 0;
  }
  return buffer;
}

}  // namespace

std::string_view to_string(GapMode mode) { return mode == GapMode::kBusy ? "busy" : "sleep"; }

std::optional<GapMode> parse_gap_mode(std::string_view name) {
  if (name == "sleep") return GapMode::kSleep;
  if (name == "busy") return GapMode::kBusy;
  return std::nullopt;
}

GapMode gap_mode_of(Pattern pattern) {
  return pattern == Pattern::kStepBusy ? GapMode::kBusy : GapMode::kSleep;
}

Gap::Gap(GapMode mode, int64_t touch_bytes)
    : mode_(mode), touch_bytes_(touch_bytes < kLine ? kLine : touch_bytes) {}

int64_t Gap::pass(double seconds) const {
  if (mode_ == GapMode::kSleep) {
    for (double left = seconds; left > 0.0 && !interrupted(); left -= kLongestSleepSlice) {
      std::this_thread::sleep_for(
          std::chrono::duration<double>(std::min(left, kLongestSleepSlice)));
    }
    return 0;
  }
  TouchBuffer& buffer = thread_buffer(touch_bytes_);
  // Reads and writes a line at a time: the buffer's lines displace what the copy left in the
  // caches, as the caller's own work between two steps would.
  const auto deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                 std::chrono::duration<double>(seconds));
  volatile unsigned char* bytes = buffer.bytes.get();
  int64_t touched = 0;
  do {
    for (int64_t i = 0; i < kBetweenChecks; i += kLine) {
      bytes[buffer.next] = static_cast<unsigned char>(bytes[buffer.next] + 1);
      buffer.next += kLine;
      if (buffer.next >= touch_bytes_) buffer.next = 0;
    }
    touched += kBetweenChecks;
  } while (SteadyClock::now() < deadline && !interrupted());
  return touched;
}

}  // namespace mtc::bench
