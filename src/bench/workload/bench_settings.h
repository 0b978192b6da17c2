// The config's optional "bench" object: how every case is measured. Its defaults live here and
// nowhere else: the runner's measuring structs (runner/measure/stopping.h, case_settings.h)
// start from them. A leaf header (no JSON, no ATen), so that the runner's pure code can
// include it.
#pragma once

#include <string>
#include <vector>

namespace mtc::bench {

struct BenchSettings {
  int warmup = 5;              // warm-up iterations per strategy
  int min_samples = 10;        // per case, over all rounds
  double min_time_s = 0.25;    // accumulated sample time per case, over all rounds
  double noise_target = 0.01;  // relative noise of the median at which rounds may stop
  double timeout_s = 15.0;     // loop time per case, over all rounds
  std::vector<std::string> patterns{"hot", "step"};
  int inputs = 8;          // step pattern: inputs in rotation (successive seeds)
  double gap_us = 2000.0;  // step pattern: idle gap before each sample
  int min_rounds = 5;
  int max_rounds = 20;
  double round_time_s = 0.05;           // loop time per case and round
  int processes = 3;                    // fresh processes sharing the rounds (--processes)
  std::vector<std::string> strategies;  // empty = all
  std::vector<int> devices;             // empty = device 0
  double overlap_us = 0.0;              // simulated caller work between start and get
  bool raw_samples = false;             // keep raw samples in the JSON report
};

}  // namespace mtc::bench
