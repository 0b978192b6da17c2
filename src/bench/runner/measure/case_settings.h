// How each case is measured. Pure data, shared by the runner and the plan that fills it.
#pragma once

#include <cstdint>
#include <vector>

#include "runner/measure/stopping.h"
#include "types.h"

namespace mtc::bench {

// What a config can set starts from the config's defaults (workload/bench_settings.h), as in
// stopping.h; the plan of a run without a "bench" object equals CaseSettings{} (run_plan_test).
struct CaseSettings {
  int64_t warmup = BenchSettings{}.warmup;
  StoppingParams stopping;
  // BenchSettings' pattern names, as patterns, `step` with the gaps of its gap_mode ("both").
  std::vector<Pattern> patterns{Pattern::kHot, Pattern::kStep, Pattern::kStepBusy};
  int64_t inputs = BenchSettings{}.inputs;       // step patterns: inputs in rotation
  double gap_s = BenchSettings{}.gap_us * 1e-6;  // step patterns: idle gap before each sample
  int64_t gap_touch_bytes = BenchSettings{}.gap_touch_bytes;  // step-busy: the caller's buffer
  double overlap_s = BenchSettings{}.overlap_us * 1e-6;  // simulated caller work, start to finish
  bool raw_samples = BenchSettings{}.raw_samples;
  int64_t fixed_samples = 0;  // > 0: exactly this many samples in one round (--profile)
  uint64_t order_seed = 0;    // shuffles the strategies of each round
  int64_t round_cpus = 0;     // > 0: every round runs on this many CPUs drawn from the seed
  double interval_level = 0.95;
};

// --round-cpus: 0 (off) up to as many CPUs as Linux allows a machine.
inline constexpr SettingBounds<int64_t> kRoundCpusBounds{0, 4096};

struct WorkloadSize {
  int64_t tensors = 0;
  int64_t bytes = 0;
};

}  // namespace mtc::bench
