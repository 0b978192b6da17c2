// How each case is measured. Pure data, shared by the runner and the plan that fills it.
#pragma once

#include "types.h"
#include "runner/measure/stopping.h"

#include <cstdint>
#include <vector>

namespace mtc::bench {

struct CaseSettings {
  int64_t warmup = 5;
  StoppingParams stopping;
  std::vector<Pattern> patterns{Pattern::kHot, Pattern::kStep};
  int64_t inputs = 8;         // step pattern: inputs in rotation
  double gap_s = 0.002;       // step pattern: idle gap before each sample
  double overlap_s = 0.0;     // simulated caller work between start and finish
  bool raw_samples = false;
  int64_t fixed_samples = 0;  // > 0: exactly this many samples in one round (--profile)
  uint64_t order_seed = 0;    // shuffles the strategies of each round
  int64_t round_cpus = 0;     // > 0: every round runs on this many CPUs drawn from the seed
  double interval_level = 0.95;
};

struct WorkloadSize {
  int64_t tensors = 0;
  int64_t bytes = 0;
};

}  // namespace mtc::bench
