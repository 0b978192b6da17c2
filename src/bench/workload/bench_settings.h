// The config's optional "bench" object: how every case is measured. Its defaults live here and
// nowhere else: the runner's measuring structs (runner/measure/stopping.h, case_settings.h)
// start from them, --help reads them (runner/cli/run_options.cpp), and a test holds the docs
// to them (tests/bench/documented_defaults_test.cpp). A leaf header (no JSON, no ATen), so
// that the runner's pure code can include it.
#pragma once

#include <cstdint>
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
  // What the caller does in the gap of the `step` pattern: "sleep" (step), "busy" (step-busy:
  // touching gap_touch_bytes, larger than the last-level cache) or "both" (each, two patterns).
  std::string gap_mode = "both";
  int64_t gap_touch_bytes = int64_t{32} << 20;
  int min_rounds = 5;
  int max_rounds = 20;
  double round_time_s = 0.05;           // loop time per case and round
  int processes = 3;                    // fresh processes sharing the rounds (--processes)
  std::vector<std::string> strategies;  // empty = all
  std::vector<int> devices;             // empty = device 0
  double overlap_us = 0.0;              // simulated caller work between start and get
  bool raw_samples = false;             // keep raw samples in the JSON report
};

// The accepted range of each setting, inclusive (but for a minimum marked `above_min`): the
// config's parser and the command line's checks read them here, and nowhere else says them
// (spec.schema.json repeats them for editors, held to these by a test). NaN is in no range.
template <typename T>
struct SettingBounds {
  T min;
  T max;
  bool above_min = false;  // the value must exceed min (a timeout of 0 would measure nothing)

  constexpr bool contains(T value) const {
    return (above_min ? value > min : value >= min) && value <= max;
  }
};
inline constexpr double kOneDaySeconds = 86400.0;
inline constexpr SettingBounds<int64_t> kWarmupBounds{0, 1'000'000};
inline constexpr SettingBounds<int64_t> kMinSamplesBounds{1, 10'000'000};
inline constexpr SettingBounds<double> kMinTimeBounds{0.0, kOneDaySeconds};
inline constexpr SettingBounds<double> kNoiseTargetBounds{0.0, 1.0};
inline constexpr SettingBounds<double> kTimeoutBounds{0.0, kOneDaySeconds, true};
inline constexpr SettingBounds<double> kOverlapUsBounds{0.0, kOneDaySeconds * 1e6};
inline constexpr SettingBounds<int64_t> kInputsBounds{1, 1024};
inline constexpr SettingBounds<double> kGapUsBounds{0.0, 1e7};
inline constexpr SettingBounds<int64_t> kGapTouchBytesBounds{64, int64_t{1} << 34};
inline constexpr SettingBounds<int64_t> kRoundsBounds{1, 10'000};
inline constexpr SettingBounds<double> kRoundTimeBounds{0.0, kOneDaySeconds};
inline constexpr SettingBounds<int64_t> kProcessesBounds{1, 64};

// The one rule between the round limits, as its message: empty when max_rounds >= min_rounds.
// Checked where a pair of limits is final: a config on its own (the loader, so `validate` sees
// it, as a ConfigError at the config's pointer) and the run's plan
// (runner/commands/make_run_plan.h, where the command line's limits meet the config's, as a
// UsageError).
inline std::string round_limits_error(int64_t min_rounds, int64_t max_rounds) {
  if (max_rounds >= min_rounds) return {};
  return "max_rounds (" + std::to_string(max_rounds) + ") is below min_rounds (" +
         std::to_string(min_rounds) + ")";
}

}  // namespace mtc::bench
