#include "runner/measure/round_confinement.h"

#include <fmt/format.h>

#include "runner/env/host_state.h"
#include "runner/measure/round_order.h"

namespace mtc::bench {

RoundConfinement::RoundConfinement(int64_t count)
    : count_(count), allowed_(count > 0 ? process_affinity() : std::vector<int>{}) {}

RoundConfinement::~RoundConfinement() {
  if (!current_.empty()) pin_process_to(allowed_);
}

std::string RoundConfinement::confine(uint64_t seed, uint64_t round, uint64_t salt) {
  if (count_ <= 0 || allowed_.empty()) return {};
  // Fewer CPUs than asked for (the command line checks the machine; --pin-cpu may leave fewer):
  // the rounds run on all of them, which the report must say rather than claim a confinement.
  if (static_cast<size_t>(count_) > allowed_.size()) {
    if (failed_) return {};
    failed_ = true;
    return fmt::format("--round-cpus {}: only {} CPU{} to draw from; rounds ran on all of them",
                       count_, allowed_.size(), allowed_.size() == 1 ? "" : "s");
  }
  std::vector<int> cpus = round_cpus(allowed_, static_cast<size_t>(count_), seed, round, salt);
  const std::string error = pin_process_to(cpus);
  current_ = std::move(cpus);
  if (error.empty() || failed_) return {};
  failed_ = true;
  return fmt::format("--round-cpus {}: {}; rounds ran where the threads were", count_, error);
}

}  // namespace mtc::bench
