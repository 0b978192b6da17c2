// A process-wide on/off setting of the engine's, on by default. Benchmarks and tests set it
// directly; the environment's value (read when the worker pools are first made,
// worker_pool_set.h) takes effect only if nothing set it before, so that a benchmark's setting
// made ahead of the first copy is not overwritten by the variable's default.
#pragma once

#include <atomic>

namespace mtc::detail {

class ProcessSwitch {
 public:
  void set(bool on) { state_.store(on ? 1 : 0, std::memory_order_relaxed); }
  void set_from_environment(bool on) {
    int unset = kUnset;
    state_.compare_exchange_strong(unset, on ? 1 : 0, std::memory_order_relaxed);
  }
  bool on() const { return state_.load(std::memory_order_relaxed) != 0; }

 private:
  static constexpr int kUnset = -1;  // neither set: on
  std::atomic<int> state_{kUnset};
};

}  // namespace mtc::detail
