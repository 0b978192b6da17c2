// When to stop measuring. Cases are measured in rounds (see stats/rounds.h for why); two rules:
//
// Inside a round, a case samples until it has round_min_samples samples and round_time_s of
// loop time (so a 5 ms case and a 50 us case get the same share of the round's wall time).
//
// After each round, every case of the block (one direction and pattern) is asked whether it
// wants more. A case is satisfied once it has min_rounds rounds, min_samples samples and
// min_time_s of accumulated sample time, and its reported noise (the larger of the within- and
// between-round relative standard errors of the median) is at most noise_target. Rounds go on
// while some case is unsatisfied, up to max_rounds, and end early when a case has spent
// timeout_s of loop time (a slow case must not hold the run) or max_samples samples.
#pragma once

#include <cstdint>
#include <string_view>

#include "workload/bench_settings.h"

namespace mtc::bench {

// What a config can set starts from the config's defaults (workload/bench_settings.h), so that
// rules built without a config stop as a run without a "bench" object does; the rest have
// their defaults here.
struct StoppingParams {
  int64_t min_rounds = BenchSettings{}.min_rounds;
  int64_t max_rounds = BenchSettings{}.max_rounds;
  double round_time_s = BenchSettings{}.round_time_s;  // loop time per case and round
  int64_t round_min_samples = 3;
  int64_t min_samples = BenchSettings{}.min_samples;  // per case, over all rounds
  // Accumulated sample (wall) time per case, over all rounds.
  double min_time_s = BenchSettings{}.min_time_s;
  double noise_target = BenchSettings{}.noise_target;  // reported relative noise of the median
  double timeout_s = BenchSettings{}.timeout_s;        // loop time per case, over all rounds
  int64_t max_samples = 1'000'000;                     // a memory guard for sub-microsecond cases
};

// kInterrupted: SIGINT or SIGTERM ended the rounds before a rule did.
enum class StopReason {
  kNone,
  kNoiseTarget,
  kMaxRounds,
  kTimeout,
  kMaxSamples,
  kFixedCount,
  kInterrupted
};

std::string_view to_string(StopReason reason);

// Where one case stands after a round.
struct CaseProgress {
  int64_t rounds = 0;
  int64_t samples = 0;
  double sample_time_s = 0.0;  // accumulated wall time of its samples
  double loop_time_s = 0.0;    // time spent in its measuring loops, gaps included
  double noise = 1.0;          // reported relative noise of the median
};

// kNone while the case wants more rounds; kNoiseTarget when satisfied; kTimeout, kMaxSamples or
// kMaxRounds when it must stop unsatisfied.
StopReason case_verdict(const StoppingParams& params, const CaseProgress& progress);

// Whether a round may end for a case: `round_samples` samples and `round_loop_s` seconds into it.
bool round_complete(const StoppingParams& params, int64_t round_samples, double round_loop_s,
                    const CaseProgress& before_round);

}  // namespace mtc::bench
