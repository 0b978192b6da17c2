// The order in which a round runs its cases: a permutation drawn from the run's seed, the
// round's number and a salt (the direction and pattern), so drift and host noise fall on every
// strategy alike and a rerun with the same seed runs the same order. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mtc::bench {

// A permutation of 0..count-1. Fisher-Yates over a SplitMix64 stream: its own generator, so the
// order does not depend on the standard library's shuffle.
std::vector<size_t> round_order(size_t count, uint64_t seed, uint64_t round, uint64_t salt);

// Which of two cases measured sample by sample goes first at each step of a round: a fair coin
// per step from the same stream, so neither build always runs right after the other (the first
// of a pair can warm or cool what the second finds) and a rerun with the seed repeats it.
class PairOrder {
 public:
  PairOrder(uint64_t seed, uint64_t round, uint64_t salt);
  // True when the first case (A) goes first at the next step.
  bool a_first();

 private:
  uint64_t state_;
};

}  // namespace mtc::bench
