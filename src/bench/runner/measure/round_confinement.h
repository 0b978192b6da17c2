// --round-cpus: every thread of the process confined to a few CPUs drawn anew for each round of
// each case (round_order.h, round_cpus). On a shared host each CPU is fast or slow of its own
// accord, changing within seconds; two builds of an A/B pair whose worker threads settled on
// different CPUs would differ by that luck for the whole process. Confined together, both
// builds' threads share the CPUs of the round, and the draw moves each round.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtc::bench {

class RoundConfinement {
 public:
  // Off when count is 0. Reads the CPUs the process may use now: the draws come from them.
  explicit RoundConfinement(int64_t count);
  RoundConfinement(const RoundConfinement&) = delete;  // gives the process its CPUs back once
  RoundConfinement& operator=(const RoundConfinement&) = delete;
  // Every thread gets the process's CPUs back (also those started while confined).
  ~RoundConfinement();

  // Confines every thread to `count` CPUs drawn from (seed, round, salt). Returns an error
  // message the first time confining fails or the process has fewer than `count` CPUs (the
  // round then runs where the threads were), else empty.
  std::string confine(uint64_t seed, uint64_t round, uint64_t salt);
  // The CPUs of the last confine(); empty when off.
  const std::vector<int>& current() const { return current_; }

 private:
  int64_t count_;
  std::vector<int> allowed_;
  std::vector<int> current_;
  bool failed_ = false;
};

}  // namespace mtc::bench
