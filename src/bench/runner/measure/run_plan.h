// What one run does: directions, strategies, GPUs and how each case is measured.
#pragma once

#include "runner/measure/case_settings.h"
#include "types.h"
#include "runner/strategies/engine_overrides.h"

#include <map>
#include <string>
#include <vector>

namespace mtc::bench {

struct RunPlan {
  std::vector<Direction> directions;
  std::vector<std::string> strategies;  // catalog names, in catalog order
  std::vector<int> devices;             // GPUs driven at once; empty without a GPU
  int cuda_device_count = 0;
  CaseSettings settings;
  EngineOverrides engine;               // what the `engine` variants start from
  std::map<std::string, std::string> engine_libraries;  // --engine-lib: label -> path
  bool profile = false;                 // settings.fixed_samples is then the sample count
  int process_index = 0;                // which of --processes N measured (labels rounds)
  int processes = 1;                    // --processes
  bool quick = false;                   // --quick
};

}  // namespace mtc::bench
