// When to stop sampling one case: an adaptive rule modelled on nvbench's "stdrel" criterion.
//
// Sampling always continues until both minimums are met (min_samples samples and min_time_s of
// accumulated sample time). After that it stops at the first of:
//   noise_target  the relative noise of the median (relative_median_noise) is under the target;
//   noise_stable  the noise stopped falling: over the last doubling of the sample count it fell
//                 by less than stable_drop (a stationary process falls by 29%, 1 - 1/sqrt(2)),
//                 so more samples would not make the median better known;
//   timeout       timeout_s of wall time in the measuring loop (sample time plus overhead);
//   max_samples   a memory guard for sub-microsecond cases.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace mtc::bench {

// Every default of the stopping rule lives here.
struct StoppingParams {
  int64_t min_samples = 10;
  double min_time_s = 0.5;      // of accumulated sample (wall) time, not loop time
  double noise_target = 0.005;  // relative noise of the median, 0.005 = 0.5 %
  double timeout_s = 15.0;      // of loop time, measured by the caller
  double stable_drop = 0.05;
  // Noise estimates from fewer samples are too coarse to call "stable".
  int64_t stable_min_samples = 64;
  int64_t max_samples = 1'000'000;
};

enum class StopReason { kNone, kNoiseTarget, kNoiseStable, kTimeout, kMaxSamples, kFixedCount };

std::string_view to_string(StopReason reason);

class StoppingRule {
 public:
  explicit StoppingRule(StoppingParams params = {});

  // Records one sample's wall time in seconds.
  void add(double sample_s);
  // Whether to stop now, `loop_elapsed_s` after the measuring loop began. Evaluates the noise
  // only at checkpoints spaced ~3% of the sample count apart, so the rule costs O(n) amortized
  // per doubling instead of O(n) per sample.
  StopReason check(double loop_elapsed_s);

  int64_t samples() const { return static_cast<int64_t>(samples_.size()); }
  double accumulated_s() const { return accumulated_s_; }
  // The last evaluated noise (1 until the first checkpoint).
  double noise() const { return noise_; }
  // Whether the noise has been evaluated yet (the minimums are met).
  bool evaluated() const { return !history_.empty(); }
  const StoppingParams& params() const { return params_; }

 private:
  struct Checkpoint {
    int64_t samples;
    double noise;
  };
  bool stabilized() const;

  StoppingParams params_;
  std::vector<double> samples_;
  double accumulated_s_ = 0.0;
  double noise_ = 1.0;
  int64_t next_check_ = 0;
  std::vector<Checkpoint> history_;
};

}  // namespace mtc::bench
