// How each case is measured. Pure data, shared by the runner and the plan that fills it.
#pragma once

#include "runner/measure/stopping.h"

#include <cstdint>

namespace mtc::bench {

struct CaseSettings {
  int64_t warmup = 5;
  StoppingParams stopping;
  double overlap_s = 0.0;     // simulated caller work between start and finish
  bool raw_samples = false;
  int64_t fixed_samples = 0;  // > 0: exactly this many samples (--profile)
};

struct WorkloadSize {
  int64_t tensors = 0;
  int64_t bytes = 0;
};

}  // namespace mtc::bench
