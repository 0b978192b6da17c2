// Which GPUs copy in each run of a several-GPU measurement: every GPU, or one GPU alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace mtc::microbench {

// Draws in cycles of 2 x gpus runs: `gpus` runs of every GPU and one run of each GPU alone, in a
// random order. Each kind, and each GPU alone, then gets an equal share of the runs, spread over
// the whole measurement (a free draw per run left one GPU with 6 runs alone and another with 14
// in 2,000 copies), while the order stays unpredictable to anything that adapts to it.
class AloneDraw {
 public:
  AloneDraw(int gpus, uint64_t seed) : rng_(seed) {
    for (int g = 0; g < gpus; ++g) {
      cycle_.push_back(kEveryGpu);
      cycle_.push_back(g);
    }
    at_ = cycle_.size();
  }
  // kEveryGpu, or the GPU that runs alone.
  int next() {
    if (at_ == cycle_.size()) {
      std::shuffle(cycle_.begin(), cycle_.end(), rng_);
      at_ = 0;
    }
    return cycle_[at_++];
  }
  static constexpr int kEveryGpu = -1;

 private:
  std::vector<int> cycle_;
  size_t at_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace mtc::microbench
