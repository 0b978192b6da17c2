// The clocks a sample reads. Header-only: called between the timestamps of every sample.
#pragma once

#include <time.h>

#include <chrono>

namespace mtc::bench {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// CPU time of every thread of the process, so the engine's workers and helpers count too.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Simulated caller work for overlap mode: keeps this thread busy (as real work would) for
// `seconds`, or until `stop()` (when given) says so; returns how long it actually ran.
inline double spin_for(double seconds, bool (*stop)() = nullptr) {
  const auto start = SteadyClock::now();
  auto now = start;
  while (seconds_between(start, now) < seconds && (stop == nullptr || !stop()))
    now = SteadyClock::now();
  return seconds_between(start, now);
}

}  // namespace mtc::bench
