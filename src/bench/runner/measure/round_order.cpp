#include "runner/measure/round_order.h"

#include <numeric>
#include <utility>

namespace mtc::bench {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Mixes the round and salt through the generator so nearby rounds give unrelated orders.
uint64_t mixed_state(uint64_t seed, uint64_t round, uint64_t salt) {
  uint64_t state = seed;
  state ^= splitmix64(state) ^ round;
  state ^= splitmix64(state) ^ salt;
  return state;
}

}  // namespace

std::vector<size_t> round_order(size_t count, uint64_t seed, uint64_t round, uint64_t salt) {
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  uint64_t state = mixed_state(seed, round, salt);
  for (size_t i = count; i > 1; --i) {
    const size_t j = static_cast<size_t>(splitmix64(state) % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

std::vector<int> round_cpus(const std::vector<int>& allowed, size_t count, uint64_t seed,
                            uint64_t round, uint64_t salt) {
  std::vector<int> cpus = allowed;
  if (count >= cpus.size()) return cpus;
  uint64_t state = mixed_state(seed, round, salt ^ 0x4350555300000000ULL);
  // The first `count` steps of a Fisher-Yates shuffle: a uniform draw without repeats.
  for (size_t i = 0; i < count; ++i) {
    const size_t j = i + static_cast<size_t>(splitmix64(state) % (cpus.size() - i));
    std::swap(cpus[i], cpus[j]);
  }
  cpus.resize(count);
  return cpus;
}

// A salt of its own, so the coin stream differs from the shuffle of the same round.
PairOrder::PairOrder(uint64_t seed, uint64_t round, uint64_t salt)
    : state_(mixed_state(seed, round, salt ^ 0x5041495245440000ULL)) {}

bool PairOrder::a_first() { return (splitmix64(state_) >> 63) != 0; }

}  // namespace mtc::bench
