#include "runner/measure/stopping.h"

namespace mtc::bench {

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "none";
    case StopReason::kNoiseTarget:
      return "noise_target";
    case StopReason::kMaxRounds:
      return "max_rounds";
    case StopReason::kTimeout:
      return "timeout";
    case StopReason::kMaxSamples:
      return "max_samples";
    case StopReason::kFixedCount:
      return "fixed_count";
    case StopReason::kInterrupted:
      return "interrupted";
  }
  return "none";
}

StopReason case_verdict(const StoppingParams& params, const CaseProgress& progress) {
  const bool minimums_met = progress.rounds >= params.min_rounds &&
                            progress.samples >= params.min_samples &&
                            progress.sample_time_s >= params.min_time_s;
  if (minimums_met && progress.noise <= params.noise_target) return StopReason::kNoiseTarget;
  // The limits win over the minimums: a case too slow for them still ends.
  if (progress.loop_time_s >= params.timeout_s) return StopReason::kTimeout;
  if (progress.samples >= params.max_samples) return StopReason::kMaxSamples;
  if (progress.rounds >= params.max_rounds) return StopReason::kMaxRounds;
  return StopReason::kNone;
}

bool round_complete(const StoppingParams& params, int64_t round_samples, double round_loop_s,
                    const CaseProgress& before_round) {
  if (before_round.loop_time_s + round_loop_s >= params.timeout_s) return round_samples >= 1;
  if (before_round.samples + round_samples >= params.max_samples) return true;
  return round_samples >= params.round_min_samples && round_loop_s >= params.round_time_s;
}

}  // namespace mtc::bench
