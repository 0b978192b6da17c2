#include "runner/measure/stopping.h"

#include "runner/stats/summary.h"

#include <algorithm>

namespace mtc::bench {

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kNone: return "none";
    case StopReason::kNoiseTarget: return "noise_target";
    case StopReason::kNoiseStable: return "noise_stable";
    case StopReason::kTimeout: return "timeout";
    case StopReason::kMaxSamples: return "max_samples";
    case StopReason::kFixedCount: return "fixed_count";
  }
  return "none";
}

StoppingRule::StoppingRule(StoppingParams params) : params_(params) {
  samples_.reserve(1024);
}

void StoppingRule::add(double sample_s) {
  samples_.push_back(sample_s);
  accumulated_s_ += sample_s;
}

StopReason StoppingRule::check(double loop_elapsed_s) {
  const int64_t n = samples();
  if (n >= params_.max_samples) return StopReason::kMaxSamples;
  // The timeout wins over the minimums: a case too slow for min_samples within the timeout
  // still ends.
  if (loop_elapsed_s >= params_.timeout_s) return StopReason::kTimeout;
  if (n < params_.min_samples || accumulated_s_ < params_.min_time_s) return StopReason::kNone;
  if (n < next_check_) return StopReason::kNone;
  next_check_ = n + std::max<int64_t>(1, n / 32);

  noise_ = relative_median_noise(samples_);
  history_.push_back({n, noise_});
  if (noise_ <= params_.noise_target) return StopReason::kNoiseTarget;
  if (stabilized()) return StopReason::kNoiseStable;
  return StopReason::kNone;
}

bool StoppingRule::stabilized() const {
  const Checkpoint& now = history_.back();
  if (now.samples < params_.stable_min_samples) return false;
  // The latest checkpoint with at most half of today's samples.
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
    if (2 * it->samples <= now.samples) {
      return now.noise >= (1.0 - params_.stable_drop) * it->noise;
    }
  }
  return false;
}

}  // namespace mtc::bench
