// What the measuring tests share: running one case's rounds alone, outside a block.
#pragma once

#include "runner/measure/case_runner.h"

namespace mtc::bench::testing_support {

// Measures `rounds` rounds of one case alone, as the runner does for each member of a block.
inline void measure_rounds(CaseRunner& runner, const CaseSettings& settings, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    MeasureGroup group(1);
    runner.measure_round(settings, group, 0, nullptr);
  }
}

}  // namespace mtc::bench::testing_support
