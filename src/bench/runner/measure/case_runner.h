// One case: one strategy copying prepared inputs along one route in one pattern, on the
// calling thread. Its phases (prepare, warm-up, verify, rounds) are separate calls so the
// runner can interleave the rounds of every strategy and put cudaProfilerStart/Stop around
// just the measuring in --profile mode.
#pragma once

#include <ATen/cuda/CUDAEvent.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "report/report.h"
#include "runner/measure/case_settings.h"
#include "runner/measure/clock.h"
#include "runner/measure/measure_group.h"
#include "runner/measure/progress.h"
#include "runner/measure/stopping.h"
#include "runner/strategies/strategy.h"
#include "stats/rounds.h"

namespace mtc::bench {

class CaseRunner {
 public:
  // inputs: the hot pattern copies inputs[0]; the step pattern rotates through all of them.
  // device: the GPU this case's thread drives (-1 without one), for the report.
  CaseRunner(std::unique_ptr<Strategy> strategy, Route route, std::vector<c10::IValue> inputs,
             Pattern pattern, int device);

  void prepare();
  // `count` untimed copies, fewer once SIGINT or SIGTERM arrived (the report says how many).
  void warmup(int64_t count);
  // Copies every input the pattern uses once more and checks each output; a mismatch marks
  // the case verification_failed.
  void verify();
  // One round: an untimed sample (the strategies before it in the round left caches and
  // workers in their state, not this one's), then samples until this case's round is complete
  // and every other member of `group` is done. Never leaves the group waiting: on failure it
  // still marks itself done. `process` labels the round in the report.
  void measure_round(const CaseSettings& settings, MeasureGroup& group, int process,
                     Progress* progress);

  // A round in steps, for a caller that interleaves cases sample by sample (paired_round.h):
  // begin_round, then take_round_sample until the case and its partners may end the round,
  // then end_round. Errors escape to the caller, which fails the case.
  void begin_round(const CaseSettings& settings, int process);
  // The idle gap (step pattern), then one timed sample. The round's loop time since
  // `round_start` is split evenly between the `sharers` cases measured together. Returns whether
  // this case's round may end (it stays true once it was).
  bool take_round_sample(const CaseSettings& settings, SteadyClock::time_point round_start,
                         int sharers);
  void report_progress(const CaseSettings& settings, Progress& progress) const;
  void end_round();
  // For a pair measured sample by sample (paired_round.h): the samples taken so far, the wall
  // time of the latest, and the round's paired figure against `baseline` (PairedSteps),
  // recorded after end_round for the round just ended.
  int64_t samples_taken() const { return static_cast<int64_t>(wall_.size()); }
  double latest_wall() const { return wall_.empty() ? 0.0 : wall_.back(); }
  void record_paired_round(std::string baseline, std::optional<double> median_log_ratio);
  std::string_view strategy_name() const;

  // Where the case stands, with its reported noise, for the stopping rule.
  CaseProgress progress() const;
  void set_stop_reason(StopReason reason) { stop_reason_ = reason; }

  // Marks the case failed (a runtime or CUDA error in one of its phases).
  void fail(std::string reason);
  bool ok() const { return status_ == EntryStatus::kOk; }

  Entry entry(const CaseSettings& settings, const WorkloadSize& size) const;

 private:
  // The timed unit: start, optional caller work, finish, device synchronize; in the step
  // pattern also the release of the previous output.
  struct Sample {
    double wall;
    double blocked;
    double gpu;  // 0 without a GPU timer
    double cpu;
    double exposed;
  };
  Sample take_sample(int64_t index, double overlap_s);
  const c10::IValue& next_input();
  c10::IValue run_untimed(const c10::IValue& input);
  void synchronize_devices() const;
  void record(const Sample& s, double overlap_s);

  std::unique_ptr<Strategy> strategy_;
  Route route_;
  std::vector<c10::IValue> inputs_;
  Pattern pattern_;
  int device_;
  size_t next_input_ = 0;
  c10::IValue previous_output_;  // step pattern: released inside the next sample
  // CUDA events on the current stream of the GPU side of the route; absent for h2h.
  std::optional<c10::DeviceIndex> timer_device_;
  at::cuda::CUDAEvent gpu_start_{cudaEventDefault};
  at::cuda::CUDAEvent gpu_stop_{cudaEventDefault};

  EntryStatus status_ = EntryStatus::kOk;
  std::string reason_;
  std::optional<bool> verified_;
  int64_t warmup_done_ = 0;
  StopReason stop_reason_ = StopReason::kNone;
  double loop_time_s_ = 0.0;
  // The round in progress.
  CaseProgress round_start_;
  int64_t round_samples_ = 0;
  double round_loop_s_ = 0.0;
  bool round_done_ = false;
  double sample_time_s_ = 0.0;
  std::vector<Round> rounds_;          // wall times, per round
  std::optional<PairedSteps> paired_;  // an A/B pair's candidate: one figure per round
  std::vector<int64_t> round_of_sample_;
  std::vector<double> wall_, blocked_, gpu_, cpu_, exposed_;
  // The engine's own per-step timings of each sample (CopyStats), for its rows only.
  std::vector<double> queued_us_, traverse_us_, submit_us_, outputs_us_;
};

}  // namespace mtc::bench
