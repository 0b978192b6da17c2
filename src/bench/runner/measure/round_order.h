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
// The CPUs a round runs on with --round-cpus: `count` distinct members of `allowed`, drawn from the
// same stream as the round's order (a salt of their own). Confining every thread of the process
// to the same few CPUs for a round puts both builds of an A/B pair on the same CPUs: on a shared
// host each CPU is fast or slow of its own accord, and a build whose workers happened to settle
// on a slow one would carry that for the whole process. Drawn anew each round, the CPUs' luck
// falls on the rounds, where the interval sees it. All of `allowed` when count >= its size.
std::vector<int> round_cpus(const std::vector<int>& allowed, size_t count, uint64_t seed,
                            uint64_t round, uint64_t salt);

class PairOrder {
 public:
  PairOrder(uint64_t seed, uint64_t round, uint64_t salt);
  // True when the first case (A) goes first at the next step.
  bool a_first();

 private:
  uint64_t state_;
};

}  // namespace mtc::bench
